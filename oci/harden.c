/* oci_harden(): choose the profile, refuse escape shapes, apply every
 * axis, then prove the result is no looser than the input. */
#include "oci/harden.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oci/profile.h"
#include "oci/seccomp.h"
#include "oci/transform.h"
#include "base/util.h"

#define ANN_PROFILE "dev.tollgate.profile"

/* Pick the profile: the host's, or the workload's annotation when that
 * one is at least as strict.  Loosening is the host config's alone. */
static int choose_profile(const json_t *config, const struct harden_options *opts, struct oci_profile *out,
                          tg_error **err) {
  const char *host_name = opts->profile ? opts->profile : "hardened";
  struct oci_profile host;
  if (profile_load(opts->profiles_dir, opts->seccomp_dir, host_name, &host, err) < 0)
    return tg_error_wrap(err, "host profile");
  if (host.passthrough && !opts->allow_passthrough) {
    profile_free(&host);
    return tg_error_set(err, 0, "the host config chooses profile %s, which applies no hardening, but allow_passthrough is false; set \"allow_passthrough\": true in the host config or choose another profile",
                        host_name);
  }
  const json_t *ann = json_object_get(json_object_get(config, "annotations"), ANN_PROFILE);
  const char *want = json_string_value(ann);
  if (ann != NULL && want == NULL) {
    profile_free(&host);
    return tg_error_set(err, 0, "annotation " ANN_PROFILE " must be a string naming a profile");
  }
  if (want == NULL || strcmp(want, host_name) == 0) {
    *out = host;
    return 0;
  }
  struct oci_profile asked;
  if (profile_load(opts->profiles_dir, opts->seccomp_dir, want, &asked, err) < 0) {
    profile_free(&host);
    return tg_error_wrap(err, "annotation " ANN_PROFILE "=%s", want);
  }
  cleanup_free char *why = NULL;
  bool ok = profile_at_least_as_strict(&asked, &host, &why);
  if (ok && asked.passthrough && !opts->allow_passthrough)
    ok = false;
  if (!ok) {
    tg_error_set(err, 0, "annotation " ANN_PROFILE "=%s asks for a looser profile than the host's %s (%s); a workload can only tighten: remove the annotation, or choose the profile in the host config",
                 want, host_name, why ? why : "passthrough is not allowed");
    profile_free(&host);
    profile_free(&asked);
    return -1;
  }
  profile_free(&host);
  *out = asked;
  return 0;
}

/* Every namespace a sandbox needs, new unless the input joins a
 * non-host one (a pod sibling).  The network namespace is always new:
 * it must hold only loopback, which oci_check_netns_loopback_only()
 * verifies for runc. */
static void namespaces_harden(json_t *config, const struct oci_profile *p) {
  static const char *const need[] = {"pid", "ipc", "uts", "mount", "network"};
  json_t *nss = json_object_ensure_array(json_object_ensure_object(config, "linux"), "namespaces");
  for (size_t k = 0; k < sizeof need / sizeof need[0]; k++) {
    bool is_net = strcmp(need[k], "network") == 0;
    if (is_net && !p->network_none)
      continue;
    bool have = false;
    for (size_t i = 0; i < json_array_len(nss); i++) {
      json_t *ns = json_array_get(nss, i);
      const char *type = json_string_value(json_object_get(ns, "type"));
      if (type == NULL || strcmp(type, need[k]) != 0)
        continue;
      have = true;
      if (is_net)
        json_object_del(ns, "path");
    }
    if (!have) {
      json_t *ns = json_new_object();
      json_object_set(ns, "type", json_new_string(need[k]));
      json_array_append(nss, ns);
    }
  }
}

static void annotations_harden(json_t *config) {
  json_t *ann = json_object_get(config, "annotations");
  if (!json_is(ann, JSON_OBJECT))
    return;
  /* dev.gvisor.* steer runsc itself (e.g. mounting host sockets or
   * shared mounts into the sandbox): the workload does not get to. */
  for (size_t i = ann->u.object.len; i-- > 0;)
    if (strncmp(ann->u.object.keys[i], "dev.gvisor.", 11) == 0)
      json_object_del(ann, ann->u.object.keys[i]);
}

static int apply_profile(json_t *config, const struct oci_profile *p, const char *backend, long long memory_ceiling,
                         tg_error **err) {
  json_t *process = json_object_ensure_object(config, "process");
  oci_caps_restrict(process, &p->caps);
  if (p->no_new_privileges)
    json_object_set(process, "noNewPrivileges", json_new_bool(true));
  oci_user_harden(process, p);
  oci_mounts_harden(config, p);
  if (oci_limits_harden(config, p, backend, memory_ceiling, err) < 0)
    return -1;
  namespaces_harden(config, p);
  if (p->seccomp) {
    json_t *linux = json_object_ensure_object(config, "linux");
    json_t *sc = NULL;
    if (oci_seccomp_intersect(p->seccomp, json_object_get(linux, "seccomp"), &sc, err) < 0)
      return -1;
    json_object_set(linux, "seccomp", sc);
  }
  annotations_harden(config);
  return 0;
}

static void forget_network_path(json_t *config) {
  json_t *nss = json_get_path(config, "linux.namespaces");
  for (size_t i = 0; i < json_array_len(nss); i++) {
    json_t *ns = json_array_get(nss, i);
    const char *type = json_string_value(json_object_get(ns, "type"));
    if (type != NULL && strcmp(type, "network") == 0)
      json_object_del(ns, "path");
  }
}

/* runsc, app container of a tollgate pod: see oci_harden() in harden.h.
 * Only removes paths: each such namespace becomes a new one. */
static void forget_pod_sandbox_paths(json_t *config, int pod_pid) {
  char prefix[48];
  int n = snprintf(prefix, sizeof prefix, "/proc/%d/ns/", pod_pid);
  json_t *nss = json_get_path(config, "linux.namespaces");
  for (size_t i = 0; i < json_array_len(nss); i++) {
    json_t *ns = json_array_get(nss, i);
    const char *path = json_string_value(json_object_get(ns, "path"));
    if (path != NULL && strncmp(path, prefix, (size_t)n) == 0)
      json_object_del(ns, "path");
  }
}

static bool has_namespace(const json_t *config, const char *type, const char **path) {
  const json_t *nss = json_get_path(config, "linux.namespaces");
  for (size_t i = 0; i < json_array_len(nss); i++) {
    const json_t *ns = json_array_get(nss, i);
    const char *t = json_string_value(json_object_get(ns, "type"));
    if (t != NULL && strcmp(t, type) == 0) {
      if (path)
        *path = json_string_value(json_object_get(ns, "path"));
      return true;
    }
  }
  return false;
}

static bool in_array(const json_t *arr, const char *s) {
  for (size_t i = 0; i < json_array_len(arr); i++) {
    const char *v = json_string_value(json_array_get(arr, i));
    if (v && strcmp(v, s) == 0)
      return true;
  }
  return false;
}

/* What a client (docker run, podman run) asked for on purpose and the
 * profile took away: --user 0, --cap-add, --pid host, --network host and
 * a network of the client's own.  Said once, so nobody is surprised by a
 * silent change; the container runs as hardened either way. */
static char *client_changes(const json_t *before, const json_t *after, const char *profile) {
  /* Docker's and podman's default set: only capabilities beyond it were
   * asked for with --cap-add. */
  static const char *const client_default[] = {
      "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD",
      "CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP",
      "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE"};
  char buf[1024] = "";
  size_t used = 0;
#define ADD(...) used += (size_t)snprintf(buf + used, used < sizeof buf ? sizeof buf - used : 0, __VA_ARGS__)
  long long uid_in = -1, uid_out = -1;
  json_integer_value(json_get_path(before, "process.user.uid"), &uid_in);
  json_integer_value(json_get_path(after, "process.user.uid"), &uid_out);
  if (uid_in == 0 && uid_out != 0)
    ADD("%suser 0 runs as %lld", used ? "; " : "", uid_out);
  const json_t *bnd_in = json_get_path(before, "process.capabilities.bounding");
  const json_t *bnd_out = json_get_path(after, "process.capabilities.bounding");
  bool first = true;
  for (size_t i = 0; i < json_array_len(bnd_in); i++) {
    const char *cap = json_string_value(json_array_get(bnd_in, i));
    bool dflt = false;
    for (size_t k = 0; cap && k < sizeof client_default / sizeof client_default[0]; k++)
      dflt |= strcmp(cap, client_default[k]) == 0;
    if (cap == NULL || dflt || in_array(bnd_out, cap))
      continue;
    ADD("%s%s", first ? (used ? "; capabilities dropped: " : "capabilities dropped: ") : ", ", cap);
    first = false;
  }
  if (!has_namespace(before, "pid", NULL) && has_namespace(after, "pid", NULL))
    ADD("%sthe host's PID namespace (--pid host) is a new one", used ? "; " : "");
  const char *net_in = NULL, *net_out = NULL;
  bool had_net = has_namespace(before, "network", &net_in);
  bool has_net = has_namespace(after, "network", &net_out);
  if (!had_net && has_net)
    ADD("%sthe host's network (--network host) is none: lo only", used ? "; " : "");
  else if (had_net && net_in != NULL && net_in[0] != '\0' && net_out == NULL)
    ADD("%sthe network namespace %s (--network host, or a network the client set up) is a new one with lo only", used ? "; " : "", net_in);
#undef ADD
  if (used == 0)
    return NULL;
  return xasprintf("the %s profile changed what the client asked for: %s", profile, buf);
}

int oci_harden(json_t *config, const struct harden_options *opts, struct harden_result *res, tg_error **err) {
  res->profile = NULL;
  res->passthrough = false;
  res->notice = NULL;
  if (!json_is(config, JSON_OBJECT))
    return tg_error_set(err, 0, "config.json must hold a JSON object");
  if (opts->backend && strcmp(opts->backend, "runsc") != 0 && strcmp(opts->backend, "runc") != 0)
    return tg_error_set(err, 0, "unknown backend \"%s\" for hardening (runsc or runc)", opts->backend);
  struct oci_profile p;
  if (choose_profile(config, opts, &p, err) < 0)
    return -1;
  int ret = 0;
  if (!p.passthrough) {
    /* Refusals are on the config as it came in: a namespace path of the
     * wrong type is refused here, before a path is dropped below. */
    if (oci_check_namespace_kinds(config, err) < 0) {
      profile_free(&p);
      return -1;
    }
    cleanup_json json_t *asked = json_copy(config);
    if (opts->pod_sandbox_pid > 0 && opts->backend != NULL && strcmp(opts->backend, "runsc") == 0)
      forget_pod_sandbox_paths(config, opts->pod_sandbox_pid);
    /* A profile without network replaces whatever network namespace the
     * client named (Docker's --network host is the host's, by path) with
     * a new one: there is nothing to refuse, only a change to report. */
    if (p.network_none)
      forget_network_path(config);
    cleanup_json json_t *before = json_copy(config);
    ret = oci_refuse_escapes(config, &p, opts, err);
    if (ret == 0)
      ret = oci_userns_harden(config, opts, err);
    if (ret == 0)
      ret = apply_profile(config, &p, opts->backend, opts->memory_ceiling, err);
    /* Belt and braces: every step above only tightens by construction;
     * this check makes a future mistake fail closed instead of quietly
     * handing the backend a looser config. */
    if (opts->backend == NULL || strcmp(opts->backend, "runsc") == 0)
      oci_runsc_pids_meaning(before);
    if (ret == 0 && oci_check_tighter(before, config, err) < 0)
      ret = tg_error_wrap(err, "internal error: hardening with profile %s loosened the config; this is a tollgate bug", p.name);
    if (ret == 0)
      res->notice = client_changes(asked, config, p.name);
  }
  /* Nothing is written into the config to say which profile ran: the
   * config's annotations reach hooks and the container's state, which must
   * carry the user's annotations only.  The caller records res instead. */
  if (ret == 0) {
    res->profile = xstrdup(p.name);
    res->passthrough = p.passthrough;
  }
  profile_free(&p);
  return ret;
}

/* Does the container's own process hold group g (primary or extra)? */
static bool holds_group(const json_t *user, long long g) {
  long long gid = 0;
  json_integer_value(json_object_get(user, "gid"), &gid);
  if (gid == g)
    return true;
  const json_t *extra = json_object_get(user, "additionalGids");
  for (size_t i = 0; i < json_array_len(extra); i++) {
    long long x;
    if (json_integer_value(json_array_get(extra, i), &x) && x == g)
      return true;
  }
  return false;
}

/* uid 0 and group 0 only where the container itself has them: create's
 * oci_user_harden() rule, with the container's ids as the substitute. */
static void exec_user_harden(json_t *process, const json_t *limit) {
  long long cuid = 0, cgid = 0, uid = 0, gid = 0;
  const json_t *cuser = json_object_get(limit, "user");
  json_integer_value(json_object_get(cuser, "uid"), &cuid);
  json_integer_value(json_object_get(cuser, "gid"), &cgid);
  json_t *user = json_object_ensure_object(process, "user");
  /* A missing uid or gid means 0 to the runtime. */
  json_integer_value(json_object_get(user, "uid"), &uid);
  json_integer_value(json_object_get(user, "gid"), &gid);
  if (cuid != 0 && uid == 0) {
    /* The container was denied root: so is anything exec'd into it. */
    json_object_set(user, "uid", json_new_integer(cuid));
    json_object_set(user, "gid", json_new_integer(cgid));
    json_object_del(user, "additionalGids");
    return;
  }
  if (gid == 0 && !holds_group(cuser, 0))
    json_object_set(user, "gid", json_new_integer(cgid));
  /* Group 0 owns much of a typical rootfs and of /proc: `--user 65534:0`
   * or additionalGids [0] would hand it back. */
  json_t *extra = json_object_get(user, "additionalGids");
  for (size_t i = json_array_len(extra); i-- > 0;) {
    long long g;
    if (!json_integer_value(json_array_get(extra, i), &g) || g < 0 || (g == 0 && !holds_group(cuser, 0)))
      json_array_remove(extra, i);
  }
}

/* Fields an exec'd process takes from the container, never from the
 * request: its LSM labels (an "unconfined" apparmorProfile would lift
 * the confinement), scheduler and I/O priority. */
static void exec_copy_from_container(json_t *process, const json_t *limit) {
  static const char *const keys[] = {"apparmorProfile", "selinuxLabel", "scheduler", "ioPriority"};
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
    const json_t *v = json_object_get(limit, keys[k]);
    if (v)
      json_object_set(process, keys[k], json_copy(v));
    else
      json_object_del(process, keys[k]);
  }
  long long cadj = 0, adj = 0;
  json_integer_value(json_object_get(limit, "oomScoreAdj"), &cadj);
  if (!json_integer_value(json_object_get(process, "oomScoreAdj"), &adj) || adj < cadj) {
    if (json_object_get(limit, "oomScoreAdj"))
      json_object_set(process, "oomScoreAdj", json_new_integer(cadj));
    else
      json_object_del(process, "oomScoreAdj");
  }
}

static void exec_rlimits_harden(json_t *process, const json_t *limit) {
  /* rlimits no higher than the container's */
  const json_t *crl = json_object_get(limit, "rlimits");
  json_t *rl = json_object_ensure_array(process, "rlimits");
  for (size_t k = 0; k < json_array_len(crl); k++) {
    const json_t *c = json_array_get(crl, k);
    const char *type = json_string_value(json_object_get(c, "type"));
    long long chard = 0;
    if (!type || !json_integer_value(json_object_get(c, "hard"), &chard))
      continue;
    json_t *mine = NULL;
    for (size_t i = 0; i < json_array_len(rl); i++)
      if (json_string_value(json_object_get(json_array_get(rl, i), "type")) &&
          strcmp(json_string_value(json_object_get(json_array_get(rl, i), "type")), type) == 0)
        mine = json_array_get(rl, i);
    if (mine == NULL) {
      json_array_append(rl, json_copy(c));
      continue;
    }
    long long hard = -1, soft = -1;
    json_integer_value(json_object_get(mine, "hard"), &hard);
    json_integer_value(json_object_get(mine, "soft"), &soft);
    if (hard < 0 || hard > chard)
      hard = chard;
    if (soft < 0 || soft > hard)
      soft = hard;
    json_object_set(mine, "hard", json_new_integer(hard));
    json_object_set(mine, "soft", json_new_integer(soft));
  }
}

int oci_harden_process(json_t *process, const json_t *effective_config, bool passthrough,
                       tg_error **err) {
  if (!json_is(process, JSON_OBJECT))
    return tg_error_set(err, 0, "the process spec must be a JSON object");
  const json_t *limit = json_object_get(effective_config, "process");
  if (oci_check_process_escapes(process, "process", err) < 0)
    return -1;
  if (passthrough)
    return 0;
  /* The labels, scheduler and I/O priority are the container's whatever
   * the request said: the proof against the request leaves them out, the
   * proof against the container covers them. */
  cleanup_json json_t *before = json_copy(process);
  exec_copy_from_container(before, limit);
  /* An exec'd process gets nothing the container itself was denied. */
  oci_caps_intersect(process, limit);
  if (json_is_true(json_object_get(limit, "noNewPrivileges")))
    json_object_set(process, "noNewPrivileges", json_new_bool(true));
  exec_user_harden(process, limit);
  exec_copy_from_container(process, limit);
  exec_rlimits_harden(process, limit);
  /* The same proof as create's, twice: no looser than what was asked,
   * and no looser than the container itself. */
  if (oci_check_process_tighter(before, process, err) < 0)
    return tg_error_wrap(err, "internal error: exec hardening loosened the process; this is a tollgate bug");
  if (oci_check_process_tighter(limit, process, err) < 0)
    return tg_error_wrap(err, "internal error: the exec'd process is looser than the container; this is a tollgate bug");
  return 0;
}

void harden_result_free(struct harden_result *res) {
  free(res->profile);
  free(res->notice);
  res->profile = NULL;
  res->notice = NULL;
}
