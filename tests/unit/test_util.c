#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"

static char dir[] = "/tmp/tg-util-XXXXXX";

static void setup(void) { cr_assert_not_null(mkdtemp(dir)); }
static void teardown(void) { remove_tree(dir, NULL); }

TestSuite(util, .init = setup, .fini = teardown);

Test(util, container_ids) {
  cr_assert(container_id_is_valid("abc"));
  cr_assert(container_id_is_valid("a.b_c-1"));
  cr_assert_not(container_id_is_valid(""));
  cr_assert_not(container_id_is_valid(".hidden"));
  cr_assert_not(container_id_is_valid("../etc"));
  cr_assert_not(container_id_is_valid("a/b"));
  char long_id[130];
  memset(long_id, 'a', 129);
  long_id[129] = '\0';
  cr_assert_not(container_id_is_valid(long_id));
  long_id[128] = '\0';
  cr_assert(container_id_is_valid(long_id));
}

Test(util, untrusted_read_refuses_symlink_fifo_dir_and_oversize) {
  int dfd = open(dir, O_RDONLY | O_DIRECTORY);
  cr_assert_geq(dfd, 0);
  cr_assert_eq(write_file_atomic(dfd, "ok", "hello", 5, 0600, false, NULL), 0);
  cr_assert_eq(symlinkat("/etc/passwd", dfd, "link"), 0);
  cr_assert_eq(mkfifoat(dfd, "fifo", 0600), 0);
  cr_assert_eq(mkdirat(dfd, "sub", 0700), 0);
  char *buf = NULL;
  size_t len = 0;
  tg_error *err = NULL;
  cr_assert_eq(read_file_untrusted(dfd, "ok", 16, &buf, &len, &err), 0);
  cr_assert_str_eq(buf, "hello");
  free(buf);
  cr_assert_lt(read_file_untrusted(dfd, "link", 16, &buf, &len, &err), 0);
  cr_assert_eq(errno, ELOOP);
  tg_error_free(&err);
  cr_assert_lt(read_file_untrusted(dfd, "fifo", 16, &buf, &len, &err), 0);
  cr_assert_eq(errno, EINVAL);
  tg_error_free(&err);
  cr_assert_lt(read_file_untrusted(dfd, "sub", 16, &buf, &len, &err), 0);
  tg_error_free(&err);
  cr_assert_lt(read_file_untrusted(dfd, "ok", 4, &buf, &len, &err), 0);
  cr_assert_eq(errno, EFBIG);
  tg_error_free(&err);
  close(dfd);
}

Test(util, error_wrap_prefixes_context) {
  tg_error *err = NULL;
  cr_assert_eq(tg_error_set(&err, ENOENT, "open %s", "x"), -1);
  tg_error_wrap(&err, "loading policy");
  cr_assert_str_eq(err->msg, "loading policy: open x: no such entry (ENOENT)");
  tg_error_free(&err);
  cr_assert_null(err);
}

/* rfc3339_time formats by hand: it must write what strftime + snprintf
 * wrote, for ordinary times, leap days, far years and the edges. */
/* rfc3339_time must print what strftime plus snprintf printed before it. */
static void assert_rfc3339_like_strftime(const struct timespec *ts) {
  struct tm tm;
  gmtime_r(&ts->tv_sec, &tm);
  char base[64], want[80], got[80];
  strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(want, sizeof want, "%s.%09ldZ", base, ts->tv_nsec);
  rfc3339_time(ts, got, sizeof got);
  cr_assert_str_eq(got, want);
}

Test(util, rfc3339_time_matches_strftime) {
  time_t secs[] = {0, 951782400 /* 2000-02-29 */, 1798838470, 2147483647, 4102444799,
                   253402300799 /* 9999-12-31T23:59:59 */, 253402300800 /* year 10000 */};
  long nsecs[] = {0, 1, 999999999, 123456789};
  for (size_t i = 0; i < sizeof secs / sizeof *secs; i++)
    for (size_t j = 0; j < sizeof nsecs / sizeof *nsecs; j++) {
      struct timespec ts = {.tv_sec = secs[i], .tv_nsec = nsecs[j]};
      assert_rfc3339_like_strftime(&ts);
    }
  unsigned seed = 7;
  for (int k = 0; k < 10000; k++) {
    seed = seed * 1103515245u + 12345u;
    struct timespec ts = {.tv_sec = (time_t)(seed % 4000000000u), .tv_nsec = (long)(seed % 1000000000u)};
    assert_rfc3339_like_strftime(&ts);
  }
  char now[40];
  rfc3339_now(now, sizeof now);
  cr_assert_eq(strlen(now), 30);
}

/* podman classifies a runtime's error by its text: "no such file or
 * directory" becomes "command not found" (127), "permission denied" and
 * "operation not permitted" become 126.  tollgate's own causes must not
 * end in those words, whatever the errno. */
Test(util, error_causes_avoid_the_words_podman_misreads) {
  static const int causes[] = {ENOENT, EACCES, EPERM, ENOTDIR, ELOOP};
  static const char *const misread[] = {"no such file or directory", "permission denied",
                                        "operation not permitted", "executable file not found"};
  for (size_t i = 0; i < sizeof causes / sizeof causes[0]; i++) {
    tg_error *err = NULL;
    tg_error_set(&err, causes[i], "policy %s cannot be read", "/etc/tollgate/policies/x.json");
    for (size_t k = 0; k < sizeof misread / sizeof misread[0]; k++)
      cr_expect_null(strcasestr(err->msg, misread[k]), "errno %d: \"%s\" holds \"%s\"", causes[i], err->msg, misread[k]);
    tg_error_free(&err);
  }
}
