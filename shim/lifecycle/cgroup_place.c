/* Host cgroups of a pod under runsc: shim/lifecycle/cgroup_place.h. */
#include "shim/lifecycle/cgroup_place.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"

#define CGROUP_PARENT "dev.gvisor.spec.cgroup-parent"

/* The memory limit of the cgroupfs path cg (v1 memory hierarchy, else
 * v2); 0 when none or unreadable. */
static long long memory_limit_of(const char *cg) {
  cleanup_free char *v1 = xasprintf("/sys/fs/cgroup/memory%s/memory.limit_in_bytes", cg);
  cleanup_free char *v2 = xasprintf("/sys/fs/cgroup%s/memory.max", cg);
  for (int i = 0; i < 2; i++) {
    cleanup_close int fd = open(i ? v2 : v1, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    char buf[32] = "";
    if (fd < 0 || read(fd, buf, sizeof buf - 1) <= 0)
      continue;
    long long v = strtoll(buf, NULL, 10);
    /* v1's "none" is a page-rounded LLONG_MAX; v2's is "max" (0 here) */
    return v >= LLONG_MAX / 2 ? 0 : v;
  }
  return 0;
}

char *cgroup_place_sandbox(json_t *config) {
  const char *path = json_string_value(json_get_path(config, "linux.cgroupsPath"));
  /* systemd's "slice:prefix:name" and relative paths are runsc's to
   * resolve; a path with a dot segment is nothing to follow. */
  if (path == NULL || path[0] != '/' || strstr(path, "/.") != NULL || strlen(path) > 1024)
    return NULL;
  char *parent = xstrdup(path);
  char *slash = strrchr(parent, '/');
  *slash = '\0';
  if (parent[0] == '\0' || memory_limit_of(parent) <= 0) {
    free(parent);
    return NULL;
  }
  json_object_set(json_object_ensure_object(config, "annotations"), CGROUP_PARENT, json_new_string(parent));
  return parent;
}

/* The mount point of the v1 hierarchy whose controllers are ctrls
 * ("memory", "name=systemd", "cpu,cpuacct"), or of v2 for "": from
 * /proc/self/mountinfo.  Owned, or NULL. */
static char *hierarchy_mount(const char *ctrls) {
  FILE *f = fopen("/proc/self/mountinfo", "re");
  if (f == NULL)
    return NULL;
  char line[4096];
  char *found = NULL;
  while (found == NULL && fgets(line, sizeof line, f) != NULL) {
    /* id parent maj:min root mountpoint opts... - fstype source superopts */
    char *dash = strstr(line, " - ");
    char mnt[1024], fstype[64], source[256], super[1024];
    if (dash == NULL || sscanf(line, "%*s %*s %*s %*s %1023s", mnt) != 1 ||
        sscanf(dash + 3, "%63s %255s %1023s", fstype, source, super) != 3)
      continue;
    if (ctrls[0] == '\0') {
      if (strcmp(fstype, "cgroup2") == 0)
        found = xstrdup(mnt);
      continue;
    }
    if (strcmp(fstype, "cgroup") != 0)
      continue;
    /* every controller of ctrls among the super options */
    bool all = true;
    cleanup_free char *list = xstrdup(ctrls);
    char *save = NULL;
    for (char *c = strtok_r(list, ",", &save); c && all; c = strtok_r(NULL, ",", &save)) {
      char want[128];
      snprintf(want, sizeof want, ",%s,", c);
      cleanup_free char *opts = xasprintf(",%s,", super);
      all = strstr(opts, want) != NULL;
    }
    if (all)
      found = xstrdup(mnt);
  }
  fclose(f);
  return found;
}

int cgroup_place_like(pid_t pid, pid_t like, tg_error **err) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/cgroup", (int)like);
  FILE *f = fopen(path, "re");
  if (f == NULL)
    return tg_error_set(err, errno, "read %s", path);
  char line[4096];
  int rc = 0;
  while (rc == 0 && fgets(line, sizeof line, f) != NULL) {
    line[strcspn(line, "\n")] = '\0';
    char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;
    if (b == NULL)
      continue;
    *b = '\0';
    const char *ctrls = a + 1, *cg = b + 1;
    if (cg[0] != '/' || strstr(cg, "/..") != NULL)
      continue;
    cleanup_free char *mnt = hierarchy_mount(ctrls);
    if (mnt == NULL)
      continue;
    cleanup_free char *procs = xasprintf("%s%s/cgroup.procs", mnt, strcmp(cg, "/") == 0 ? "" : cg);
    cleanup_close int fd = open(procs, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    char num[16];
    int n = snprintf(num, sizeof num, "%d", (int)pid);
    if (fd < 0 || write(fd, num, (size_t)n) != n)
      rc = tg_error_set(err, errno, "move process %d into cgroup %s", (int)pid, procs);
  }
  fclose(f);
  return rc;
}
