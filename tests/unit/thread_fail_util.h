/* For the suites that check how a thread that cannot start is reported
 * (header-only: each suite is its own binary).
 *
 * pthread_create returns its error and leaves errno alone, so a message
 * built from errno names whatever an earlier call left there.  These
 * helpers make pthread_create really fail, in a forked child: the default
 * thread stack is set to 1 GiB and the address space to what the child
 * uses now plus 256 MiB, so every allocation the code under test makes
 * still fits but no new thread's stack does.  glibc then returns EAGAIN
 * from pthread_create while the failed mmap leaves errno at ENOMEM. */
#ifndef TOLLGATE_TEST_THREAD_FAIL_UTIL_H
#define TOLLGATE_TEST_THREAD_FAIL_UTIL_H

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/error.h"
#include "base/util.h"

static void *thread_fail_nothing(void *arg) { return arg; }

/* Make every later pthread_create in this process fail; only in a child
 * that exits afterwards (the limits stay).  Returns the error a
 * pthread_create now returns, or 0 when it still starts threads. */
static inline int threads_cannot_start(void) {
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0 || pthread_attr_setstacksize(&attr, 1UL << 30) != 0 ||
      pthread_setattr_default_np(&attr) != 0)
    return 0;
  pthread_attr_destroy(&attr);
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long pages = 0;
  if (f == NULL)
    return 0;
  int n = fscanf(f, "%lu", &pages);
  fclose(f);
  if (n != 1)
    return 0;
  struct rlimit rl = {.rlim_cur = pages * (unsigned long)sysconf(_SC_PAGESIZE) + (256UL << 20),
                      .rlim_max = RLIM_INFINITY};
  if (setrlimit(RLIMIT_AS, &rl) != 0)
    return 0;
  pthread_t t;
  int r = pthread_create(&t, NULL, thread_fail_nothing, NULL);
  if (r == 0)
    pthread_join(t, NULL);
  return r;
}

/* What a child that could start no thread saw: the error pthread_create
 * returned there, and what the code under test returned and reported. */
struct thread_fail_report {
  int real;   /* 0: pthread_create could not be made to fail */
  int ret;
  int errnum; /* -1: no error was set */
  char msg[512];
};

/* Run fn (0, or -1 with *err) in a forked child after
 * threads_cannot_start() and bring back what happened. */
static inline struct thread_fail_report thread_fail_run(int (*fn)(tg_error **err)) {
  struct thread_fail_report rep = {0};
  int p[2];
  cr_assert_eq(pipe(p), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    close(p[0]);
    struct thread_fail_report r = {.real = threads_cannot_start(), .errnum = -1};
    tg_error *err = NULL;
    if (r.real != 0)
      r.ret = fn(&err);
    if (err) {
      r.errnum = err->errnum;
      snprintf(r.msg, sizeof r.msg, "%s", err->msg);
    }
    _exit(write(p[1], &r, sizeof r) == (ssize_t)sizeof r ? 0 : 1);
  }
  close(p[1]);
  ssize_t n = read(p[0], &rep, sizeof rep);
  close(p[0]);
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(n == (ssize_t)sizeof rep && WIFEXITED(status) && WEXITSTATUS(status) == 0,
            "the child died before it reported (status %#x)", status);
  cr_assert_neq(rep.real, 0, "pthread_create could not be made to fail here");
  return rep;
}

/* The code under test failed and its message names the error that
 * pthread_create returned. */
static inline void thread_fail_assert_named(const struct thread_fail_report *rep) {
  cr_assert_eq(rep->ret, -1, "it did not fail although no thread could start");
  cr_assert_eq(rep->errnum, rep->real, "it reported error %d, pthread_create returned %d (%s): %s",
               rep->errnum, rep->real, strerror(rep->real), rep->msg);
  cr_assert(strstr(rep->msg, strerror(rep->real)) != NULL, "the message does not name %s: %s",
            strerror(rep->real), rep->msg);
}

#endif
