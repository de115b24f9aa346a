/* Following `runc run`'s pid file to a verified pidfd (run_follow.h says
 * why each check is there). */
#include "shim/lifecycle/run_follow.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"

/* Digits of a non-negative number at *p (up to end), advancing *p.  -1
 * when there are none or it overflows. */
static int parse_ull(const char **p, const char *end, unsigned long long *v) {
  const char *s = *p;
  unsigned long long n = 0;
  if (s >= end || *s < '0' || *s > '9')
    return -1;
  for (; s < end && *s >= '0' && *s <= '9'; s++) {
    unsigned d = (unsigned)(*s - '0');
    if (n > (ULLONG_MAX - d) / 10)
      return -1;
    n = n * 10 + d;
  }
  *p = s;
  *v = n;
  return 0;
}

int run_follow_parse_stat(const char *buf, size_t len, struct proc_stat_fields *out) {
  /* "pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt
   * majflt cmajflt utime stime cutime cstime priority nice num_threads
   * itrealvalue starttime ...": comm is the process's own choice (prctl
   * PR_SET_NAME), so it is skipped to its last ')', never parsed. */
  const char *close = NULL;
  for (size_t i = 0; i < len; i++)
    if (buf[i] == ')')
      close = buf + i;
  if (close == NULL)
    return -1;
  const char *p = close + 1, *end = buf + len;
  /* Field 3 (state) is the first after comm; ppid is field 4 and
   * starttime field 22. */
  unsigned long long ppid = 0, start = 0;
  for (int field = 3; field <= 22; field++) {
    if (p >= end || *p != ' ')
      return -1;
    p++;
    if (field == 3) {
      if (p >= end || *p == ' ')
        return -1;
      p++; /* one letter */
      continue;
    }
    if (field == 4 || field == 22) {
      if (parse_ull(&p, end, field == 4 ? &ppid : &start) < 0)
        return -1;
      continue;
    }
    /* Other fields may be negative (priority, nice, cutime...). */
    if (p < end && *p == '-')
      p++;
    unsigned long long skip;
    if (parse_ull(&p, end, &skip) < 0)
      return -1;
  }
  if (ppid > INT_MAX)
    return -1;
  out->ppid = (pid_t)ppid;
  out->start = start;
  return 0;
}

int run_follow_parse_pid(const char *buf, size_t len, pid_t *pid) {
  if (len > 0 && buf[len - 1] == '\n')
    len--;
  const char *p = buf, *end = buf + len;
  unsigned long long v = 0;
  if (parse_ull(&p, end, &v) < 0 || p != end || v <= 1 || v > INT_MAX)
    return -1;
  *pid = (pid_t)v;
  return 0;
}

bool run_follow_trusts(const struct proc_stat_fields *init, pid_t parent,
                       unsigned long long runner_start) {
  /* The parent test is what makes the pid unforgeable: parent is alive
   * (tollgate) or tollgate's unreaped child (runc run), so its pid is its
   * own, and only its children have it as their parent: processes runc
   * made, or (tollgate, a subreaper) re-parented descendants.  The start
   * time rules out a child older than this runc run. */
  return parent > 1 && init->ppid == parent && init->start >= runner_start;
}

int run_follow_read_stat(pid_t pid, struct proc_stat_fields *out) {
  char path[32];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return -1;
  char buf[1024];
  ssize_t n;
  do
    n = read(fd, buf, sizeof buf);
  while (n < 0 && errno == EINTR);
  if (n <= 0)
    return -1;
  if (run_follow_parse_stat(buf, (size_t)n, out) < 0) {
    errno = EINVAL;
    return -1;
  }
  return 0;
}

int run_follow_try(int dir_fd, const char *name, pid_t parent, unsigned long long runner_start,
                   int *pidfd, pid_t *pid_out) {
  *pidfd = -1;
  /* O_NOFOLLOW: a symlink is refused, not followed; O_NONBLOCK: opening a
   * FIFO returns at once instead of waiting for a writer.  The state
   * directory is root's and 0700, so neither should be there; if one is,
   * it is not runc's pid file. */
  cleanup_close int fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    return 0;
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_size > 32)
    return 0;
  /* runc writes the file under another name and renames it into place,
   * so a reader sees all of it or nothing; a cut text is refused anyway
   * and the next attempt reads it again. */
  char buf[33];
  ssize_t n;
  do
    n = read(fd, buf, sizeof buf);
  while (n < 0 && errno == EINTR);
  pid_t pid = 0;
  if (n <= 0 || run_follow_parse_pid(buf, (size_t)n, &pid) < 0)
    return 0;
  cleanup_close int pfd = pidfd_open_pid(pid);
  if (pfd < 0)
    return 0; /* gone already: nothing to hold */
  struct proc_stat_fields f;
  if (run_follow_read_stat(pid, &f) < 0 || !run_follow_trusts(&f, parent, runner_start))
    return 0;
  /* Still unreaped after the read: the pid was not reused in between, so
   * what /proc said is what the pidfd names. */
  if (pidfd_signal(pfd, 0) < 0)
    return 0;
  *pidfd = pfd;
  *pid_out = pid;
  pfd = -1;
  return 1;
}
