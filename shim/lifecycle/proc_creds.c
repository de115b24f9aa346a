/* Checking a container's live credentials (see shim/lifecycle/proc_creds.h). */
#include "shim/lifecycle/proc_creds.h"

#include <cap-ng.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"

#define STATUS_MAX (64u * 1024)
#define MAX_TASKS 65536

struct creds {
  unsigned long long uid, gid;
  unsigned long long caps[5]; /* CapInh, CapPrm, CapEff, CapBnd, CapAmb */
  bool nnp;
};

static const char *const cap_fields[5] = {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"};
static const char *const cap_sets[5] = {"inheritable", "permitted", "effective", "bounding", "ambient"};

/* Container id id through mappings (an array of {containerID, hostID,
 * size}); no mappings: the id itself.  -1 when unmapped. */
static long long map_id(const json_t *mappings, long long id) {
  if (json_array_len(mappings) == 0)
    return id;
  for (size_t i = 0; i < json_array_len(mappings); i++) {
    const json_t *m = json_array_get(mappings, i);
    long long c = 0, h = 0, n = 0;
    if (json_integer_value(json_object_get(m, "containerID"), &c) &&
        json_integer_value(json_object_get(m, "hostID"), &h) && json_integer_value(json_object_get(m, "size"), &n) &&
        id >= c && id < c + n)
      return h + (id - c);
  }
  return -1;
}

static int expected(const json_t *config, struct creds *want, tg_error **err) {
  memset(want, 0, sizeof *want);
  const json_t *proc = json_object_get(config, "process");
  const json_t *user = json_object_get(proc, "user");
  long long uid = 0, gid = 0;
  json_integer_value(json_object_get(user, "uid"), &uid);
  json_integer_value(json_object_get(user, "gid"), &gid);
  long long hu = map_id(json_get_path(config, "linux.uidMappings"), uid);
  long long hg = map_id(json_get_path(config, "linux.gidMappings"), gid);
  if (hu < 0 || hg < 0)
    return tg_error_set(err, 0, "process.user %lld:%lld is not mapped by the user namespace", uid, gid);
  want->uid = (unsigned long long)hu;
  want->gid = (unsigned long long)hg;
  const json_t *caps = json_object_get(proc, "capabilities");
  for (int s = 0; s < 5; s++) {
    const json_t *arr = json_object_get(caps, cap_sets[s]);
    for (size_t i = 0; i < json_array_len(arr); i++) {
      const char *name = json_string_value(json_array_get(arr, i));
      char low[64];
      size_t k = 0;
      for (const char *p = name && strncmp(name, "CAP_", 4) == 0 ? name + 4 : ""; *p && k < sizeof low - 1; p++)
        low[k++] = (char)tolower((unsigned char)*p);
      low[k] = '\0';
      int cap = capng_name_to_capability(low);
      if (cap < 0 || cap > 63)
        return tg_error_set(err, 0, "process.capabilities.%s[%zu]: unknown capability", cap_sets[s], i);
      want->caps[s] |= 1ull << cap;
    }
  }
  const json_t *nnp = json_object_get(proc, "noNewPrivileges");
  want->nnp = json_is(nnp, JSON_BOOL) && nnp->u.boolean;
  return 0;
}

/* "Name:\tv1\tv2..." of status: the line's values, or NULL. */
static const char *field(const char *status, const char *name) {
  size_t n = strlen(name);
  for (const char *l = status; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
    if (strncmp(l, name, n) == 0 && l[n] == ':')
      return l + n + 1;
  return NULL;
}

/* Compare one task's status file (dirfd/"status") with want. */
static int check_task(int dfd, const char *who, const struct creds *want, tg_error **err) {
  cleanup_free char *st = NULL;
  size_t len = 0;
  tg_error *e = NULL;
  if (read_file_untrusted(dfd, "status", STATUS_MAX, &st, &len, &e) < 0) {
    tg_error_free(&e);
    return 0; /* gone since it was listed: it holds nothing */
  }
  for (int k = 0; k < 2; k++) {
    const char *v = field(st, k ? "Gid" : "Uid");
    unsigned long long ids[4];
    unsigned long long w = k ? want->gid : want->uid;
    if (v == NULL || sscanf(v, "%llu %llu %llu %llu", &ids[0], &ids[1], &ids[2], &ids[3]) != 4)
      return tg_error_set(err, 0, "%s: its status has no %s line", who, k ? "Gid" : "Uid");
    for (int i = 0; i < 4; i++)
      if (ids[i] != w)
        return tg_error_set(err, 0, "%s runs with %s %llu %llu %llu %llu (real, effective, saved, fs), the "
                            "hardened spec gives host id %llu", who, k ? "gid" : "uid", ids[0], ids[1], ids[2],
                            ids[3], w);
  }
  for (int s = 0; s < 5; s++) {
    const char *v = field(st, cap_fields[s]);
    unsigned long long have = 0;
    if (v == NULL || sscanf(v, "%llx", &have) != 1)
      return tg_error_set(err, 0, "%s: its status has no %s line", who, cap_fields[s]);
    if (have != want->caps[s])
      return tg_error_set(err, 0, "%s has %s %016llx, the hardened spec gives %016llx (process.capabilities.%s)",
                          who, cap_fields[s], have, want->caps[s], cap_sets[s]);
  }
  const char *v = field(st, "NoNewPrivs");
  int nnp = v ? atoi(v) : -1;
  if (want->nnp && nnp != 1)
    return tg_error_set(err, 0, "%s runs without no_new_privs, which the hardened spec sets", who);
  return 0;
}

/* Every task of process pid. */
static int check_process(const char *pid, const struct creds *want, size_t *tasks, tg_error **err) {
  cleanup_free char *path = xasprintf("/proc/%s/task", pid);
  DIR *d = opendir(path);
  if (d == NULL)
    return 0;
  int ret = 0;
  struct dirent *de;
  while (ret == 0 && (de = readdir(d)) != NULL) {
    if (!isdigit((unsigned char)de->d_name[0]))
      continue;
    if (++*tasks > MAX_TASKS) {
      ret = tg_error_set(err, 0, "the container has more than %d threads to check", MAX_TASKS);
      break;
    }
    cleanup_close int tfd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (tfd < 0)
      continue;
    cleanup_free char *who = xasprintf("process %s (thread %s)", pid, de->d_name);
    ret = check_task(tfd, who, want, err);
  }
  closedir(d);
  return ret;
}

int proc_creds_check(pid_t init, const json_t *config, tg_error **err) {
  struct creds want;
  if (expected(config, &want, err) < 0)
    return -1;
  char link[300], ns[128] = "", other[128];
  snprintf(link, sizeof link, "/proc/%d/ns/pid", (int)init);
  ssize_t n = readlink(link, ns, sizeof ns - 1);
  if (n <= 0)
    return tg_error_set(err, errno, "the restored process %d: its pid namespace cannot be read", (int)init);
  ns[n] = '\0';
  ssize_t sn = readlink("/proc/self/ns/pid", other, sizeof other - 1);
  if (sn > 0 && (other[sn] = '\0', strcmp(other, ns) == 0))
    return tg_error_set(err, 0, "the restored process %d shares the host's pid namespace, so its processes "
                        "cannot be told from the host's: give the container a pid namespace of its own",
                        (int)init);
  DIR *d = opendir("/proc");
  if (d == NULL)
    return tg_error_set(err, errno, "open /proc");
  size_t tasks = 0;
  bool saw_init = false;
  int ret = 0;
  struct dirent *de;
  while (ret == 0 && (de = readdir(d)) != NULL) {
    if (!isdigit((unsigned char)de->d_name[0]))
      continue;
    snprintf(link, sizeof link, "/proc/%s/ns/pid", de->d_name);
    ssize_t m = readlink(link, other, sizeof other - 1);
    if (m <= 0 || (other[m] = '\0', strcmp(other, ns) != 0))
      continue;
    saw_init |= atoi(de->d_name) == (int)init;
    ret = check_process(de->d_name, &want, &tasks, err);
  }
  closedir(d);
  if (ret == 0 && !saw_init)
    ret = tg_error_set(err, 0, "the restored process %d is gone", (int)init);
  return ret;
}
