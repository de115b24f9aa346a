/* tollgate features: the runtime-spec "features" document (features.md)
 * for what tollgate accepts in a config.json.  Capabilities come from
 * libcap-ng and the seccomp vocabulary from libseccomp, so the lists match
 * the libraries the hardening code resolves names with. */
#include <cap-ng.h>
#include <ctype.h>
#include <linux/capability.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim/cli/commands.h"
#include "base/json.h"
#include "base/util.h"

static json_t *strings(const char *const *v) {
  json_t *a = json_new_array();
  for (; *v; v++)
    json_array_append(a, json_new_string(*v));
  return a;
}

static json_t *capabilities(void) {
  json_t *a = json_new_array();
  for (int i = 0; i <= CAP_LAST_CAP; i++) {
    const char *name = capng_capability_to_name((unsigned)i);
    if (name == NULL)
      continue;
    char *up = xasprintf("CAP_%s", name);
    for (char *p = up; *p; p++)
      *p = (char)toupper((unsigned char)*p);
    json_array_append(a, json_new_string(up));
    free(up);
  }
  return a;
}

int cmd_features(struct cli *cli, int argc, char **argv, tg_error **err) {
  (void)argv;
  if (argc > 1)
    return tg_error_set(err, 0, "features: takes no arguments");
  static const char *const hooks[] = {"prestart", "createRuntime",
                                      "createContainer", "startContainer",
                                      "poststart", "poststop", NULL};
  static const char *const mount_opts[] = {
      "bind", "rbind", "ro", "rw", "nosuid", "nodev", "noexec", "relatime",
      "noatime", "strictatime", "private", "rprivate", "slave", "rslave",
      "mode", "size", "nr_inodes", "uid", "gid", NULL};
  static const char *const namespaces[] = {"cgroup", "ipc", "mount",
                                           "network", "pid", "user", "uts",
                                           NULL};
  static const char *const actions[] = {
      "SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", "SCMP_ACT_KILL",
      "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD", "SCMP_ACT_LOG",
      "SCMP_ACT_TRACE", "SCMP_ACT_TRAP", NULL};
  static const char *const operators[] = {
      "SCMP_CMP_EQ", "SCMP_CMP_GE", "SCMP_CMP_GT", "SCMP_CMP_LE",
      "SCMP_CMP_LT", "SCMP_CMP_MASKED_EQ", "SCMP_CMP_NE", NULL};
  static const char *const archs[] = {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86",
                                      "SCMP_ARCH_X32", "SCMP_ARCH_AARCH64",
                                      "SCMP_ARCH_ARM", NULL};
  json_t *f = json_new_object();
  json_object_set(f, "ociVersionMin", json_new_string("1.0.0"));
  json_object_set(f, "ociVersionMax", json_new_string("1.0.2"));
  json_object_set(f, "hooks", strings(hooks));
  json_object_set(f, "mountOptions", strings(mount_opts));
  json_t *linux = json_new_object();
  json_object_set(linux, "namespaces", strings(namespaces));
  json_object_set(linux, "capabilities", capabilities());
  json_t *cg = json_new_object();
  json_object_set(cg, "v1", json_new_bool(true));
  json_object_set(cg, "v2", json_new_bool(true));
  json_object_set(cg, "systemd", json_new_bool(true));
  json_object_set(cg, "systemdUser", json_new_bool(false));
  json_object_set(linux, "cgroup", cg);
  json_t *sc = json_new_object();
  json_object_set(sc, "enabled", json_new_bool(true));
  json_object_set(sc, "actions", strings(actions));
  json_object_set(sc, "operators", strings(operators));
  json_object_set(sc, "archs", strings(archs));
  json_object_set(linux, "seccomp", sc);
  json_t *aa = json_new_object();
  json_object_set(aa, "enabled", json_new_bool(false));
  json_object_set(linux, "apparmor", aa);
  json_t *se = json_new_object();
  json_object_set(se, "enabled", json_new_bool(false));
  json_object_set(linux, "selinux", se);
  json_object_set(f, "linux", linux);
  json_t *ann = json_new_object();
  const struct scmp_version *v = seccomp_version();
  char *sv = xasprintf("%u.%u.%u", v->major, v->minor, v->micro);
  json_object_set(ann, "io.github.seccomp.libseccomp.version",
                  json_new_string(sv));
  free(sv);
  json_object_set(ann, "dev.tollgate.backend",
                  json_new_string(cli->config.runtime ? cli->config.runtime
                                                      : "runsc"));
  json_object_set(ann, "dev.tollgate.profile",
                  json_new_string(cli->config.profile ? cli->config.profile
                                                      : "hardened"));
  json_object_set(f, "annotations", ann);
  char *text = json_dump(f, true, NULL);
  printf("%s\n", text);
  free(text);
  json_free(f);
  return 0;
}
