/* The limit watch of `tollgate run`: shim/lifecycle/limit_watch.h. */
#include "shim/lifecycle/limit_watch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/json.h"
#include "base/kmsg.h"
#include "base/util.h"
#include "shim/lifecycle/state.h"

enum { W_PIDS_EVENTS, W_PIDS_MAX, W_MEM_EVENTS, W_MEM_MAX, W_N };

struct limit_watch {
  pthread_t thread;
  bool joined;
  atomic_bool stop;
  pid_t pid;
  char *pid_file;
  int fd[W_N];
  /* The kernel's log from the watch's start, and the paths of the pids
   * and memory cgroups in the hierarchies as tollgate sees them, for a
   * refusal or OOM kill whose cgroup was gone before a tick read it
   * (limit_watch_report). */
  int kmsg;
  char *pids_cgroup, *mem_cgroup;
  /* What was seen, the highest value of each (the thread writes, report
   * reads after the join); pids_refused -1: some, the count unknown. */
  long long pids_refused, oom_kills, pids_max, mem_max;
  long long oom_seen; /* OOM kills in the kernel's log */
};

static void nap(long ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
    ;
}

/* One small cgroup file read from the start; "" when it cannot be. */
static bool read_fd(int fd, char *buf, size_t size) {
  buf[0] = '\0';
  if (fd < 0)
    return false;
  ssize_t n = pread(fd, buf, size - 1, 0);
  if (n < 0)
    return false;
  buf[n] = '\0';
  return true;
}

/* The number after "key " on a line of text, or -1. */
static long long keyed(const char *text, const char *key) {
  size_t k = strlen(key);
  for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
    if (strncmp(p, key, k) == 0 && p[k] == ' ')
      return strtoll(p + k + 1, NULL, 10);
  return -1;
}

/* A limit file: a number, or "max" (none: 0). */
static long long limit_value(const char *text) {
  if (strncmp(text, "max", 3) == 0)
    return 0;
  long long v = strtoll(text, NULL, 10);
  /* cgroup v1's "no memory limit" is a page-rounded LLONG_MAX */
  return v >= (LLONG_MAX / 2) ? 0 : v;
}

/* dir's path under the hierarchy mounted at root ("/ID"), replacing
 * old; old when dir is not under root. */
static char *relative_path(char *old, const char *dir, const char *root) {
  size_t r = strlen(root);
  if (dir == NULL || strncmp(dir, root, r) != 0 || dir[r] != '/')
    return old;
  free(old);
  return xstrdup(dir + r);
}

/* Open the counters in the cgroup directories pdir (pids) and mdir
 * (memory); legacy_* say whether each is a v1 hierarchy's. */
static void open_counters_in(struct limit_watch *lw, const char *pdir, bool legacy_p, const char *mdir, bool legacy_m) {
  lw->pids_cgroup = relative_path(lw->pids_cgroup, pdir, legacy_p ? "/sys/fs/cgroup/pids" : "/sys/fs/cgroup");
  lw->mem_cgroup = relative_path(lw->mem_cgroup, mdir, legacy_m ? "/sys/fs/cgroup/memory" : "/sys/fs/cgroup");
  static const char *const names[W_N][2] = {{"pids.events", "pids.events"},
                                            {"pids.max", "pids.max"},
                                            {"memory.oom_control", "memory.events"},
                                            {"memory.limit_in_bytes", "memory.max"}};
  for (int i = 0; i < W_N; i++) {
    const char *dir = i < W_MEM_EVENTS ? pdir : mdir;
    if (dir == NULL || dir[0] == '\0')
      continue;
    bool legacy = i < W_MEM_EVENTS ? legacy_p : legacy_m;
    cleanup_free char *file = xasprintf("%s/%s", dir, names[i][legacy ? 0 : 1]);
    lw->fd[i] = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  }
}

/* Open the counters of pid's cgroups: v1 hierarchies "pids" and
 * "memory", or the v2 one when those are not mounted. */
static void open_counters(struct limit_watch *lw) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/cgroup", (int)lw->pid);
  FILE *f = fopen(path, "re");
  if (f == NULL)
    return;
  char line[4096], pids[4096] = "", mem[4096] = "", unified[4096] = "";
  while (fgets(line, sizeof line, f) != NULL) {
    line[strcspn(line, "\n")] = '\0';
    char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;
    if (b == NULL || strstr(b + 1, "..") != NULL)
      continue;
    *b = '\0';
    const char *ctrls = a + 1, *cg = b + 1;
    /* "/": an exited task (a zombie shows the root on v1), not a
     * container's cgroup. */
    if (strcmp(cg, "/") == 0)
      continue;
    if (strcmp(ctrls, "pids") == 0)
      snprintf(pids, sizeof pids, "/sys/fs/cgroup/pids%s", cg);
    else if (strcmp(ctrls, "memory") == 0)
      snprintf(mem, sizeof mem, "/sys/fs/cgroup/memory%s", cg);
    else if (ctrls[0] == '\0')
      snprintf(unified, sizeof unified, "/sys/fs/cgroup%s", cg);
  }
  fclose(f);
  bool v2 = access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0;
  open_counters_in(lw, pids[0] ? pids : v2 ? unified : NULL, pids[0] != '\0', mem[0] ? mem : v2 ? unified : NULL,
                   mem[0] != '\0');
}

/* One sample (with_limits: the limits too); false once the cgroup is
 * gone. */
static bool sample(struct limit_watch *lw, bool with_limits) {
  char buf[1024];
  bool alive = false;
  if (read_fd(lw->fd[W_PIDS_EVENTS], buf, sizeof buf)) {
    alive = true;
    long long v = keyed(buf, "max");
    if (v > lw->pids_refused) {
      lw->pids_refused = v;
      with_limits = true; /* the limit as it was when it was met */
    }
  }
  if (read_fd(lw->fd[W_MEM_EVENTS], buf, sizeof buf)) {
    alive = true;
    long long v = keyed(buf, "oom_kill");
    if (v > lw->oom_kills) {
      lw->oom_kills = v;
      with_limits = true;
    }
  }
  /* The limits every tick until one is met, then as they were then: an
   * operator may lower it under a running container, and a refusal seen
   * only in the kernel's log (its cgroup already gone) is reported with
   * the last value read. */
  if ((with_limits || lw->pids_refused == 0) && read_fd(lw->fd[W_PIDS_MAX], buf, sizeof buf))
    lw->pids_max = limit_value(buf);
  if ((with_limits || lw->oom_kills == 0) && read_fd(lw->fd[W_MEM_MAX], buf, sizeof buf))
    lw->mem_max = limit_value(buf);
  return alive;
}

static bool pid_from_file(struct limit_watch *lw) {
  char buf[32] = "";
  int fd = open(lw->pid_file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0)
    return false;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  long v = n > 0 ? strtol(buf, NULL, 10) : 0;
  if (v <= 0 || v > INT_MAX)
    return false;
  lw->pid = (pid_t)v;
  return true;
}

static void *watch(void *arg) {
  struct limit_watch *lw = arg;
  while (lw->pid == 0 && !atomic_load(&lw->stop)) {
    if (pid_from_file(lw))
      break;
    nap(50);
  }
  if (lw->pid == 0)
    return NULL;
  open_counters(lw);
  sample(lw, true);
  /* cgroup v1 notifies no change of pids.events (no POLLPRI, no
   * inotify), and a Sentry whose thread was refused dies within a few
   * milliseconds, its cgroup with it: only a short tick sees the count
   * (measured: 200 ms never did, 2 and 5 ms did).  Two preads a tick. */
  while (!atomic_load(&lw->stop) && sample(lw, false))
    nap(LIMIT_WATCH_MS);
  return NULL;
}

struct limit_watch *limit_watch_start(pid_t pid, const char *pid_file) {
  struct limit_watch *lw = xcalloc(1, sizeof *lw);
  for (int i = 0; i < W_N; i++)
    lw->fd[i] = -1;
  lw->pid = pid;
  lw->pid_file = pid_file ? xstrdup(pid_file) : NULL;
  lw->kmsg = kmsg_open_at_end();
  atomic_init(&lw->stop, false);
  /* Nothing to watch yet: no thread; limit_watch_attach names the pid. */
  if (pid <= 0 && pid_file == NULL) {
    lw->joined = true;
    return lw;
  }
  if (pthread_create(&lw->thread, NULL, watch, lw) != 0) {
    if (lw->kmsg >= 0)
      close(lw->kmsg);
    free(lw->pid_file);
    free(lw);
    return NULL;
  }
  return lw;
}

static void join_watch(struct limit_watch *lw) {
  if (lw->joined)
    return;
  atomic_store(&lw->stop, true);
  pthread_join(lw->thread, NULL);
  lw->joined = true;
}

/* A cgroup directory runc recorded: under /sys/fs/cgroup, no dot
 * segment (runc's own state, but a path is still checked before use). */
static const char *cgroup_dir(const json_t *paths, const char *key) {
  const char *p = json_string_value(json_object_get(paths, key));
  if (p == NULL || strncmp(p, "/sys/fs/cgroup/", 15) != 0 || strstr(p, "/.") != NULL || strlen(p) > 4000)
    return NULL;
  return p;
}

void limit_watch_attach(struct limit_watch *lw, pid_t pid, const char *runc_dir) {
  if (lw == NULL || !lw->joined || pid <= 0)
    return;
  for (int i = 0; i < W_N; i++)
    if (lw->fd[i] >= 0)
      return;
  lw->pid = pid;
  /* The cgroups runc made for the container, from its state: an init
   * that already exited (a fork bomb's is quick) shows no cgroup of its
   * own any more, and its counters stay until runc's delete. */
  tg_error *e = NULL;
  cleanup_json json_t *st = runc_dir ? state_read_json(runc_dir, "state.json", &e) : NULL;
  tg_error_free(&e);
  const json_t *paths = json_object_get(st, "cgroup_paths");
  const char *pdir = cgroup_dir(paths, "pids"), *mdir = cgroup_dir(paths, "memory");
  const char *unified = cgroup_dir(paths, "");
  if (pdir != NULL || mdir != NULL || unified != NULL)
    open_counters_in(lw, pdir ? pdir : unified, pdir != NULL, mdir ? mdir : unified, mdir != NULL);
  else
    open_counters(lw);
  sample(lw, true);
}

/* Whether the cgroup path a kernel message names is ours: the same, or
 * ours under a root tollgate does not see (a cgroup namespace, or a
 * hierarchy mounted from a subdirectory: the kernel names the whole
 * path).  ours starts with '/', so the match ends on a segment. */
static bool names_cgroup(const char *path, size_t len, const char *ours) {
  size_t n = ours ? strlen(ours) : 0;
  return n > 1 && len >= n && memcmp(path + len - n, ours, n) == 0;
}

/* One kernel log record (kmsg_each_since): a cgroup's first refused
 * fork ("cgroup: fork rejected by pids controller in PATH") and each OOM
 * kill ("oom-kill:...,oom_memcg=PATH,...") in the container's cgroups. */
static void kernel_said(const char *msg, void *arg) {
  struct limit_watch *lw = arg;
  static const char refused[] = "cgroup: fork rejected by pids controller in ";
  if (strncmp(msg, refused, sizeof refused - 1) == 0) {
    const char *path = msg + sizeof refused - 1;
    if (lw->pids_refused == 0 && names_cgroup(path, strlen(path), lw->pids_cgroup))
      lw->pids_refused = -1; /* the kernel logs only the first: some, the count unknown */
    return;
  }
  if (strncmp(msg, "oom-kill:", 9) != 0)
    return;
  const char *memcg = strstr(msg, ",oom_memcg=");
  if (memcg == NULL)
    return;
  memcg += strlen(",oom_memcg=");
  if (names_cgroup(memcg, strcspn(memcg, ","), lw->mem_cgroup))
    lw->oom_seen++;
}

bool limit_watch_report(struct limit_watch *lw, const char *id, bool runsc) {
  if (lw == NULL)
    return false;
  join_watch(lw);
  sample(lw, true); /* runc keeps the cgroup until delete: the last word */
  /* runsc removes its sandbox's cgroup within milliseconds of the
   * Sentry's death, and on a loaded machine the thread's tick can miss
   * that window: the kernel logged the refusal or the kill as it
   * happened. */
  kmsg_each_since(lw->kmsg, kernel_said, lw);
  if (lw->oom_seen > lw->oom_kills)
    lw->oom_kills = lw->oom_seen;
  char count[32] = "";
  if (lw->pids_refused > 0)
    snprintf(count, sizeof count, "%lld ", lw->pids_refused);
  bool said = false;
  if (lw->pids_refused != 0) {
    if (runsc)
      fprintf(stderr,
              "tollgate: container %s: its gVisor sandbox reached its host task limit (pids.max %lld, linux.resources.pids.limit): "
              "%shost threads or processes were refused, which ends the sandbox; the guest's own process limit is RLIMIT_NPROC "
              "(docs/hardening.md \"Limits\")\n",
              id, lw->pids_max, count);
    else
      fprintf(stderr,
              "tollgate: container %s reached its process limit (pids.max %lld, linux.resources.pids.limit): %sforks were refused\n",
              id, lw->pids_max, count);
    said = true;
  }
  if (lw->oom_kills > 0) {
    fprintf(stderr,
            "tollgate: container %s reached its memory limit (%lld MiB, linux.resources.memory.limit): the OOM killer ended %lld "
            "process%s%s\n",
            id, lw->mem_max >> 20, lw->oom_kills, lw->oom_kills == 1 ? "" : "es",
            runsc ? " of its gVisor sandbox" : "");
    said = true;
  }
  for (int i = 0; i < W_N; i++)
    if (lw->fd[i] >= 0)
      close(lw->fd[i]);
  if (lw->kmsg >= 0)
    close(lw->kmsg);
  free(lw->pids_cgroup);
  free(lw->mem_cgroup);
  free(lw->pid_file);
  free(lw);
  return said;
}
