/* oci_harden(): table-driven.  Every case is a config (the `runc spec`
 * default, or the ctr-run fixture, plus a patch), a backend and a host
 * profile, and either an expected error or per-field expectations.  For
 * every case that succeeds, the "only tighter" property is checked on
 * every axis by an implementation independent of oci/tighter.c, and
 * hardening twice must give the same config as hardening once. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oci/harden.h"
#include "oci/profile.h"
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

static void one_size_option(const json_t *out, const char *dst, const char *want) {
  const json_t *opts = json_object_get(mount_at(out, dst), "options");
  size_t n = 0;
  for (size_t i = 0; i < json_array_len(opts); i++) {
    const char *o = json_string_value(json_array_get(opts, i));
    n += strncmp(o, "size=", 5) == 0 || strncmp(o, "nr_blocks=", 10) == 0;
  }
  cr_expect_eq(n, 1, "%s: one size option, not %zu", dst, n);
  cr_expect(str_in(opts, want), "%s: %s", dst, want);
}

static void dup_sizes_capped(const json_t *in, const json_t *out) {
  (void)in;
  one_size_option(out, "/tmp", "size=64m");
  one_size_option(out, "/dev/shm", "size=64m");
}

static void conflicting_flags_tightest(const json_t *in, const json_t *out) {
  (void)in;
  struct oci_mount_flags f;
  oci_mount_flags(mount_at(out, "/tmp"), &f);
  cr_expect(f.nosuid && f.nodev && f.noexec, "/tmp: nosuid,nodev,noexec after suid/dev/exec/defaults");
  oci_mount_flags(mount_at(out, "/data"), &f);
  cr_expect(f.nosuid && f.nodev, "/data: nosuid,nodev after rsuid/rdev");
  cr_expect(f.ro, "/data: ro,rw resolves to ro");
  cr_expect(f.noexec, "/data: noexec,exec resolves to noexec");
}

static void relative_source_in_bundle(const json_t *in, const json_t *out) {
  (void)in;
  cr_expect_str_eq(json_string_value(json_object_get(mount_at(out, "/data"), "source")), "data",
                   "the source stays as written; create pins it");
}

static void cgroup_at_its_place(const json_t *in, const json_t *out) {
  (void)in;
  cr_expect_not_null(mount_at(out, "/sys/fs/cgroup"));
}


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
  cr_expect_eq(ll_at(out, "linux.resources.pids.limit", 0), 8192, "runsc: the host bounds the Sentry's tasks, 64 per guest process");
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
  /* memory: the caller's own limit stands (no ceiling in this table) */
  cr_expect_eq(ll_at(out, "linux.resources.memory.limit", 0), 8LL << 30);
  cr_expect_eq(ll_at(out, "linux.resources.pids.limit", 0), 256);
  cr_expect_eq(oci_cpu_millis(out), 1000);
  cr_expect_eq(rlimit_of(out, "RLIMIT_NOFILE"), 1024);
  cr_expect_eq(ll_at(out, "linux.resources.memory.swap", 0), 8LL << 30, "no swap");
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
    /* ... but a network path of another type is refused first, on the
     * config as it came in, not dropped unseen (issue 38). */
    {"network path of a pid namespace (runc)", NULL, "{\"linux\":{\"namespaces\":[{\"type\":\"network\",\"path\":\"/proc/self/ns/pid\"}]}}", "runc", NULL, false, "/proc/self/ns/pid is a pid namespace, given as \"type\": \"network\"", NULL, NULL},
    {"network path of a pid namespace (runsc)", NULL, "{\"linux\":{\"namespaces\":[{\"type\":\"network\",\"path\":\"/proc/self/ns/pid\"}]}}", "runsc", NULL, false, "/proc/self/ns/pid is a pid namespace, given as \"type\": \"network\"", NULL, NULL},
    {"network path that is no namespace", NULL, "{\"linux\":{\"namespaces\":[{\"type\":\"network\",\"path\":\"/etc/hostname\"}]}}", "runsc", NULL, false, "/etc/hostname is not a namespace file", NULL, NULL},
    {"pid 1's namespace path", NULL, "{\"linux\":{\"namespaces\":[{\"type\":\"uts\",\"path\":\"/proc/1/ns/uts\"}]}}", "runsc", NULL, false, "linux.namespaces[0]", NULL, NULL},
    {"host pid namespace path", NULL, "{\"linux\":{\"namespaces\":[{\"type\":\"pid\",\"path\":\"/proc/self/ns/pid\"}]}}", "runc", NULL, false, "host's pid namespace", NULL, NULL},
    /* An unknown namespace type, with or without a path, is refused naming
     * it (escaped: a Cf character would hide in the message) and the known
     * types; a runtime would fail on it or skip it. */
    {"namespace type with a Cf character", NULL, "{\"linux\":{\"namespaces\":[{\"type\":\"mount\"},{\"type\":\"pid\\u202ex\"}]}}", "runc", NULL, false,
     "linux.namespaces[1]: unknown namespace type \"pid\\u202ex\"; use one of pid, network, mount, ipc, uts, user, cgroup, time", NULL, NULL},
    {"namespace type with a Cf character (runsc)", NULL, "{\"linux\":{\"namespaces\":[{\"type\":\"pid\\u202ex\"}]}}", "runsc", NULL, false,
     "linux.namespaces[0]: unknown namespace type \"pid\\u202ex\"", NULL, NULL},
    {"unknown namespace type with a path", NULL, "{\"linux\":{\"namespaces\":[{\"type\":\"net\",\"path\":\"/proc/self/ns/net\"}]}}", "runc", NULL, false,
     "linux.namespaces[0]: unknown namespace type \"net\"; use one of pid, network,", NULL, NULL},
    {"namespace type not a string", NULL, "{\"linux\":{\"namespaces\":[{\"type\":7}]}}", "runc", NULL, false,
     "linux.namespaces[0]: \"type\" must be a string naming the namespace: one of pid, network,", NULL, NULL},
    {"namespace without a type", NULL, "{\"linux\":{\"namespaces\":[{\"path\":\"/proc/self/ns/ipc\"}]}}", "runsc", NULL, false,
     "linux.namespaces[0]: \"type\" must be a string", NULL, NULL},
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
    {"host root", NULL, "{\"mounts\":[{\"destination\":\"/host\",\"type\":\"bind\",\"source\":\"/\",\"options\":[\"rbind\"]}]}", "runc", NULL, false, "host's root directory", NULL, NULL},
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

    /* ---- issue 15: duplicate and conflicting mount options -------------- */
    {"duplicate size options", NULL, "{\"mounts\":[{\"destination\":\"/tmp\",\"type\":\"tmpfs\",\"source\":\"tmpfs\",\"options\":[\"size=1m\",\"size=4g\"]},{\"destination\":\"/dev/shm\",\"type\":\"tmpfs\",\"source\":\"shm\",\"options\":[\"size=64m\",\"nr_blocks=4194304\"]}]}", "runc", NULL, false, NULL, dup_sizes_capped, "hardened"},
    {"size after a percentage", NULL, "{\"mounts\":[{\"destination\":\"/tmp\",\"type\":\"tmpfs\",\"source\":\"tmpfs\",\"options\":[\"size=8m\",\"size=50%\"]},{\"destination\":\"/dev/shm\",\"type\":\"tmpfs\",\"source\":\"shm\",\"options\":[\"size=8g\"]}]}", "runsc", NULL, false, NULL, dup_sizes_capped, "hardened"},
    {"conflicting flags resolve to the tightest", NULL, "{\"mounts\":[{\"destination\":\"/tmp\",\"type\":\"tmpfs\",\"source\":\"tmpfs\",\"options\":[\"nosuid\",\"suid\",\"noexec\",\"exec\",\"nodev\",\"defaults\"]},{\"destination\":\"/data\",\"type\":\"bind\",\"source\":\"/srv/data\",\"options\":[\"rbind\",\"ro\",\"rw\",\"noexec\",\"exec\",\"nosuid\",\"rsuid\",\"rdev\"]}]}", "runc", NULL, false, NULL, conflicting_flags_tightest, "hardened"},
    /* ---- issue 15: kernel filesystems at their place, once --------------- */
    {"second procfs", NULL, "{\"mounts\":[{\"destination\":\"/proc\",\"type\":\"proc\",\"source\":\"proc\"},{\"destination\":\"/p2\",\"type\":\"proc\",\"source\":\"proc\"}]}", "runc", NULL, false, "a proc filesystem may only be mounted at /proc, not at /p2", NULL, NULL},
    {"procfs twice at /proc", NULL, "{\"mounts\":[{\"destination\":\"/proc\",\"type\":\"proc\",\"source\":\"proc\"},{\"destination\":\"/proc/\",\"type\":\"proc\",\"source\":\"proc\"}]}", "runsc", NULL, false, "a second proc mount at /proc", NULL, NULL},
    {"sysfs elsewhere", NULL, "{\"mounts\":[{\"destination\":\"/s2\",\"type\":\"sysfs\",\"source\":\"sysfs\"}]}", "runc", NULL, false, "a sysfs filesystem may only be mounted at /sys", NULL, NULL},
    {"mqueue elsewhere", NULL, "{\"mounts\":[{\"destination\":\"/mq\",\"type\":\"mqueue\",\"source\":\"mqueue\"}]}", "runc", NULL, false, "only be mounted at /dev/mqueue", NULL, NULL},
    {"devpts elsewhere", NULL, "{\"mounts\":[{\"destination\":\"/pts\",\"type\":\"devpts\",\"source\":\"devpts\"}]}", "runsc", NULL, false, "only be mounted at /dev/pts", NULL, NULL},
    {"cgroup and cgroup2 both", NULL, "{\"mounts\":[{\"destination\":\"/sys/fs/cgroup\",\"type\":\"cgroup\",\"source\":\"cgroup\"},{\"destination\":\"/sys/fs/cgroup\",\"type\":\"cgroup2\",\"source\":\"cgroup\"}]}", "runc", NULL, false, "a second cgroup2 mount", NULL, NULL},
    {"cgroup at its place", NULL, "{\"mounts\":[{\"destination\":\"/sys/fs/cgroup\",\"type\":\"cgroup\",\"source\":\"cgroup\",\"options\":[\"ro\"]}]}", "runc", NULL, false, NULL, cgroup_at_its_place, "hardened"},
    /* ---- issue 15: root.path and relative sources ------------------------ */
    {"root.path /", NULL, "{\"root\":{\"path\":\"/\"}}", "runc", NULL, false, "root.path: / is the host's root directory", NULL, NULL},
    {"root.path //.", NULL, "{\"root\":{\"path\":\"//.\"}}", "runsc", NULL, false, "host's root directory", NULL, NULL},
    {"root.path /etc", NULL, "{\"root\":{\"path\":\"/etc\"}}", "runc", NULL, false, "would expose /etc/shadow", NULL, NULL},
    {"root.path /var", NULL, "{\"root\":{\"path\":\"/var\"}}", "runc", NULL, false, "would expose /var/run/docker.sock", NULL, NULL},
    {"root.path under /proc", NULL, "{\"root\":{\"path\":\"/proc/1/root\"}}", "runc", NULL, false, "exposes the host's /proc", NULL, NULL},
    {"root.path relative link to /", NULL, "{\"root\":{\"path\":\"hostroot\"}}", "runsc", NULL, false, "root.path: hostroot is the host's root directory (after resolving it)", NULL, NULL},
    {"root.path link and dot-dot", NULL, "{\"root\":{\"path\":\"up/../..\"}}", "runc", NULL, false, "root.path: up/../.. (", NULL, NULL},
    {"root.path /etc via a link", NULL, "{\"root\":{\"path\":\"etc-link\"}}", "runc", NULL, false, "would expose /etc/shadow", NULL, NULL},
    {"relative bind source linking to /", NULL, "{\"mounts\":[{\"destination\":\"/h\",\"type\":\"bind\",\"source\":\"hostroot\",\"options\":[\"rbind\",\"ro\"]}]}", "runc", NULL, false, "mounts[0] (bind source): hostroot is the host's root directory", NULL, NULL},
    {"relative bind source climbing out", NULL, "{\"mounts\":[{\"destination\":\"/h\",\"type\":\"bind\",\"source\":\"../../../../../../../../..\",\"options\":[\"rbind\"]}]}", "runsc", NULL, false, "host's root directory", NULL, NULL},
    {"relative bind source to /etc", NULL, "{\"mounts\":[{\"destination\":\"/h\",\"type\":\"bind\",\"source\":\"etc-link\",\"options\":[\"rbind\"]}]}", "runc", NULL, false, "would expose /etc/shadow", NULL, NULL},
    {"relative bind source in the bundle", NULL, "{\"mounts\":[{\"destination\":\"/data\",\"type\":\"bind\",\"source\":\"data\",\"options\":[\"rbind\",\"ro\"]}]}", "runc", NULL, false, NULL, relative_source_in_bundle, "hardened"},
    /* ---- issue 15: capabilities ------------------------------------------ */
    {"unknown capability", NULL, "{\"process\":{\"capabilities\":{\"bounding\":[\"CAP_CHOWN\",\"CAP_TEST\"]}}}", "runc", NULL, false, "process.capabilities.bounding[1]: unknown capability \"CAP_TEST\"", NULL, NULL},
    {"lower-case capability", NULL, "{\"process\":{\"capabilities\":{\"ambient\":[\"cap_chown\"]}}}", "runsc", NULL, false, "unknown capability \"cap_chown\"", NULL, NULL},
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

/* The bundle directory every case resolves against, made once: rootfs/
 * and data/ are directories, hostroot and etc-link are links out of it
 * (the relative-source shape), and a fake tollgate root holds a state
 * directory (0700, state.json) beside a plain bundles/ directory. */
static char unit_dir[64];
static pid_t unit_dir_owner;
static void unit_dirs(void) {
  if (unit_dir[0])
    return;
  strcpy(unit_dir, "/tmp/tg-unit-bundle.XXXXXX");
  cr_assert_not_null(mkdtemp(unit_dir));
  unit_dir_owner = getpid();
  const char *cmd_fmt = "cd %s && mkdir -p bundle/rootfs bundle/data root/c1 root/bundles/b/rootfs audit && "
                        "chmod 700 root/c1 && touch root/c1/state.json && ln -s / bundle/hostroot && "
                        "ln -s /etc bundle/etc-link && ln -s ../.. bundle/up";
  char *cmd = xasprintf(cmd_fmt, unit_dir);
  cr_assert_eq(system(cmd), 0);
  free(cmd);
}

/* Criterion runs each test in its own process: each removes its own. */
__attribute__((destructor)) static void unit_dirs_remove(void) {
  if (unit_dir[0] && unit_dir_owner == getpid()) {
    char *cmd = xasprintf("rm -rf '%s'", unit_dir);
    if (system(cmd) != 0)
      fprintf(stderr, "could not remove %s\n", unit_dir);
    free(cmd);
  }
}

static char bundle_dir[96], root_dir[96], audit_dir[96];
static struct harden_options case_opts(const struct hcase *c) {
  unit_dirs();
  snprintf(bundle_dir, sizeof bundle_dir, "%s/bundle", unit_dir);
  snprintf(root_dir, sizeof root_dir, "%s/root", unit_dir);
  snprintf(audit_dir, sizeof audit_dir, "%s/audit", unit_dir);
  struct harden_options o = {.profile = c->profile ? c->profile : "hardened",
                             .profiles_dir = PROFILES_DIR,
                             .seccomp_dir = SECCOMP_DIR,
                             .allow_passthrough = c->allow_passthrough,
                             .backend = c->backend ? c->backend : "runsc",
                             .bundle_dir = bundle_dir,
                             .state_root = root_dir,
                             .audit_dir = audit_dir};
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


/* ---- issue 15: tollgate's own directories, exec and update inputs ------- */

static int harden_with_root(const char *root_path, tg_error **err) {
  struct hcase c = {.backend = "runc"};
  struct harden_options o = case_opts(&c);
  json_t *cfg = load_fixture("runc-spec-config.json");
  json_object_set(json_object_ensure_object(cfg, "root"), "path", json_new_string(root_path));
  struct harden_result res = {0};
  int r = oci_harden(cfg, &o, &res, err);
  harden_result_free(&res);
  json_free(cfg);
  return r;
}

Test(oci_harden, root_path_never_tollgates_own) {
  struct hcase c = {0};
  (void)case_opts(&c);
  struct {
    const char *rel, *error; /* NULL error: accepted */
  } t[] = {
      {"root", "is tollgate's state root"},
      {"", "contains tollgate's state root"},
      {"root/c1", "is inside tollgate's state root"},
      {"root/c1/pins/rootfs", "is inside tollgate's state root"},
      {"audit", "is tollgate's audit directory"},
      {"audit/x", "is inside tollgate's audit directory"},
      {"root/bundles/b/rootfs", NULL},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    char *path = xasprintf("%s/%s", unit_dir, t[i].rel);
    tg_error *err = NULL;
    int r = harden_with_root(path, &err);
    if (t[i].error)
      cr_expect(r < 0 && strstr(err->msg, t[i].error), "%s: want \"%s\", got %s", path, t[i].error, err ? err->msg : "success");
    else
      cr_expect_eq(r, 0, "%s: %s", path, err ? err->msg : "");
    tg_error_free(&err);
    free(path);
  }
}

static json_t *hardened_container(const char *patch) {
  json_t *cfg = load_fixture("ctr-run-config.json");
  if (patch) {
    json_t *p = parse_or_die(patch);
    merge_into(cfg, p);
    json_free(p);
  }
  struct hcase c = {.backend = "runc"};
  struct harden_options o = case_opts(&c);
  struct harden_result res = {0};
  tg_error *err = NULL;
  cr_assert_eq(oci_harden(cfg, &o, &res, &err), 0, "%s", err ? err->msg : "");
  harden_result_free(&res);
  return cfg;
}

/* Table: an exec request, and what must hold after oci_harden_process. */
Test(oci_harden, exec_inputs_never_looser) {
  json_t *cfg = hardened_container("{\"process\":{\"apparmorProfile\":\"tollgate-default\",\"oomScoreAdj\":100}}");
  struct {
    const char *name, *process, *error;
    long long gid;        /* expected user.gid, -1 = do not check */
    bool no_group0;
  } t[] = {
      {"--user 65534:0", "{\"args\":[\"id\"],\"cwd\":\"/\",\"user\":{\"uid\":65534,\"gid\":0}}", NULL, 65534, true},
      {"additionalGids 0,4,27", "{\"args\":[\"id\"],\"cwd\":\"/\",\"user\":{\"uid\":65534,\"gid\":65534,\"additionalGids\":[0,4,27]}}", NULL, 65534, true},
      {"uid 0 gid 0", "{\"args\":[\"id\"],\"cwd\":\"/\",\"user\":{\"uid\":0,\"gid\":0,\"additionalGids\":[0]}}", NULL, 65534, true},
      {"no user at all", "{\"args\":[\"id\"],\"cwd\":\"/\"}", NULL, 65534, true},
      {"apparmor unconfined", "{\"args\":[\"id\"],\"cwd\":\"/\",\"apparmorProfile\":\"unconfined\",\"selinuxLabel\":\"system_u:system_r:spc_t:s0\"}", NULL, -1, true},
      {"oomScoreAdj -1000", "{\"args\":[\"id\"],\"cwd\":\"/\",\"oomScoreAdj\":-1000}", NULL, -1, true},
      {"unknown capability", "{\"args\":[\"id\"],\"cwd\":\"/\",\"capabilities\":{\"effective\":[\"CAP_TEST\"]}}", "unknown capability \"CAP_TEST\"", -1, true},
      {"cwd through /proc fd", "{\"args\":[\"id\"],\"cwd\":\"/proc/self/fd/3\"}", "CVE-2024-21626", -1, true},
      {"all capabilities", "{\"args\":[\"id\"],\"cwd\":\"/\",\"capabilities\":{\"bounding\":[\"CAP_SYS_ADMIN\",\"CAP_NET_RAW\"],\"ambient\":[\"CAP_SYS_ADMIN\"]}}", NULL, -1, true},
      {"rlimits raised", "{\"args\":[\"id\"],\"cwd\":\"/\",\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":1048576,\"soft\":1048576}]}", NULL, -1, true},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    json_t *p = parse_or_die(t[i].process);
    json_t *asked = json_copy(p);
    tg_error *err = NULL;
    int r = oci_harden_process(p, cfg, false, &err);
    if (t[i].error) {
      cr_expect(r < 0 && strstr(err->msg, t[i].error), "%s: want \"%s\", got %s", t[i].name, t[i].error, err ? err->msg : "success");
    } else {
      cr_expect_eq(r, 0, "%s: %s", t[i].name, err ? err->msg : "");
      if (t[i].gid >= 0)
        cr_expect_eq(ll_at(p, "user.gid", 0), t[i].gid, "%s: gid", t[i].name);
      cr_expect_neq(ll_at(p, "user.gid", 0), 0, "%s: gid 0", t[i].name);
      cr_expect_neq(ll_at(p, "user.uid", 0), 0, "%s: uid 0", t[i].name);
      const json_t *g = json_get_path(p, "user.additionalGids");
      for (size_t k = 0; k < json_array_len(g); k++) {
        long long x = -1;
        cr_expect(json_integer_value(json_array_get(g, k), &x) && x != 0, "%s: group 0 kept", t[i].name);
      }
      cr_expect_str_eq(json_string_value(json_object_get(p, "apparmorProfile")), "tollgate-default", "%s: label", t[i].name);
      cr_expect_null(json_object_get(p, "selinuxLabel"), "%s: selinux label", t[i].name);
      cr_expect_geq(ll_at(p, "oomScoreAdj", 0), 100, "%s: oomScoreAdj", t[i].name);
      /* the independent oracle, against the container and the request */
      json_t *wrap = json_new_object(), *wasked = json_new_object();
      json_object_set(wrap, "process", json_copy(p));
      json_object_set(wasked, "process", json_copy(json_object_get(cfg, "process")));
      assert_not_looser(t[i].name, wasked, wrap);
      json_free(wrap);
      json_free(wasked);
    }
    tg_error_free(&err);
    json_free(p);
    json_free(asked);
  }
  json_free(cfg);
}

/* Table: an update request, and the resources runc gets. */
Test(oci_harden, update_inputs_within_the_profile) {
  struct oci_profile p;
  tg_error *err = NULL;
  cr_assert_eq(profile_load(PROFILES_DIR, SECCOMP_DIR, "hardened", &p, &err), 0, "%s", err ? err->msg : "");
  struct {
    const char *name, *req, *error;
    long long memory, pids, cpu_millis; /* expected; -1 = absent */
  } t[] = {
      {"64 GiB, above the ceiling", "{\"memory\":{\"limit\":68719476736},\"pids\":{\"limit\":100000}}", "above this host's memory ceiling of 32768 MiB", 0, 0, 0},
      {"1 GiB kept, 100000 pids lowered", "{\"memory\":{\"limit\":1073741824},\"pids\":{\"limit\":100000}}", NULL, 1073741824, 256, -1},
      {"unlimited", "{\"memory\":{\"limit\":-1,\"swap\":-1},\"pids\":{\"limit\":-1},\"cpu\":{\"quota\":-1}}", NULL, 536870912, 256, 1000},
      {"tighter kept", "{\"memory\":{\"limit\":104857600},\"pids\":{\"limit\":40},\"cpu\":{\"quota\":50000,\"period\":100000}}", NULL, 104857600, 40, 500},
      {"a period alone", "{\"cpu\":{\"period\":1000}}", NULL, -1, -1, 1000},
      {"16 CPUs", "{\"cpu\":{\"quota\":1600000,\"period\":100000}}", NULL, -1, -1, 1000},
      {"OOM killer off", "{\"memory\":{\"disableOOMKiller\":true}}", NULL, -1, -1, -1},
      {"swap alone", "{\"memory\":{\"swap\":68719476736}}", NULL, -1, -1, -1},
      {"devices", "{\"devices\":[{\"allow\":true,\"access\":\"rwm\"}]}", "resources.devices cannot be updated", 0, 0, 0},
      {"realtime budget", "{\"cpu\":{\"realtimeRuntime\":950000}}", "resources.cpu.realtimeRuntime", 0, 0, 0},
      {"unified", "{\"unified\":{\"memory.max\":\"max\"}}", "resources.unified", 0, 0, 0},
      {"hugepages", "{\"hugepageLimits\":[]}", "resources.hugepageLimits", 0, 0, 0},
      {"not an object", "[1]", "must be a JSON object", 0, 0, 0},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    json_t *r = parse_or_die(t[i].req);
    int ret = oci_update_harden(r, &p, 32LL << 30, &err);
    if (t[i].error) {
      cr_expect(ret < 0 && strstr(err->msg, t[i].error), "%s: want \"%s\", got %s", t[i].name, t[i].error, err ? err->msg : "success");
    } else {
      cr_expect_eq(ret, 0, "%s: %s", t[i].name, err ? err->msg : "");
      cr_expect_eq(ll_at(r, "memory.limit", -1), t[i].memory, "%s: memory", t[i].name);
      cr_expect_eq(ll_at(r, "pids.limit", -1), t[i].pids, "%s: pids", t[i].name);
      json_t *wrap = json_new_object();
      json_object_set(json_object_ensure_object(wrap, "linux"), "resources", json_copy(r));
      long long cpu = oci_cpu_millis(wrap);
      cr_expect_eq(t[i].cpu_millis < 0 ? 0 : t[i].cpu_millis, cpu, "%s: cpu millis %lld", t[i].name, cpu);
      json_free(wrap);
      cr_expect_not(json_is_true(json_get_path(r, "memory.disableOOMKiller")), "%s: OOM killer", t[i].name);
      if (json_get_path(r, "memory.swap"))
        cr_expect_eq(ll_at(r, "memory.swap", 0), ll_at(r, "memory.limit", -2), "%s: swap follows the limit", t[i].name);
    }
    tg_error_free(&err);
    json_free(r);
  }
  profile_free(&p);
}

/* oci_update_resources(): what create gave the container, an update past
 * the profile laid over it, and the container's resources come out at the
 * profile's ceilings; under passthrough the request is laid over as it is. */
Test(oci_harden, update_resources_stay_under_the_ceiling) {
  struct {
    const char *profile, *req;
    long long memory, swap, pids, cpu_millis; /* expected in the effective config */
  } t[] = {
      {"hardened", "{\"memory\":{\"limit\":68719476736,\"swap\":-1},\"pids\":{\"limit\":100000},\"cpu\":{\"period\":1000}}",
       68719476736LL, 68719476736LL, 256, 1000},
      {"hardened", "{\"memory\":{\"limit\":104857600},\"pids\":{\"limit\":40},\"cpu\":{\"quota\":50000,\"period\":100000}}",
       104857600, 104857600, 40, 500},
      {"passthrough", "{\"memory\":{\"limit\":68719476736},\"pids\":{\"limit\":100000}}", 68719476736LL, -1, 100000, 0},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    struct oci_profile p;
    tg_error *err = NULL;
    cr_assert_eq(profile_load(PROFILES_DIR, SECCOMP_DIR, t[i].profile, &p, &err), 0, "%s", err ? err->msg : "");
    json_t *effective = load_fixture("runc-spec-config.json");
    if (!p.passthrough)
      cr_assert_eq(oci_limits_harden(effective, &p, "runc", 0, &err), 0);
    json_t *req = parse_or_die(t[i].req);
    cr_expect_eq(oci_update_resources(req, effective, &p, 0, &err), 0, "%s: %s", t[i].req, err ? err->msg : "");
    cr_expect_eq(ll_at(effective, "linux.resources.memory.limit", -1), t[i].memory, "%s: memory", t[i].req);
    cr_expect_eq(ll_at(effective, "linux.resources.memory.swap", -1), t[i].swap, "%s: swap", t[i].req);
    cr_expect_eq(ll_at(effective, "linux.resources.pids.limit", -1), t[i].pids, "%s: pids", t[i].req);
    cr_expect_eq(oci_cpu_millis(effective), t[i].cpu_millis, "%s: cpu millis", t[i].req);
    /* what runc gets is the hardened request, as laid over */
    cr_expect(json_equal(json_get_path(effective, "linux.resources.memory.limit"), json_get_path(req, "memory.limit")),
              "%s: the request runc gets is the one applied", t[i].req);
    tg_error_free(&err);
    json_free(req);
    json_free(effective);
    profile_free(&p);
  }
}

/* The tighter-check reads every option as the kernel does. */
Test(oci_harden, tighter_check_compares_every_option) {
  struct {
    const char *in, *out, *error; /* NULL: no looser */
  } t[] = {
      {"[\"ro\"]", "[\"ro\",\"rw\"]", "lost option ro"},
      {"[\"nosuid\"]", "[\"nosuid\",\"defaults\"]", "lost option nosuid"},
      {"[\"noexec\"]", "[\"rexec\",\"noexec\",\"exec\"]", "lost option noexec"},
      {"[\"bind\"]", "[\"rbind\"]", "became a recursive bind"},
      {"[\"bind\"]", "[\"bind\",\"suid\"]", "gained option suid"},
      {"[\"bind\"]", "[\"bind\",\"nosuid\",\"nodev\",\"ro\"]", NULL},
      {"[\"bind\",\"rw\",\"ro\"]", "[\"bind\",\"ro\"]", NULL},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    char *a = xasprintf("{\"mounts\":[{\"destination\":\"/d\",\"type\":\"bind\",\"source\":\"/srv/d\",\"options\":%s}]}", t[i].in);
    char *b = xasprintf("{\"mounts\":[{\"destination\":\"/d\",\"type\":\"bind\",\"source\":\"/srv/d\",\"options\":%s}]}", t[i].out);
    json_t *in = parse_or_die(a), *out = parse_or_die(b);
    tg_error *err = NULL;
    int r = oci_check_tighter(in, out, &err);
    if (t[i].error)
      cr_expect(r < 0 && strstr(err->msg, t[i].error), "%s -> %s: want \"%s\", got %s", t[i].in, t[i].out, t[i].error,
                err ? err->msg : "no looser");
    else
      cr_expect_eq(r, 0, "%s -> %s: %s", t[i].in, t[i].out, err ? err->msg : "");
    tg_error_free(&err);
    json_free(in);
    json_free(out);
    free(a);
    free(b);
  }
  /* tmpfs: the last size counts, and a second procfs is an addition */
  json_t *in = parse_or_die("{\"mounts\":[{\"destination\":\"/t\",\"type\":\"tmpfs\",\"source\":\"t\",\"options\":[\"size=8g\",\"size=1m\"]}]}");
  json_t *out = parse_or_die("{\"mounts\":[{\"destination\":\"/t\",\"type\":\"tmpfs\",\"source\":\"t\",\"options\":[\"size=1m\",\"size=8g\"]},{\"destination\":\"/p2\",\"type\":\"proc\",\"source\":\"proc\"}]}");
  tg_error *err = NULL;
  cr_expect_eq(oci_check_tighter(in, out, &err), -1);
  cr_expect(err && strstr(err->msg, "tmpfs /t grew"), "%s", err ? err->msg : "");
  tg_error_free(&err);
  json_array_remove(json_object_get(out, "mounts"), 0);
  cr_expect_eq(oci_check_tighter(in, out, &err), -1);
  cr_expect(err && strstr(err->msg, "a proc mount at /p2 was added"), "%s", err ? err->msg : "");
  tg_error_free(&err);
  json_free(in);
  json_free(out);
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

/* ---- user namespaces and the host id pool (oci/userns.c) ---------------- */

#define POOL_FIRST 268435456LL
#define POOL_END (POOL_FIRST + 4096LL * 65536)

static int harden_userns(json_t *cfg, const char *backend, long long range_first, tg_error **err) {
  struct hcase c = {.backend = backend};
  struct harden_options o = case_opts(&c);
  o.id_pool_first = POOL_FIRST;
  o.id_pool_end = POOL_END;
  o.id_range_first = range_first > 0 ? (unsigned long long)range_first : 0;
  o.id_range_size = range_first > 0 ? 65536 : 0;
  struct harden_result res = {0};
  int r = oci_harden(cfg, &o, &res, err);
  harden_result_free(&res);
  return r;
}

static json_t *with_maps(const char *uid_maps, const char *gid_maps) {
  json_t *cfg = load_fixture("runc-spec-config.json");
  char *patch = xasprintf("{\"linux\":{\"uidMappings\":%s,\"gidMappings\":%s}}", uid_maps, gid_maps);
  json_t *p = parse_or_die(patch);
  merge_into(cfg, p);
  json_free(p);
  free(patch);
  json_t *u = json_new_object();
  json_object_set(u, "type", json_new_string("user"));
  json_array_append(json_get_path(cfg, "linux.namespaces"), u);
  return cfg;
}

Test(oci_harden, runc_gets_a_user_namespace_of_its_own_range) {
  json_t *cfg = load_fixture("runc-spec-config.json");
  tg_error *err = NULL;
  cr_assert_eq(harden_userns(cfg, "runc", POOL_FIRST + 3 * 65536, &err), 0, "%s", err ? err->msg : "");
  const json_t *m = json_array_get(json_get_path(cfg, "linux.uidMappings"), 0);
  cr_expect_eq(ll_at(m, "containerID", -1), 0);
  cr_expect_eq(ll_at(m, "hostID", -1), POOL_FIRST + 3 * 65536);
  cr_expect_eq(ll_at(m, "size", -1), 65536);
  cr_expect_eq(ll_at(json_array_get(json_get_path(cfg, "linux.gidMappings"), 0), "hostID", -1), POOL_FIRST + 3 * 65536);
  bool userns = false;
  const json_t *nss = json_get_path(cfg, "linux.namespaces");
  for (size_t i = 0; i < json_array_len(nss); i++)
    userns |= strcmp(json_string_value(json_object_get(json_array_get(nss, i), "type")), "user") == 0;
  cr_expect(userns, "a user namespace was added");
  cr_expect_eq(ll_at(cfg, "process.user.uid", 0), 65534, "the process stays non-root inside");
  json_free(cfg);
}

Test(oci_harden, runsc_gets_no_mappings_added) {
  json_t *cfg = load_fixture("runc-spec-config.json");
  tg_error *err = NULL;
  cr_assert_eq(harden_userns(cfg, "runsc", POOL_FIRST, &err), 0, "%s", err ? err->msg : "");
  cr_expect_null(json_get_path(cfg, "linux.uidMappings"));
  json_free(cfg);
}

Test(oci_harden, hostile_mappings_are_refused_by_name) {
  static const struct {
    const char *uid, *gid, *want;
  } bad[] = {
      {"[{\"containerID\":65534,\"hostID\":0,\"size\":1}]", "[{\"containerID\":0,\"hostID\":268435456,\"size\":65536}]",
       "linux.uidMappings[0] maps container ids 65534-65534 to host ids 0-0"},
      {"[{\"containerID\":0,\"hostID\":268435456,\"size\":65536}]", "[{\"containerID\":0,\"hostID\":0,\"size\":65536}]",
       "linux.gidMappings[0] maps container ids 0-65535 to host ids 0-65535"},
      {"[{\"containerID\":0,\"hostID\":1000,\"size\":65536}]", "[]", "to host ids 1000-66535, outside"},
      /* straddles the start of the pool */
      {"[{\"containerID\":0,\"hostID\":268435000,\"size\":65536}]", "[]", "outside the host's container id pool"},
      /* past its end */
      {"[{\"containerID\":0,\"hostID\":536870900,\"size\":65536}]", "[]", "outside the host's container id pool"},
      {"[{\"containerID\":0,\"hostID\":268435456,\"size\":0}]", "[]", "must have integer containerID, hostID and size"},
      {"[{\"containerID\":0,\"hostID\":4294967290,\"size\":65536}]", "[]", "must have integer"},
      {"[{\"containerID\":0,\"hostID\":\"0\",\"size\":1}]", "[]", "must have integer"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    json_t *cfg = with_maps(bad[i].uid, bad[i].gid);
    tg_error *err = NULL;
    cr_expect_eq(harden_userns(cfg, "runc", 0, &err), -1, "case %zu accepted", i);
    cr_expect(err && strstr(err->msg, bad[i].want), "case %zu: \"%s\" lacks \"%s\"", i, err ? err->msg : "", bad[i].want);
    tg_error_free(&err);
    json_free(cfg);
  }
}

Test(oci_harden, host_zero_refused_without_a_pool) {
  json_t *cfg = with_maps("[{\"containerID\":65534,\"hostID\":0,\"size\":1}]", "[]");
  struct hcase c = {.backend = "runsc"};
  struct harden_options o = case_opts(&c);
  struct harden_result res = {0};
  tg_error *err = NULL;
  cr_expect_eq(oci_harden(cfg, &o, &res, &err), -1);
  cr_expect(err && strstr(err->msg, "host id 0 is host root"), "%s", err ? err->msg : "");
  tg_error_free(&err);
  json_free(cfg);
}

Test(oci_harden, userns_path_and_mappings_without_userns_refused) {
  /* a user namespace that is not the host's: a child's own */
  int ready[2];
  cr_assert_eq(pipe(ready), 0);
  pid_t child = fork();
  if (child == 0) {
    char c = unshare(CLONE_NEWUSER) == 0 ? 'y' : 'n';
    (void)!write(ready[1], &c, 1);
    pause();
    _exit(0);
  }
  char c = 0;
  cr_assert_eq(read(ready[0], &c, 1), 1);
  cr_assert_eq(c, 'y');
  json_t *cfg = load_fixture("runc-spec-config.json");
  char *patch = xasprintf("{\"type\":\"user\",\"path\":\"/proc/%d/ns/user\"}", (int)child);
  json_array_append(json_get_path(cfg, "linux.namespaces"), parse_or_die(patch));
  free(patch);
  tg_error *err = NULL;
  cr_expect_eq(harden_userns(cfg, "runc", POOL_FIRST, &err), -1);
  cr_expect(err && strstr(err->msg, "joining the user namespace"), "%s", err ? err->msg : "");
  tg_error_free(&err);
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  close(ready[0]);
  close(ready[1]);
  json_free(cfg);
  cfg = load_fixture("runc-spec-config.json");
  json_t *p = parse_or_die("{\"linux\":{\"uidMappings\":[{\"containerID\":0,\"hostID\":268435456,\"size\":65536}]}}");
  merge_into(cfg, p);
  json_free(p);
  cr_expect_eq(harden_userns(cfg, "runc", 0, &err), -1);
  cr_expect(err && strstr(err->msg, "no user namespace"), "%s", err ? err->msg : "");
  tg_error_free(&err);
  json_free(cfg);
}

Test(oci_harden, mappings_inside_the_pool_run_hardened_and_name_their_slots) {
  json_t *cfg = with_maps("[{\"containerID\":0,\"hostID\":268566528,\"size\":65536}]",
                          "[{\"containerID\":0,\"hostID\":268566528,\"size\":1},{\"containerID\":65534,\"hostID\":268697599,\"size\":2}]");
  unsigned long long *slots = NULL;
  size_t n = 0;
  bool maps = false;
  oci_userns_slots(cfg, POOL_FIRST, 65536, 4096, &slots, &n, &maps);
  cr_expect(maps);
  cr_assert_eq(n, 3, "slots 2, 3 and 4 (the last mapping straddles 3 and 4)");
  cr_expect(slots[0] == 2 && slots[1] == 3 && slots[2] == 4, "%llu %llu %llu", slots[0], slots[1], slots[2]);
  free(slots);
  json_t *before = json_copy(cfg);
  tg_error *err = NULL;
  cr_assert_eq(harden_userns(cfg, "runc", 0, &err), 0, "%s", err ? err->msg : "");
  cr_expect(json_equal(json_get_path(before, "linux.uidMappings"), json_get_path(cfg, "linux.uidMappings")));
  cr_expect_eq(ll_at(cfg, "process.user.uid", 0), 65534);
  cr_expect(json_is_true(json_get_path(cfg, "process.noNewPrivileges")));
  json_free(before);
  json_free(cfg);
}

Test(oci_harden, tighter_refuses_an_added_mapping_to_host_ids) {
  json_t *in = load_fixture("runc-spec-config.json");
  json_t *out = json_copy(in);
  json_t *p = parse_or_die("{\"linux\":{\"uidMappings\":[{\"containerID\":0,\"hostID\":0,\"size\":65536}]}}");
  merge_into(out, p);
  json_free(p);
  tg_error *err = NULL;
  cr_expect_eq(oci_check_tighter(in, out, &err), -1);
  cr_expect(err && strstr(err->msg, "linux.uidMappings: a mapping to host id 0 was added"), "%s", err ? err->msg : "");
  tg_error_free(&err);
  json_free(in);
  json_free(out);
}

/* A bind in a container's own user namespace must ask for the flags the
 * kernel locks from its source mount (runc's remount fails EPERM
 * otherwise): they are added, their opposites removed, nothing loosened. */
Test(oci_mount_keep_source_flags, adds_locked_flags_and_drops_opposites) {
  json_t *m = parse_or_die("{\"type\":\"bind\",\"source\":\"/s\",\"destination\":\"/dev/shm\","
                           "\"options\":[\"rbind\",\"rw\",\"exec\",\"suid\"]}");
  oci_mount_keep_source_flags(m, ST_RDONLY | ST_NOSUID | ST_NODEV | ST_NOEXEC | ST_RELATIME);
  const json_t *o = json_object_get(m, "options");
  cr_assert(str_in(o, "rbind"));
  cr_assert(str_in(o, "ro") && str_in(o, "nosuid") && str_in(o, "nodev") && str_in(o, "noexec"));
  cr_assert(!str_in(o, "rw") && !str_in(o, "exec") && !str_in(o, "suid"));
  cr_assert(!str_in(o, "strictatime") && !str_in(o, "noatime"));
  json_free(m);
}

Test(oci_mount_keep_source_flags, no_flags_keeps_options_but_atime) {
  json_t *m = parse_or_die("{\"type\":\"bind\",\"source\":\"/s\",\"destination\":\"/d\",\"options\":[\"rbind\",\"rw\"]}");
  oci_mount_keep_source_flags(m, 0);
  const json_t *o = json_object_get(m, "options");
  cr_assert(str_in(o, "rw") && str_in(o, "rbind") && !str_in(o, "ro"));
  cr_assert(str_in(o, "strictatime")); /* neither relatime nor noatime on the source */
  json_free(m);
  m = parse_or_die("{\"type\":\"bind\",\"source\":\"/s\",\"destination\":\"/d\",\"options\":[\"rbind\"]}");
  oci_mount_keep_source_flags(m, ST_NOATIME | ST_NODIRATIME);
  o = json_object_get(m, "options");
  cr_assert(str_in(o, "noatime") && str_in(o, "nodiratime") && !str_in(o, "strictatime"));
  json_free(m);
}

/* Memory (issue 40.1): the caller's limit stands, the profile's applies
 * where it gave none, and one above the host's ceiling is refused with a
 * message naming the ceiling, never lowered. */
Test(oci_harden, memory_limit_as_asked_within_the_ceiling) {
  struct oci_profile p;
  tg_error *err = NULL;
  cr_assert_eq(profile_load(PROFILES_DIR, SECCOMP_DIR, "hardened", &p, &err), 0, "%s", err ? err->msg : "");
  static const struct {
    const char *in;
    long long want; /* -1: refused */
  } t[] = {
      {"{\"linux\":{\"resources\":{\"memory\":{\"limit\":1073741824}}}}", 1LL << 30},
      {"{\"linux\":{\"resources\":{\"memory\":{\"limit\":134217728}}}}", 128LL << 20},
      {"{\"linux\":{\"resources\":{\"memory\":{\"limit\":-1}}}}", 512LL << 20},
      {"{}", 512LL << 20},
      {"{\"linux\":{\"resources\":{\"memory\":{\"limit\":4294967296}}}}", -1},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    json_t *c = parse_or_die(t[i].in);
    int r = oci_limits_harden(c, &p, "runsc", 2LL << 30, &err);
    if (t[i].want < 0) {
      cr_expect(r < 0 && strstr(err->msg, "4096 MiB is above this host's memory ceiling of 2048 MiB") &&
                    strstr(err->msg, "memory_ceiling_mib"),
                "%s: %s", t[i].in, err ? err->msg : "accepted");
    } else {
      cr_expect_eq(r, 0, "%s: %s", t[i].in, err ? err->msg : "");
      cr_expect_eq(ll_at(c, "linux.resources.memory.limit", 0), t[i].want, "%s", t[i].in);
      cr_expect_eq(ll_at(c, "linux.resources.memory.swap", 0), t[i].want, "%s: no swap", t[i].in);
    }
    tg_error_free(&err);
    json_free(c);
  }
  profile_free(&p);
}

/* runsc (issue 38.2): a caller's pids limit bounds guest processes
 * (RLIMIT_NPROC) and the sandbox's host cgroup gets 64 tasks for each;
 * through oci_harden(), whose tighter check reads it so. */
Test(oci_harden, runsc_pids_limit_is_the_guests) {
  json_t *c = parse_or_die("{\"process\":{\"args\":[\"true\"]},\"root\":{\"path\":\"/srv/rootfs\"},"
                           "\"linux\":{\"resources\":{\"pids\":{\"limit\":40}}}}");
  struct harden_options o = {.profile = "hardened", .profiles_dir = PROFILES_DIR, .seccomp_dir = SECCOMP_DIR,
                             .backend = "runsc"};
  struct harden_result r = {0};
  tg_error *err = NULL;
  cr_assert_eq(oci_harden(c, &o, &r, &err), 0, "%s", err ? err->msg : "");
  cr_expect_eq(rlimit_of(c, "RLIMIT_NPROC"), 40);
  cr_expect_eq(ll_at(c, "linux.resources.pids.limit", 0), 40 * 64);
  harden_result_free(&r);
  json_free(c);
}
