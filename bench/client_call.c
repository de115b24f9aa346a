/* The client side of one bridge call, step for step as the shipped static
 * client (bridge/client/tollgate-call.c, call_once) takes it: a random
 * 128-bit id, req/<id>.json written with O_EXCL, then the req/<id>.done
 * marker; resp/<id>.done polled with fstatat on the directory fd (three
 * immediate checks, then sleeps growing by half from 5 us to 2 ms and never
 * shorter than twice a check, timer slack 1 ns); resp/<id>.json read into
 * one buffer sized by fstat; both response files removed.
 *
 * Why a copy: tollgate-call is a program, not a library.  Its own
 * --repeat/--concurrency mode is timed too (bench/run.sh); callbench adds
 * per-call records, caller processes and the process-per-call figure.
 * This file must be kept in step with tollgate-call's call_once().
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
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

/* The request and response directories, opened once per process (the
 * shipped tollgate-call opens them once per invocation, as a CLI must). */
static int req_dir = -1, resp_dir = -1;
static pthread_once_t dirs_once = PTHREAD_ONCE_INIT;
static const char *dirs_base;

static void open_dirs(void) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/req", dirs_base);
  req_dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  snprintf(path, sizeof path, "%s/resp", dirs_base);
  resp_dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  /* Short sleeps while polling should be short (as tollgate-call does). */
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
}

int bench_client_call(const char *dir, const char *tool, const char *args, char **resp) {
  *resp = NULL;
  dirs_base = dir;
  pthread_once(&dirs_once, open_dirs);
  if (req_dir < 0 || resp_dir < 0)
    return -ENOENT;
  unsigned char rnd[16];
  if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd)
    return -EIO;
  char id[33];
  for (int i = 0; i < 16; i++)
    snprintf(id + 2 * i, 3, "%02x", rnd[i]);

  /* The body goes straight to <id>.json (the host reads it only once the
   * marker exists), then the marker. */
  char name[64], marker[64];
  snprintf(name, sizeof name, "%s.json", id);
  snprintf(marker, sizeof marker, "%s.done", id);
  size_t cap = strlen(tool) + strlen(args) + 64;
  char *body = malloc(cap);
  if (!body)
    return -ENOMEM;
  int len = snprintf(body, cap, "{\"v\":1,\"tool\":\"%s\",\"args\":%s}", tool, args);
  int fd = openat(req_dir, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    free(body);
    return -errno;
  }
  ssize_t w = write(fd, body, (size_t)len);
  free(body);
  if (w != len || close(fd) < 0) {
    unlinkat(req_dir, name, 0);
    return -EIO;
  }
  fd = openat(req_dir, marker, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    return -errno;
  close(fd);

  /* The same back-off as tollgate-call: three immediate checks, then sleeps
   * growing by half from 5 us up to 2 ms, never shorter than twice what one
   * check costs. */
  unsigned long long deadline = mono_ns() + TIMEOUT_NS;
  long wait_ns = 5000;
  struct stat st;
  for (int k = 0;; k++) {
    unsigned long long t0 = mono_ns();
    if (fstatat(resp_dir, marker, &st, AT_SYMLINK_NOFOLLOW) == 0)
      break;
    unsigned long long t1 = mono_ns();
    if (t1 > deadline) {
      unlinkat(req_dir, name, 0);
      unlinkat(req_dir, marker, 0);
      return -ETIMEDOUT;
    }
    if (k < 3) {
      sched_yield();
      continue;
    }
    long check_ns = (long)(t1 - t0);
    if (wait_ns < 2 * check_ns)
      wait_ns = 2 * check_ns;
    if (wait_ns > 2000000)
      wait_ns = 2000000;
    struct timespec ts = {0, wait_ns};
    nanosleep(&ts, NULL);
    wait_ns += wait_ns / 2;
  }
  /* One buffer sized by fstat (bounded by RESP_MAX), as tollgate-call's
   * read_all: the host wrote the whole body before the marker, and a
   * caller should not hold 1 MiB per call in flight. */
  fd = openat(resp_dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return -errno;
  size_t want = RESP_MAX;
  if (fstat(fd, &st) == 0 && st.st_size >= 0 && (size_t)st.st_size < RESP_MAX)
    want = (size_t)st.st_size;
  char *buf = malloc(want + 1);
  if (!buf) {
    close(fd);
    return -ENOMEM;
  }
  size_t got = 0;
  ssize_t n;
  while (got < want && (n = read(fd, buf + got, want - got)) > 0)
    got += (size_t)n;
  close(fd);
  buf[got] = '\0';
  unlinkat(resp_dir, name, 0);
  unlinkat(resp_dir, marker, 0);
  *resp = buf;
  return 0;
}
