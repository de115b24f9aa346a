/* Fallback client side of the bridge protocol, used only until the bridge
 * branch ships a linkable client (see client_call.h).  Follows the protocol
 * summary: random 128-bit id, req/<id>.json by temp file and rename, then the
 * req/<id>.done marker; poll resp/<id>.done with adaptive back-off (inotify
 * inside gVisor does not see host writes), read resp/<id>.json, remove both.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench/client_call.h"

#define RESP_MAX (1024 * 1024)
#define TIMEOUT_NS (30ULL * 1000000000ULL)

static unsigned long long mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

static int write_file(const char *path, const char *data, size_t len) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return -errno;
  size_t off = 0;
  while (off < len) {
    ssize_t w = write(fd, data + off, len - off);
    if (w < 0) {
      int e = errno;
      close(fd);
      return -e;
    }
    off += (size_t)w;
  }
  return close(fd) < 0 ? -errno : 0;
}

int bench_client_call(const char *dir, const char *tool, const char *args, char **resp) {
  *resp = NULL;
  unsigned char rnd[16];
  if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd)
    return -EIO;
  char id[33];
  for (int i = 0; i < 16; i++)
    snprintf(id + 2 * i, 3, "%02x", rnd[i]);

  char tmp[PATH_MAX], body_path[PATH_MAX], marker[PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s/req/.%s.tmp", dir, id);
  snprintf(body_path, sizeof body_path, "%s/req/%s.json", dir, id);
  snprintf(marker, sizeof marker, "%s/req/%s.done", dir, id);
  size_t cap = strlen(tool) + strlen(args) + 64;
  char *body = malloc(cap);
  if (!body)
    return -ENOMEM;
  int len = snprintf(body, cap, "{\"v\":1,\"tool\":\"%s\",\"args\":%s}", tool, args);
  int r = write_file(tmp, body, (size_t)len);
  free(body);
  if (r < 0)
    return r;
  if (rename(tmp, body_path) < 0)
    return -errno;
  if ((r = write_file(marker, "", 0)) < 0)
    return r;

  snprintf(body_path, sizeof body_path, "%s/resp/%s.json", dir, id);
  snprintf(marker, sizeof marker, "%s/resp/%s.done", dir, id);
  unsigned long long start = mono_ns();
  long sleep_ns = 0;
  /* Adaptive back-off: a few yields first (the answer is often there within
   * tens of microseconds), then sleeps doubling from 10 µs to 1 ms. */
  for (int polls = 0; access(marker, F_OK) != 0; polls++) {
    if (mono_ns() - start > TIMEOUT_NS)
      return -ETIMEDOUT;
    if (polls < 8) {
      sched_yield();
      continue;
    }
    sleep_ns = sleep_ns ? sleep_ns * 2 : 10000;
    if (sleep_ns > 1000000)
      sleep_ns = 1000000;
    struct timespec ts = {0, sleep_ns};
    nanosleep(&ts, NULL);
  }
  int fd = open(body_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return -errno;
  char *buf = malloc(RESP_MAX + 1);
  size_t got = 0;
  ssize_t n;
  while (got < RESP_MAX && (n = read(fd, buf + got, RESP_MAX - got)) > 0)
    got += (size_t)n;
  close(fd);
  buf[got] = '\0';
  unlink(body_path);
  unlink(marker);
  *resp = buf;
  return 0;
}
