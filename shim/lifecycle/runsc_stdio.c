#include "shim/lifecycle/runsc_stdio.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static void append_if_at_end(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || (flags & O_APPEND) != 0 || (flags & O_ACCMODE) == O_RDONLY)
    return;
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
    return;
  off_t at = lseek(fd, 0, SEEK_CUR);
  if (at < 0 || at != st.st_size)
    return;
  /* A failure leaves the description as it was: runsc's own behaviour. */
  (void)fcntl(fd, F_SETFL, flags | O_APPEND);
}

void runsc_stdio_append(void) {
  append_if_at_end(STDOUT_FILENO);
  append_if_at_end(STDERR_FILENO);
}
