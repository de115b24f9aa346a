/* The sidecar's heartbeat thread; see heartbeat.h. */
#include "bridge/heartbeat.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"

static void *beat(void *arg) {
  int fd = (int)(intptr_t)arg;
  for (;;) {
    /* mtime = now: the clients compare successive mtimes with their own
     * clock, so the host's and the sandbox's clocks need not agree. */
    futimens(fd, NULL);
    struct timespec ts = {BRIDGE_HEARTBEAT_PERIOD_MS / 1000,
                          (BRIDGE_HEARTBEAT_PERIOD_MS % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
      ;
  }
  return NULL;
}

int bridge_heartbeat_start(int area_fd, tg_error **err) {
  /* The area's root is ours (host root, 0755, read-only in the
   * container): nothing there was planted, but O_NOFOLLOW all the same. */
  int fd = openat(area_fd, BRIDGE_HEARTBEAT_NAME,
                  O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0)
    return tg_error_set(err, errno, "bridge: create the heartbeat file %s",
                        BRIDGE_HEARTBEAT_NAME);
  pthread_t t;
  if (!thread_start_masked(&t, beat, (void *)(intptr_t)fd)) {
    int e = errno; /* pthread_create's error (thread_start_masked) */
    close(fd);
    return tg_error_set(err, e, "bridge: start the heartbeat thread");
  }
  pthread_detach(t);
  return 0;
}
