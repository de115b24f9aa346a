/* See cgroup_leftovers.h. */
#include "shim/lifecycle/cgroup_leftovers.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/json.h"
#include "base/util.h"

/* rmdir PATH, waiting up to ~1 s while it is busy: the container's last
 * processes may still be on their way out of it. */
static void remove_empty_cgroup(const char *path) {
  for (int i = 0; i < 20; i++) {
    if (rmdir(path) == 0 || errno != EBUSY)
      return;
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

/* NAME under every cgroup (v1) and cgroup2 mount point of this mount
 * namespace, as mountinfo's fifth field (octal escapes are not expected
 * under /sys/fs/cgroup; a mount point holding one is skipped). */
static void clear_cgroups_named(const char *name) {
  FILE *f = fopen("/proc/self/mountinfo", "re");
  if (f == NULL)
    return;
  char line[4096];
  while (fgets(line, sizeof line, f) != NULL) {
    char *sep = strstr(line, " - ");
    if (sep == NULL || (strncmp(sep, " - cgroup ", 10) != 0 && strncmp(sep, " - cgroup2 ", 11) != 0))
      continue;
    char *field = line, *mnt = NULL;
    for (int i = 0; i < 5 && field != NULL; i++) {
      char *sp = strchr(field, ' ');
      if (i == 4) {
        mnt = field;
        if (sp != NULL)
          *sp = '\0';
      }
      field = sp ? sp + 1 : NULL;
    }
    if (mnt == NULL || mnt[0] != '/' || strchr(mnt, '\\') != NULL)
      continue;
    cleanup_free char *path = xasprintf("%s/%s", mnt, name);
    remove_empty_cgroup(path);
  }
  fclose(f);
}

void cgroup_clear_default(const struct container *c, bool systemd_cgroup) {
  /* Only the backend's default name: a cgroupsPath of the config's own is
   * the author's name for a cgroup that may be another's, and a systemd
   * manager names its own units. */
  if (systemd_cgroup)
    return;
  const char *name = c->backend_id != NULL ? c->backend_id : c->id;
  /* The name is a state-checked id (letters, digits, "._-", no "/" and
   * not "." or ".."): it cannot leave the hierarchy's root. */
  if (name == NULL || name[0] == '\0' || strchr(name, '/') != NULL || strcmp(name, ".") == 0 ||
      strcmp(name, "..") == 0)
    return;
  tg_error *e = NULL;
  json_t *config = container_effective_config(c, &e);
  tg_error_free(&e);
  const json_t *linux_ = json_object_get(config, "linux");
  bool default_cgroup = config != NULL && json_object_get(linux_, "cgroupsPath") == NULL;
  json_free(config);
  if (default_cgroup)
    clear_cgroups_named(name);
}
