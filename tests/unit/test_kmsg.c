/* The kernel's log since a moment (base/kmsg.h), against the real
 * /dev/kmsg: a line written before the mark is not seen, one written
 * after it is, whole and without its newline, and each record is seen
 * once.  Skipped where /dev/kmsg cannot be written (not root). */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/kmsg.h"

/* One line, newline-terminated: a record without its newline stays open
 * for a continuation, and /dev/kmsg shows it only once another record
 * closes it (the kernel's own lines read here all end with one). */
static int log_line(const char *text) {
  char line[256];
  int len = snprintf(line, sizeof line, "%s\n", text);
  int fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = write(fd, line, (size_t)len);
  close(fd);
  return n == len ? 0 : -1;
}

struct count {
  const char *text;
  int n;
};

static void count_equal(const char *msg, void *arg) {
  struct count *c = arg;
  if (strcmp(msg, c->text) == 0)
    c->n++;
}

static int seen_since(int fd, const char *text) {
  struct count c = {.text = text};
  kmsg_each_since(fd, count_equal, &c);
  return c.n;
}

Test(kmsg, only_what_came_after_the_mark) {
  char before[128], after[128];
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  snprintf(before, sizeof before, "tollgate-test-kmsg %d.%ld before", (int)getpid(), ts.tv_nsec);
  snprintf(after, sizeof after, "tollgate-test-kmsg %d.%ld after", (int)getpid(), ts.tv_nsec);
  if (log_line(before) < 0)
    cr_skip_test("/dev/kmsg cannot be written here (not root)");
  int fd = kmsg_open_at_end();
  cr_assert_geq(fd, 0);
  cr_assert_eq(seen_since(fd, before), 0, "logged before the mark");
  cr_assert_eq(log_line(after), 0);
  cr_assert_eq(log_line(after), 0);
  cr_assert_eq(seen_since(fd, after), 2, "each record, without its newline");
  cr_assert_eq(seen_since(fd, after), 0, "a record is seen once");
  close(fd);
  kmsg_each_since(-1, count_equal, NULL); /* no log: nothing is called */
}
