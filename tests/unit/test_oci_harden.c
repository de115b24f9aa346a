/* oci_harden(): table-driven.  Every case is a config (the `runc spec`
 * default, or the ctr-run fixture, plus a patch), a backend and a host
 * profile, and either an expected error or per-field expectations.  For
 * every case that succeeds, the "only tighter" property is checked on
 * every axis by an implementation independent of oci/tighter.c, and
 * hardening twice must give the same config as hardening once. */
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oci/harden.h"
#include "oci/netcheck.h"
#include "oci/seccomp.h"
#include "oci/transform.h"
#include "oci_test_util.h"

typedef void (*check_fn)(const json_t *in, const json_t *out);

struct hcase {
  const char *name;
  const char *fixture; /* NULL = runc-spec-config.json */
  const char *patch;   /* JSON object merged into the fixture, or NULL */
  const char *backend; /* NULL = runsc */
  const char *profile; /* NULL = hardened */
  bool allow_passthrough;
  const char *error;   /* expected error substring; NULL = must succeed */
  check_fn check;
  const char *applied; /* expected harden_result.profile */
};

/* ---- the independent "not looser" oracle ------------------------------- */

static long long limit_or_inf(long long v) { return v <= 0 ? (1LL << 62) : v; }

static void assert_not_looser(const char *name, const json_t *in, const json_t *out) {
  static const char *const sets[] = {"bounding", "effective", "permitted", "inheritable", "ambient"};
  for (int s = 0; s < 5; s++) {
    const json_t *o = json_get_path(json_get_path(out, "process.capabilities"), sets[s]);
    const json_t *i = json_get_path(json_get_path(in, "process.capabilities"), sets[s]);
    for (size_t k = 0; k < json_array_len(o); k++)
      cr_expect(str_in(i, json_string_value(json_array_get(o, k))), "%s: capability %s gained in %s", name,
                json_string_value(json_array_get(o, k)), sets[s]);
  }
  if (json_is_true(json_get_path(in, "process.noNewPrivileges")))
    cr_expect(json_is_true(json_get_path(out, "process.noNewPrivileges")), "%s: noNewPrivileges lost", name);
  if (json_is_true(json_get_path(in, "root.readonly")))
    cr_expect(json_is_true(json_get_path(out, "root.readonly")), "%s: readonly root lost", name);
  if (ll_at(in, "process.user.uid", 0) != 0)
    cr_expect_neq(ll_at(out, "process.user.uid", 0), 0, "%s: became root", name);
  cr_expect_leq(limit_or_inf(ll_at(out, "linux.resources.memory.limit", 0)),
                limit_or_inf(ll_at(in, "linux.resources.memory.limit", 0)), "%s: memory raised", name);
  cr_expect_leq(limit_or_inf(ll_at(out, "linux.resources.pids.limit", 0)),
                limit_or_inf(ll_at(in, "linux.resources.pids.limit", 0)), "%s: pids raised", name);
  cr_expect_leq(limit_or_inf(oci_cpu_millis(out)), limit_or_inf(oci_cpu_millis(in)), "%s: cpu raised", name);
  const char *paths[] = {"linux.maskedPaths", "linux.readonlyPaths"};
  for (int p = 0; p < 2; p++) {
    const json_t *i = json_get_path(in, paths[p]);
    for (size_t k = 0; k < json_array_len(i); k++)
      cr_expect(str_in(json_get_path(out, paths[p]), json_string_value(json_array_get(i, k))), "%s: %s lost %s", name,
                paths[p], json_string_value(json_array_get(i, k)));
  }
  const json_t *irl = json_get_path(in, "process.rlimits");
  for (size_t k = 0; k < json_array_len(irl); k++) {
    const json_t *r = json_array_get(irl, k);
    const json_t *orl = json_get_path(out, "process.rlimits");
    bool found = false;
    for (size_t j = 0; j < json_array_len(orl); j++) {
      const json_t *o = json_array_get(orl, j);
      if (strcmp(json_string_value(json_object_get(o, "type")), json_string_value(json_object_get(r, "type"))))
        continue;
      found = true;
      cr_expect_leq(ll_at(o, "hard", 1LL << 62), ll_at(r, "hard", 1LL << 62), "%s: rlimit raised", name);
    }
    cr_expect(found, "%s: rlimit dropped", name);
  }
  /* namespaces: nothing dropped, no path added */
  const json_t *ins = json_get_path(in, "linux.namespaces"), *ons = json_get_path(out, "linux.namespaces");
  for (size_t k = 0; k < json_array_len(ins); k++) {
    const char *t = json_string_value(json_object_get(json_array_get(ins, k), "type"));
    bool found = false;
    for (size_t j = 0; j < json_array_len(ons); j++)
      found |= strcmp(t, json_string_value(json_object_get(json_array_get(ons, j), "type"))) == 0;
    cr_expect(found, "%s: namespace %s dropped", name, t);
  }
  for (size_t j = 0; j < json_array_len(ons); j++) {
    const json_t *p = json_object_get(json_array_get(ons, j), "path");
    if (p == NULL)
      continue;
    bool found = false;
    for (size_t k = 0; k < json_array_len(ins); k++)
      found |= json_equal(p, json_object_get(json_array_get(ins, k), "path"));
    cr_expect(found, "%s: namespace path added", name);
  }
  /* bind mounts: none added; protective options never removed */
  const json_t *oms = json_object_get(out, "mounts");
  for (size_t j = 0; j < json_array_len(oms); j++) {
    const json_t *m = json_array_get(oms, j);
    const char *src = json_string_value(json_object_get(m, "source"));
    const char *dst = json_string_value(json_object_get(m, "destination"));
    const json_t *im = mount_at(in, dst);
    bool bind = str_in(json_object_get(m, "options"), "bind") || str_in(json_object_get(m, "options"), "rbind");
    if (bind)
      cr_expect(im && json_equal(json_object_get(im, "source"), json_object_get(m, "source")), "%s: bind of %s added", name, src);
    const char *prot[] = {"ro", "nosuid", "nodev", "noexec"};
    for (int p = 0; im && p < 4; p++)
      if (str_in(json_object_get(im, "options"), prot[p]) &&
          json_equal(json_object_get(im, "type"), json_object_get(m, "type")))
        cr_expect(str_in(json_object_get(m, "options"), prot[p]), "%s: %s lost %s", name, dst, prot[p]);
  }
  char *why = NULL;
  cr_expect(oci_seccomp_subset(json_get_path(out, "linux.seccomp"), json_get_path(in, "linux.seccomp"), &why),
            "%s: seccomp looser: %s", name, why ? why : "");
  free(why);
  tg_error *err = NULL;
  cr_expect_eq(oci_check_tighter(in, out, &err), 0, "%s: oci_check_tighter: %s", name, err ? err->msg : "");
  tg_error_free(&err);
}

/* ---- per-field expectations -------------------------------------------- */

static void caps_empty(const json_t *in, const json_t *out) {
  (void)in;
  const char *sets[] = {"bounding", "effective", "permitted", "inheritable", "ambient"};
  for (int s = 0; s < 5; s++) {
    const json_t *a = json_object_get(json_get_path(out, "process.capabilities"), sets[s]);
    cr_expect(json_is(a, JSON_ARRAY) && json_array_len(a) == 0, "capability set %s not empty", sets[s]);
  }
}

static void defaults(const json_t *in, const json_t *out) {
  caps_empty(in, out);
  cr_expect(json_is_true(json_get_path(out, "process.noNewPrivileges")));
  cr_expect(json_is_true(json_get_path(out, "root.readonly")));
  cr_expect_eq(ll_at(out, "process.user.uid", 0), 65534);
  cr_expect_eq(ll_at(out, "process.user.gid", 0), 65534);
  cr_expect_eq(ll_at(out, "linux.resources.memory.limit", 0), 512LL << 20);
  cr_expect_eq(ll_at(out, "linux.resources.memory.swap", 0), 512LL << 20);
  cr_expect_eq(ll_at(out, "linux.resources.cpu.quota", 0), 100000);
  cr_expect_eq(ll_at(out, "linux.resources.cpu.period", 0), 100000);
  const json_t *tmp = mount_at(out, "/tmp");
  cr_assert_not_null(tmp, "no /tmp mount");
  cr_expect_str_eq(json_string_value(json_object_get(tmp, "type")), "tmpfs");
  cr_expect(str_in(json_object_get(tmp, "options"), "size=64m"));
  cr_expect(str_in(json_object_get(tmp, "options"), "nosuid") && str_in(json_object_get(tmp, "options"), "nodev") &&
            str_in(json_object_get(tmp, "options"), "noexec"));
  const char *masked[] = {"/proc/kcore", "/proc/keys", "/proc/sysrq-trigger", "/sys/firmware", "/proc/timer_list"};
  for (int i = 0; i < 5; i++)
    cr_expect(str_in(json_get_path(out, "linux.maskedPaths"), masked[i]), "%s not masked", masked[i]);
  cr_expect(str_in(json_get_path(out, "linux.readonlyPaths"), "/proc/sys"));
  const json_t *sc = json_get_path(out, "linux.seccomp");
  cr_assert_not_null(sc, "no seccomp");
  cr_expect_str_eq(json_string_value(json_object_get(sc, "defaultAction")), "SCMP_ACT_ERRNO");
  cr_expect_null(json_object_get(sc, "comment"));
  bool net = false;
  const json_t *ns = json_get_path(out, "linux.namespaces");
  for (size_t i = 0; i < json_array_len(ns); i++)
    if (strcmp(json_string_value(json_object_get(json_array_get(ns, i), "type")), "network") == 0)
      net = json_object_get(json_array_get(ns, i), "path") == NULL;
  cr_expect(net, "no new network namespace");
}

static long long rlimit_of(const json_t *cfg, const char *type) {
  const json_t *rl = json_get_path(cfg, "process.rlimits");
  for (size_t i = 0; i < json_array_len(rl); i++)
    if (strcmp(json_string_value(json_object_get(json_array_get(rl, i), "type")), type) == 0)
      return ll_at(json_array_get(rl, i), "hard", -1);
  return -1;
}

static void defaults_runsc(const json_t *in, const json_t *out) {
  defaults(in, out);
  cr_expect_eq(rlimit_of(out, "RLIMIT_NPROC"), 128, "runsc: guest process limit is half of pids");
  cr_expect_eq(ll_at(out, "linux.resources.pids.limit", 0), 1024);
}

static void defaults_runc(const json_t *in, const json_t *out) {
  defaults(in, out);
  cr_expect_eq(rlimit_of(out, "RLIMIT_NPROC"), 512);
  cr_expect_eq(ll_at(out, "linux.resources.pids.limit", 0), 256);
  cr_expect_eq(rlimit_of(out, "RLIMIT_NOFILE"), 1024);
}

static void kept_tighter_limits(const json_t *in, const json_t *out) {
  (void)in;
  cr_expect_eq(ll_at(out, "linux.resources.memory.limit", 0), 100LL << 20);
  cr_expect_eq(ll_at(out, "linux.resources.pids.limit", 0), 10);
  cr_expect_eq(oci_cpu_millis(out), 500);
  cr_expect_eq(rlimit_of(out, "RLIMIT_NOFILE"), 64);
}

static void lowered_looser_limits(const json_t *in, const json_t *out) {
  (void)in;
  cr_expect_eq(ll_at(out, "linux.resources.memory.limit", 0), 512LL << 20);
  cr_expect_eq(ll_at(out, "linux.resources.pids.limit", 0), 256);
  cr_expect_eq(oci_cpu_millis(out), 1000);
  cr_expect_eq(rlimit_of(out, "RLIMIT_NOFILE"), 1024);
  cr_expect_eq(ll_at(out, "linux.resources.memory.swap", 0), 512LL << 20, "no swap");
}

static void oom_settings(const json_t *in, const json_t *out) {
  (void)in;
  cr_expect_not(json_is_true(json_get_path(out, "linux.resources.memory.disableOOMKiller")));
  cr_expect_eq(ll_at(out, "process.oomScoreAdj", -1), 0);
}

static void caps_from_ctr(const json_t *in, const json_t *out) {
  caps_empty(in, out);
  /* tun (10:200) and mknod disappear from the device cgroup; the
   * standard devices stay readable and writable. */
  const json_t *devs = json_get_path(out, "linux.resources.devices");
  cr_expect_eq(json_is_true(json_object_get(json_array_get(devs, 0), "allow")), false);
  bool null_rw = false;
  for (size_t i = 0; i < json_array_len(devs); i++) {
    const json_t *d = json_array_get(devs, i);
    cr_expect_neq(ll_at(d, "major", 0), 10, "tun still allowed");
    if (json_is_true(json_object_get(d, "allow")))
      cr_expect_null(strchr(json_string_value(json_object_get(d, "access")), 'm'), "mknod still allowed");
    if (ll_at(d, "major", 0) == 1 && ll_at(d, "minor", 0) == 3)
      null_rw = strcmp(json_string_value(json_object_get(d, "access")), "rw") == 0;
  }
  cr_expect(null_rw, "/dev/null not rw");
  cr_expect_null(json_get_path(out, "annotations.dev\\.gvisor"), "gvisor annotation kept");
  const json_t *ann = json_object_get(out, "annotations");
  for (size_t i = 0; i < ann->u.object.len; i++)
    cr_expect_neq(strncmp(ann->u.object.keys[i], "dev.gvisor.", 11), 0, "kept %s", ann->u.object.keys[i]);
  cr_expect_not_null(json_object_get(ann, "io.containerd.image.name"), "unrelated annotation dropped");
  cr_expect_eq(ll_at(out, "process.user.uid", -1), 65534);
  const json_t *extra = json_get_path(out, "process.user.additionalGids");
  cr_expect_eq(json_array_len(extra), 1);
  cr_expect_eq(ll_at(json_array_get(extra, 0) ? out : out, "process.user.gid", 0), 65534);
  const json_t *run = mount_at(out, "/run");
  cr_expect(str_in(json_object_get(run, "options"), "noexec") && str_in(json_object_get(run, "options"), "nodev"));
  const json_t *dev = mount_at(out, "/dev");
  cr_expect_not(str_in(json_object_get(dev, "options"), "nodev"), "/dev must keep device nodes usable");
}

static void relaxed_caps(const json_t *in, const json_t *out) {
  (void)in;
  const json_t *eff = json_get_path(out, "process.capabilities.effective");
  cr_expect(str_in(eff, "CAP_CHOWN"));
  cr_expect_not(str_in(eff, "CAP_NET_RAW"));
  cr_expect_not(str_in(eff, "CAP_MKNOD"));
  cr_expect_eq(ll_at(out, "process.user.uid", -1), 0, "relaxed allows root");
}

static void strict_applied(const json_t *in, const json_t *out) {
  (void)in;
  cr_expect_eq(ll_at(out, "linux.resources.memory.limit", 0), 256LL << 20);
  cr_expect(str_in(json_object_get(mount_at(out, "/tmp"), "options"), "size=16m"));
}

static void tmp_kept_smaller(const json_t *in, const json_t *out) {
  (void)in;
  cr_expect(str_in(json_object_get(mount_at(out, "/tmp"), "options"), "size=8m"));
}

static void tmpfs_capped(const json_t *in, const json_t *out) {
  (void)in;
  const json_t *shm = json_object_get(mount_at(out, "/dev/shm"), "options");
  cr_expect(str_in(shm, "size=64m"));
  cr_expect_not(str_in(shm, "size=1g"));
  cr_expect_not(str_in(shm, "exec"));
}

static void bind_tmp_replaced(const json_t *in, const json_t *out) {
  (void)in;
  const json_t *tmp = mount_at(out, "/tmp");
  cr_expect_str_eq(json_string_value(json_object_get(tmp, "type")), "tmpfs");
  cr_expect_str_neq(json_string_value(json_object_get(tmp, "source")), "/srv/scratch");
}

static size_t mount_index(const json_t *cfg, const char *dst) {
  const json_t *ms = json_object_get(cfg, "mounts");
  for (size_t i = 0; i < json_array_len(ms); i++)
    if (strcmp(json_string_value(json_object_get(json_array_get(ms, i), "destination")), dst) == 0)
      return i;
  return (size_t)-1;
}

static void tmp_before_mounts_below(const json_t *in, const json_t *out) {
  (void)in;
  cr_expect_lt(mount_index(out, "/tmp"), mount_index(out, "/tmp/work"), "/tmp would hide /tmp/work");
  cr_expect_neq(mount_index(out, "/tmp/work"), (size_t)-1);
}

static void bind_hardened(const json_t *in, const json_t *out) {
  (void)in;
  const json_t *m = json_object_get(mount_at(out, "/data"), "options");
  cr_expect(str_in(m, "nosuid") && str_in(m, "nodev") && str_in(m, "ro"));
  cr_expect_not(str_in(m, "suid"));
  cr_expect_not(str_in(m, "dev"));
}

static void keeps_input_masks(const json_t *in, const json_t *out) {
  (void)in;
  cr_expect(str_in(json_get_path(out, "linux.maskedPaths"), "/proc/extra"));
  cr_expect(str_in(json_get_path(out, "linux.readonlyPaths"), "/proc/other"));
  cr_expect(str_in(json_get_path(out, "linux.maskedPaths"), "/proc/kcore"));
}

static bool syscall_allowed_uncond(const json_t *sc, const char *name) {
  const json_t *rules = json_object_get(sc, "syscalls");
  for (size_t i = 0; i < json_array_len(rules); i++) {
    const json_t *r = json_array_get(rules, i);
    if (str_in(json_object_get(r, "names"), name) && json_array_len(json_object_get(r, "args")) == 0)
      return strcmp(json_string_value(json_object_get(r, "action")), "SCMP_ACT_ALLOW") == 0;
  }
  return false;
}

static void seccomp_ours(const json_t *in, const json_t *out) {
  (void)in;
  const json_t *sc = json_get_path(out, "linux.seccomp");
  cr_expect(syscall_allowed_uncond(sc, "read"));
  const char *denied[] = {"mount", "ptrace", "bpf", "keyctl", "unshare", "setns", "init_module", "kexec_load",
                          "userfaultfd", "perf_event_open", "io_uring_setup"};
  for (int i = 0; i < 11; i++)
    cr_expect_not(syscall_allowed_uncond(sc, denied[i]), "%s allowed", denied[i]);
}

static void seccomp_intersected(const json_t *in, const json_t *out) {
  (void)in;
  const json_t *sc = json_get_path(out, "linux.seccomp");
  cr_expect_not(syscall_allowed_uncond(sc, "chmod"), "input denied chmod");
  cr_expect(syscall_allowed_uncond(sc, "read"));
  cr_expect_null(json_object_get(sc, "flags"), "SPEC_ALLOW must be dropped");
}

static void seccomp_allowlist_input(const json_t *in, const json_t *out) {
  (void)in;
  const json_t *sc = json_get_path(out, "linux.seccomp");
  cr_expect(syscall_allowed_uncond(sc, "read"));
  cr_expect(syscall_allowed_uncond(sc, "write"));
  cr_expect_not(syscall_allowed_uncond(sc, "openat"), "the input never allowed openat");
}

static void netns_added(const json_t *in, const json_t *out) {
  (void)in;
  const char *need[] = {"pid", "ipc", "uts", "mount", "network"};
  for (int k = 0; k < 5; k++) {
    bool found = false;
    const json_t *ns = json_get_path(out, "linux.namespaces");
    for (size_t i = 0; i < json_array_len(ns); i++)
      found |= strcmp(json_string_value(json_object_get(json_array_get(ns, i), "type")), need[k]) == 0;
    cr_expect(found, "namespace %s missing", need[k]);
  }
}

static void user_kept(const json_t *in, const json_t *out) {
  (void)in;
  cr_expect_eq(ll_at(out, "process.user.uid", 0), 1000);
  cr_expect_eq(ll_at(out, "process.user.gid", 0), 1000);
}

static void safe_sysctl_kept(const json_t *in, const json_t *out) {
  (void)in;
  cr_expect_not_null(json_object_get(json_get_path(out, "linux.sysctl"), "net.ipv4.ip_unprivileged_port_start"));
}

static void network_path_dropped(const json_t *in, const json_t *out) {
  (void)in;
  const json_t *ns = json_get_path(out, "linux.namespaces");
  bool found = false;
  for (size_t i = 0; i < json_array_len(ns); i++) {
    const json_t *n = json_array_get(ns, i);
    if (strcmp(json_string_value(json_object_get(n, "type")), "network") == 0) {
      found = true;
      cr_expect_null(json_object_get(n, "path"), "the host's network namespace path survived");
    }
  }
  cr_expect(found, "no network namespace");
}

static void passthrough_untouched(const json_t *in, const json_t *out) {
  cr_expect(json_equal(in, out), "passthrough changed the config");
}

/* ---- the table ---------------------------------------------------------- */

#define NS_WITHOUT_NET "{\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"mount\"}]}}"

static const struct hcase cases[] = {
    /* defaults per backend */
    {"runc spec, runsc", NULL, NULL, "runsc", NULL, false, NULL, defaults_runsc, "hardened"},
    {"runc spec, runc", NULL, NULL, "runc", NULL, false, NULL, defaults_runc, "hardened"},
    {"ctr run config, runsc", "ctr-run-config.json", NULL, "runsc", NULL, false, NULL, caps_from_ctr, "hardened"},
    {"ctr run config, runc", "ctr-run-config.json", NULL, "runc", NULL, false, NULL, defaults_runc, "hardened"},
    {"empty config", NULL, "{\"process\":null,\"mounts\":null,\"linux\":null,\"root\":{\"path\":\"rootfs\"}}", "runc", NULL, false, NULL, defaults_runc, "hardened"},
    /* capabilities */
    {"all caps requested", NULL, "{\"process\":{\"capabilities\":{\"bounding\":[\"CAP_SYS_ADMIN\",\"CAP_NET_ADMIN\"],\"effective\":[\"CAP_SYS_ADMIN\"],\"permitted\":[\"CAP_SYS_ADMIN\"],\"inheritable\":[\"CAP_SYS_ADMIN\"],\"ambient\":[\"CAP_SYS_ADMIN\"]}}}", "runc", NULL, false, NULL, caps_empty, "hardened"},
    {"relaxed keeps only its list", "ctr-run-config.json", NULL, "runc", "relaxed", false, NULL, relaxed_caps, "relaxed"},
    /* privileges, root, user */
    {"noNewPrivileges false", NULL, "{\"process\":{\"noNewPrivileges\":false}}", "runsc", NULL, false, NULL, defaults_runsc, "hardened"},
    {"root writable", NULL, "{\"root\":{\"readonly\":false}}", "runsc", NULL, false, NULL, defaults_runsc, "hardened"},
    {"non-root user kept", NULL, "{\"process\":{\"user\":{\"uid\":1000,\"gid\":1000}}}", "runsc", NULL, false, NULL, user_kept, "hardened"},
    {"user missing", NULL, "{\"process\":{\"user\":null}}", "runc", NULL, false, NULL, defaults_runc, "hardened"},
    /* mounts */
    {"tmp smaller kept", NULL, "{\"mounts\":[{\"destination\":\"/tmp\",\"type\":\"tmpfs\",\"source\":\"tmpfs\",\"options\":[\"size=8m\"]}]}", "runc", NULL, false, NULL, tmp_kept_smaller, "hardened"},
    {"shm too big", NULL, "{\"mounts\":[{\"destination\":\"/dev/shm\",\"type\":\"tmpfs\",\"source\":\"shm\",\"options\":[\"exec\",\"size=1g\"]}]}", "runc", NULL, false, NULL, tmpfs_capped, "hardened"},
    {"bind at /tmp replaced", NULL, "{\"mounts\":[{\"destination\":\"/tmp\",\"type\":\"bind\",\"source\":\"/srv/scratch\",\"options\":[\"rbind\",\"rw\"]}]}", "runc", NULL, false, NULL, bind_tmp_replaced, "hardened"},
    {"tmp goes before mounts below it", NULL, "{\"mounts\":[{\"destination\":\"/tmp/work\",\"type\":\"bind\",\"source\":\"/srv/work\",\"options\":[\"rbind\",\"rw\"]}]}", "runc", NULL, false, NULL, tmp_before_mounts_below, "hardened"},
    {"bind mount hardened", NULL, "{\"mounts\":[{\"destination\":\"/data\",\"type\":\"bind\",\"source\":\"/srv/data\",\"options\":[\"rbind\",\"ro\",\"suid\",\"dev\"]}]}", "runc", NULL, false, NULL, bind_hardened, "hardened"},
    {"input masks kept", NULL, "{\"linux\":{\"maskedPaths\":[\"/proc/extra\"],\"readonlyPaths\":[\"/proc/other\"]}}", "runsc", NULL, false, NULL, keeps_input_masks, "hardened"},
    /* limits */
    {"tighter limits kept", NULL, "{\"process\":{\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":64,\"soft\":64}]},\"linux\":{\"resources\":{\"memory\":{\"limit\":104857600},\"pids\":{\"limit\":10},\"cpu\":{\"quota\":50000,\"period\":100000}}}}", "runc", NULL, false, NULL, kept_tighter_limits, "hardened"},
    {"looser limits lowered", NULL, "{\"process\":{\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":1048576,\"soft\":4096}]},\"linux\":{\"resources\":{\"memory\":{\"limit\":8589934592,\"swap\":-1},\"pids\":{\"limit\":100000},\"cpu\":{\"quota\":400000,\"period\":100000}}}}", "runc", NULL, false, NULL, lowered_looser_limits, "hardened"},
    {"unlimited rlimit", NULL, "{\"process\":{\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":18446744073709551615,\"soft\":18446744073709551615}]}}", "runc", NULL, false, NULL, defaults_runc, "hardened"},
    {"oom killer off, negative score", NULL, "{\"process\":{\"oomScoreAdj\":-500},\"linux\":{\"resources\":{\"memory\":{\"disableOOMKiller\":true}}}}", "runc", NULL, false, NULL, oom_settings, "hardened"},
    /* seccomp */
    {"no seccomp in input", NULL, NULL, "runc", NULL, false, NULL, seccomp_ours, "hardened"},
    {"input blocklist intersected", NULL, "{\"linux\":{\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"flags\":[\"SECCOMP_FILTER_FLAG_SPEC_ALLOW\"],\"syscalls\":[{\"names\":[\"chmod\"],\"action\":\"SCMP_ACT_ERRNO\"}]}}}", "runc", NULL, false, NULL, seccomp_intersected, "hardened"},
    {"input allowlist intersected", NULL, "{\"linux\":{\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"architectures\":[\"SCMP_ARCH_X86_64\"],\"syscalls\":[{\"names\":[\"read\",\"write\",\"exit_group\",\"mount\"],\"action\":\"SCMP_ACT_ALLOW\"}]}}}", "runsc", NULL, false, NULL, seccomp_allowlist_input, "hardened"},
    {"seccomp without defaultAction", NULL, "{\"linux\":{\"seccomp\":{\"syscalls\":[]}}}", "runc", NULL, false, "defaultAction", NULL, NULL},
    /* namespaces */
    {"network namespace added (runc)", NULL, NS_WITHOUT_NET, "runc", NULL, false, NULL, netns_added, "hardened"},
    {"network namespace added (runsc)", NULL, NS_WITHOUT_NET, "runsc", NULL, false, NULL, netns_added, "hardened"},
    /* Docker's --network host names the host's namespace by path: a
     * profile without network gives a new one instead (and says so). */
    {"host network namespace path", NULL, "{\"linux\":{\"namespaces\":[{\"type\":\"network\",\"path\":\"/proc/self/ns/net\"}]}}", "runc", NULL, false, NULL, network_path_dropped, "hardened"},
    {"host network namespace path, relaxed", NULL, "{\"linux\":{\"namespaces\":[{\"type\":\"network\",\"path\":\"/proc/self/ns/net\"}]}}", "runc", "relaxed", false, NULL, network_path_dropped, "relaxed"},
    {"pid 1's namespace path", NULL, "{\"linux\":{\"namespaces\":[{\"type\":\"uts\",\"path\":\"/proc/1/ns/uts\"}]}}", "runsc", NULL, false, "linux.namespaces[0]", NULL, NULL},
    {"host pid namespace path", NULL, "{\"linux\":{\"namespaces\":[{\"type\":\"pid\",\"path\":\"/proc/self/ns/pid\"}]}}", "runc", NULL, false, "host's pid namespace", NULL, NULL},
    {"missing namespace path", NULL, "{\"linux\":{\"namespaces\":[{\"type\":\"ipc\",\"path\":\"/nonexistent/ns\"}]}}", "runc", NULL, false, "cannot check ipc namespace path", NULL, NULL},
    /* CVE-2024-21626 shapes */
    {"cwd /proc/self/fd", NULL, "{\"process\":{\"cwd\":\"/proc/self/fd/7\"}}", "runc", NULL, false, "CVE-2024-21626", NULL, NULL},
    {"cwd /proc/<pid>/fd", NULL, "{\"process\":{\"cwd\":\"/proc/1/fd/3\"}}", "runsc", NULL, false, "CVE-2024-21626", NULL, NULL},
    {"cwd /proc/thread-self/fd", NULL, "{\"process\":{\"cwd\":\"/proc/thread-self/fd/8/..\"}}", "runc", NULL, false, "CVE-2024-21626", NULL, NULL},
    {"cwd via dot-dot", NULL, "{\"process\":{\"cwd\":\"//proc/./self/../self/fd/5\"}}", "runc", NULL, false, "CVE-2024-21626", NULL, NULL},
    {"cwd /dev/fd", NULL, "{\"process\":{\"cwd\":\"/dev/fd/9\"}}", "runc", NULL, false, "CVE-2024-21626", NULL, NULL},
    {"cwd fdinfo is fine", NULL, "{\"process\":{\"cwd\":\"/proc/self/fdinfo\"}}", "runc", NULL, false, NULL, defaults_runc, "hardened"},
    {"mount source /proc/self/fd", NULL, "{\"mounts\":[{\"destination\":\"/x\",\"type\":\"bind\",\"source\":\"/proc/self/fd/5\",\"options\":[\"rbind\"]}]}", "runc", NULL, false, "CVE-2024-21626", NULL, NULL},
    /* host sockets and host trees */
    {"docker.sock", NULL, "{\"mounts\":[{\"destination\":\"/var/run/docker.sock\",\"type\":\"bind\",\"source\":\"/var/run/docker.sock\",\"options\":[\"rbind\"]}]}", "runc", NULL, false, "host socket", NULL, NULL},
    {"containerd socket dir", NULL, "{\"mounts\":[{\"destination\":\"/c\",\"source\":\"/run/containerd\",\"options\":[\"rbind\",\"rw\"]}]}", "runc", NULL, false, "would expose", NULL, NULL},
    {"all of /run", NULL, "{\"mounts\":[{\"destination\":\"/hostrun\",\"type\":\"bind\",\"source\":\"/run\",\"options\":[\"rbind\"]}]}", "runc", NULL, false, "would expose", NULL, NULL},
    {"host root", NULL, "{\"mounts\":[{\"destination\":\"/host\",\"type\":\"bind\",\"source\":\"/\",\"options\":[\"rbind\"]}]}", "runc", NULL, false, "would expose", NULL, NULL},
    {"host /proc/sys", NULL, "{\"mounts\":[{\"destination\":\"/hs\",\"type\":\"bind\",\"source\":\"/proc/sys\",\"options\":[\"bind\"]}]}", "runc", NULL, false, "host's /proc", NULL, NULL},
    {"block device fs", NULL, "{\"mounts\":[{\"destination\":\"/disk\",\"type\":\"ext4\",\"source\":\"/dev/sda1\"}]}", "runc", NULL, false, "filesystem type ext4", NULL, NULL},
    /* devices */
    {"disk device", NULL, "{\"linux\":{\"devices\":[{\"path\":\"/dev/sda\",\"type\":\"b\",\"major\":8,\"minor\":0}]}}", "runc", NULL, false, "/dev/sda is not allowed", NULL, NULL},
    {"null with a disk's numbers", NULL, "{\"linux\":{\"devices\":[{\"path\":\"/dev/null\",\"type\":\"b\",\"major\":8,\"minor\":0}]}}", "runc", NULL, false, "must be a character device 1:3", NULL, NULL},
    {"tty not in strict", NULL, "{\"linux\":{\"devices\":[{\"path\":\"/dev/tty\",\"type\":\"c\",\"major\":5,\"minor\":0}]}}", "runc", "strict", false, "not allowed by profile strict", NULL, NULL},
    /* sysctls */
    {"unsafe sysctl", NULL, "{\"linux\":{\"sysctl\":{\"kernel.core_pattern\":\"|/tmp/x\"}}}", "runc", NULL, false, "kernel.core_pattern", NULL, NULL},
    {"safe sysctl", NULL, "{\"linux\":{\"sysctl\":{\"net.ipv4.ip_unprivileged_port_start\":\"0\"}}}", "runc", NULL, false, NULL, safe_sysctl_kept, "hardened"},
    /* profiles and the annotation rule */
    {"annotation picks stricter", NULL, "{\"annotations\":{\"dev.tollgate.profile\":\"strict\"}}", "runc", NULL, false, NULL, strict_applied, "strict"},
    {"annotation picks same", NULL, "{\"annotations\":{\"dev.tollgate.profile\":\"hardened\"}}", "runc", NULL, false, NULL, defaults_runc, "hardened"},
    {"annotation picks looser", NULL, "{\"annotations\":{\"dev.tollgate.profile\":\"relaxed\"}}", "runc", NULL, false, "asks for a looser profile", NULL, NULL},
    {"annotation picks passthrough", NULL, "{\"annotations\":{\"dev.tollgate.profile\":\"passthrough\"}}", "runc", NULL, true, "asks for a looser profile", NULL, NULL},
    {"annotation path traversal", NULL, "{\"annotations\":{\"dev.tollgate.profile\":\"../../etc/passwd\"}}", "runc", NULL, false, "not a plain name", NULL, NULL},
    {"annotation unknown profile", NULL, "{\"annotations\":{\"dev.tollgate.profile\":\"nosuch\"}}", "runc", NULL, false, "nosuch", NULL, NULL},
    {"annotation stricter than relaxed host", NULL, "{\"annotations\":{\"dev.tollgate.profile\":\"hardened\"}}", "runc", "relaxed", false, NULL, defaults_runc, "hardened"},
    {"annotation not a string", NULL, "{\"annotations\":{\"dev.tollgate.profile\":7}}", "runc", NULL, false, "must be a string", NULL, NULL},
    {"annotation hardens a passthrough host", NULL, "{\"annotations\":{\"dev.tollgate.profile\":\"hardened\"}}", "runc", "passthrough", true, NULL, defaults_runc, "hardened"},
    {"workload forges profile-applied", NULL, "{\"annotations\":{\"dev.tollgate.profile-applied\":\"passthrough\"}}", "runc", NULL, false, NULL, defaults_runc, "hardened"},
    {"gvisor annotations stripped", NULL, "{\"annotations\":{\"dev.gvisor.spec.mount.x.source\":\"/var/run\",\"dev.gvisor.internal.nvproxy\":\"true\"}}", "runsc", NULL, false, NULL, defaults_runsc, "hardened"},
    {"passthrough host profile", "ctr-run-config.json", NULL, "runc", "passthrough", true, NULL, passthrough_untouched, "passthrough"},
    {"passthrough not allowed", NULL, NULL, "runc", "passthrough", false, "allow_passthrough is false", NULL, NULL},
    {"passthrough keeps escapes as written", NULL, "{\"linux\":{\"sysctl\":{\"kernel.core_pattern\":\"x\"}}}", "runsc", "passthrough", true, NULL, passthrough_untouched, "passthrough"},
};

static json_t *case_input(const struct hcase *c) {
  json_t *cfg = load_fixture(c->fixture ? c->fixture : "runc-spec-config.json");
  if (c->patch) {
    json_t *patch = parse_or_die(c->patch);
    merge_into(cfg, patch);
    json_free(patch);
  }
  return cfg;
}

static struct harden_options case_opts(const struct hcase *c) {
  struct harden_options o = {.profile = c->profile ? c->profile : "hardened",
                             .profiles_dir = PROFILES_DIR,
                             .seccomp_dir = SECCOMP_DIR,
                             .allow_passthrough = c->allow_passthrough,
                             .backend = c->backend ? c->backend : "runsc"};
  return o;
}

Test(oci_harden, table_has_enough_inputs) { cr_assert_geq(sizeof cases / sizeof cases[0], 30); }

Test(oci_harden, every_case) {
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const struct hcase *c = &cases[i];
    json_t *in = case_input(c);
    json_t *out = json_copy(in);
    struct harden_options o = case_opts(c);
    struct harden_result res = {0};
    tg_error *err = NULL;
    int r = oci_harden(out, &o, &res, &err);
    if (c->error) {
      cr_expect_eq(r, -1, "%s: expected an error containing \"%s\"", c->name, c->error);
      if (r < 0)
        cr_expect(strstr(err->msg, c->error) != NULL, "%s: error \"%s\" lacks \"%s\"", c->name, err->msg, c->error);
    } else {
      cr_expect_eq(r, 0, "%s: unexpected error: %s", c->name, err ? err->msg : "");
      if (r == 0) {
        cr_expect_str_eq(res.profile, c->applied, "%s: applied profile", c->name);
        cr_expect_eq(res.passthrough, strcmp(c->applied, "passthrough") == 0, "%s: passthrough flag", c->name);
        /* Nothing of tollgate's in the annotations: they reach hooks. */
        const json_t *ann = json_object_get(out, "annotations");
        for (size_t k = 0; json_is(ann, JSON_OBJECT) && k < ann->u.object.len; k++)
          cr_expect(strncmp(ann->u.object.keys[k], "dev.tollgate.", 13) != 0 ||
                        json_object_get(json_object_get(in, "annotations"), ann->u.object.keys[k]) != NULL,
                    "%s: tollgate added annotation %s", c->name, ann->u.object.keys[k]);
        assert_not_looser(c->name, in, out);
        if (c->check)
          c->check(in, out);
        /* idempotent: a hardened config hardens to itself */
        json_t *again = json_copy(out);
        struct harden_result res2 = {0};
        tg_error *err2 = NULL;
        cr_expect_eq(oci_harden(again, &o, &res2, &err2), 0, "%s: second pass: %s", c->name, err2 ? err2->msg : "");
        if (strcmp(c->applied, "passthrough") != 0)
          cr_expect(json_equal(again, out), "%s: hardening twice differs:\n%s\n%s", c->name, json_dump(out, false, NULL),
                    json_dump(again, false, NULL));
        harden_result_free(&res2);
        tg_error_free(&err2);
        json_free(again);
      }
    }
    harden_result_free(&res);
    tg_error_free(&err);
    json_free(in);
    json_free(out);
  }
}

/* ---- exec processes ------------------------------------------------------ */

Test(oci_harden, exec_process_gets_nothing_more) {
  json_t *cfg = load_fixture("ctr-run-config.json");
  struct hcase c = {.backend = "runc"};
  struct harden_options o = case_opts(&c);
  struct harden_result res = {0};
  tg_error *err = NULL;
  cr_assert_eq(oci_harden(cfg, &o, &res, &err), 0, "%s", err ? err->msg : "");
  json_t *p = parse_or_die("{\"args\":[\"sh\"],\"cwd\":\"/\",\"user\":{\"uid\":0,\"gid\":0,\"additionalGids\":[0]},"
                           "\"capabilities\":{\"bounding\":[\"CAP_SYS_ADMIN\"],\"effective\":[\"CAP_SYS_ADMIN\"]},"
                           "\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":65536,\"soft\":65536}]}");
  cr_assert_eq(oci_harden_process(p, cfg, false, &err), 0, "%s", err ? err->msg : "");
  cr_expect_eq(json_array_len(json_get_path(p, "capabilities.bounding")), 0);
  cr_expect_eq(json_array_len(json_get_path(p, "capabilities.effective")), 0);
  cr_expect_eq(json_array_len(json_get_path(p, "capabilities.ambient")), 0);
  cr_expect(json_is_true(json_object_get(p, "noNewPrivileges")));
  cr_expect_eq(ll_at(p, "user.uid", 0), 65534);
  cr_expect_null(json_get_path(p, "user.additionalGids"));
  const json_t *rl = json_object_get(p, "rlimits");
  bool nofile = false, nproc = false;
  for (size_t i = 0; i < json_array_len(rl); i++) {
    const char *t = json_string_value(json_object_get(json_array_get(rl, i), "type"));
    if (strcmp(t, "RLIMIT_NOFILE") == 0)
      nofile = ll_at(json_array_get(rl, i), "hard", 0) == 1024;
    if (strcmp(t, "RLIMIT_NPROC") == 0)
      nproc = true;
  }
  cr_expect(nofile && nproc);
  json_free(p);
  p = parse_or_die("{\"args\":[\"sh\"],\"cwd\":\"/proc/self/fd/4\"}");
  cr_expect_eq(oci_harden_process(p, cfg, false, &err), -1);
  cr_expect(err && strstr(err->msg, "CVE-2024-21626"));
  tg_error_free(&err);
  json_free(p);
  json_free(cfg);
  harden_result_free(&res);
}

/* ---- the loopback-only network check -------------------------------------- */

/* A child in a fresh network namespace (only lo) that waits to be killed. */
static pid_t child_in_new_netns(void) {
  int fds[2];
  cr_assert_eq(pipe(fds), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    char ok = unshare(CLONE_NEWNET) == 0 ? 'y' : 'n';
    (void)!write(fds[1], &ok, 1);
    pause();
    _exit(0);
  }
  close(fds[1]);
  char ok = 0;
  cr_assert_eq(read(fds[0], &ok, 1), 1);
  close(fds[0]);
  cr_assert_eq(ok, 'y', "unshare(CLONE_NEWNET) failed (tests run as root)");
  return pid;
}

static void reap(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

Test(oci_netcheck, fresh_namespace_passes) {
  pid_t pid = child_in_new_netns();
  tg_error *err = NULL;
  int r = oci_check_netns_loopback_only(pid, &err);
  reap(pid);
  cr_expect_eq(r, 0, "%s", err ? err->msg : "");
  tg_error_free(&err);
}

Test(oci_netcheck, host_namespace_fails) {
  tg_error *err = NULL;
  cr_expect_eq(oci_check_netns_loopback_only(getpid(), &err), -1);
  cr_expect(err && strstr(err->msg, "shares the host network namespace"), "%s", err ? err->msg : "");
  tg_error_free(&err);
}

Test(oci_netcheck, extra_interface_fails) {
  pid_t pid = child_in_new_netns();
  char *cmd = xasprintf("nsenter -t %d -n ip link add tgveth0 type veth peer name tgveth1 2>/dev/null", (int)pid);
  int added = system(cmd);
  free(cmd);
  if (added != 0) {
    reap(pid);
    cr_skip_test("cannot create a veth pair here (ip/nsenter/veth missing)");
  }
  tg_error *err = NULL;
  int r = oci_check_netns_loopback_only(pid, &err);
  reap(pid);
  cr_expect_eq(r, -1);
  cr_expect(err && strstr(err->msg, "tgveth0") && strstr(err->msg, "besides lo"), "%s", err ? err->msg : "");
  tg_error_free(&err);
}

Test(oci_netcheck, bad_pid_fails) {
  tg_error *err = NULL;
  cr_expect_eq(oci_check_netns_loopback_only(0, &err), -1);
  tg_error_free(&err);
  cr_expect_eq(oci_check_netns_loopback_only(999999999, &err), -1);
  tg_error_free(&err);
}
