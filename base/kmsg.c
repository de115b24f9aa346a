/* The kernel's log since a moment: base/kmsg.h. */
#include "base/kmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

int kmsg_open_at_end(void) {
  int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return -1;
  /* SEEK_END on /dev/kmsg: the next read is the next record logged. */
  if (lseek(fd, 0, SEEK_END) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

void kmsg_each_since(int fd, void (*seen)(const char *msg, void *ctx), void *ctx) {
  if (fd < 0)
    return;
  /* One record per read: "PRIORITY,SEQ,USEC,FLAGS;MESSAGE\n", then any
   * continuation lines (" KEY=VALUE") of the record's dictionary. */
  char rec[8192];
  for (int i = 0; i < 10000; i++) {
    ssize_t n = read(fd, rec, sizeof rec - 1);
    if (n < 0 && (errno == EPIPE || errno == EINTR))
      continue; /* EPIPE: overwritten before it was read; the next read is the oldest left */
    if (n <= 0)
      break; /* EAGAIN: nothing more; EINVAL: a record larger than rec */
    rec[n] = '\0';
    char *msg = strchr(rec, ';');
    if (msg == NULL)
      continue;
    msg++;
    msg[strcspn(msg, "\n")] = '\0';
    seen(msg, ctx);
  }
}
