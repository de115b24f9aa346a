/* The join rule (shim/lifecycle/join.h, docs/hardening.md "Joins").
 *
 * Threat model: the config.json author is untrusted, the caller that runs
 * tollgate (host root, containerd's shim, conmon, a person at the CLI) is
 * trusted.  So a namespace path, a CRI sandbox id or an identity
 * annotation only says which container a join would enter; whether it
 * may is decided from what tollgate recorded about that container when it
 * was created (its state directory, which only tollgate writes) and from
 * the caller as tollgate itself reads it from /proc. */
#include "shim/lifecycle/join.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oci/cri.h"
#include "oci/harden.h"
#include "shim/lifecycle/container.h"
#include "shim/lifecycle/state.h"
#include "base/util.h"

#define CMDLINE_MAX 65536
#define CRI_NAMESPACE "io.kubernetes.cri.sandbox-namespace"

/* The annotations that say which pod a container belongs to (containerd's
 * and CRI-O's).  Every one the sandbox recorded must be in the member's. */
static const char *const pod_identity_keys[] = {
    CRI_NAMESPACE,          "io.kubernetes.cri.sandbox-name", "io.kubernetes.cri.sandbox-uid",
    "io.kubernetes.pod.namespace", "io.kubernetes.pod.name",   "io.kubernetes.pod.uid",
};

/* A containerd runc shim: by name, and a root-owned file nobody else may
 * rewrite, so a copy anyone could make and run proves nothing. */
static bool is_containerd_shim(pid_t pid, const char *exe) {
  const char *base = strrchr(exe, '/');
  base = base ? base + 1 : exe;
  if (strcmp(base, "containerd-shim-runc-v2") != 0 && strcmp(base, "containerd-shim-runc-v1") != 0)
    return false;
  char path[64];
  struct stat st;
  snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 && (st.st_mode & 022) == 0;
}

/* The -namespace argument of a containerd shim's command line (Go's flag
 * syntax: -namespace V, --namespace V, -namespace=V), or NULL. */
static char *shim_namespace(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
  cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return NULL;
  cleanup_free char *buf = xmalloc(CMDLINE_MAX + 1);
  size_t len = 0;
  ssize_t n;
  while (len < CMDLINE_MAX && (n = read(fd, buf + len, CMDLINE_MAX - len)) > 0)
    len += (size_t)n;
  buf[len] = '\0';
  for (size_t i = 0; i < len; i += strlen(buf + i) + 1) {
    const char *a = buf + i;
    if (a[0] == '-' && a[1] == '-')
      a++;
    if (strncmp(a, "-namespace=", 11) == 0)
      return xstrdup(a + 11);
    if (strcmp(a, "-namespace") == 0) {
      size_t next = i + strlen(buf + i) + 1;
      return next < len ? xstrdup(buf + next) : NULL;
    }
  }
  return NULL;
}

void join_caller_self(struct join_caller *out) {
  memset(out, 0, sizeof *out);
  pid_t pid = getppid();
  if (pid <= 1)
    return; /* orphaned: no caller to attribute anything to */
  char path[64], exe[PATH_MAX];
  snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
  ssize_t n = readlink(path, exe, sizeof exe - 1);
  unsigned long long start = process_start_time(pid);
  bool shim = false;
  char *ns = NULL;
  if (n > 0) {
    exe[n] = '\0';
    shim = is_containerd_shim(pid, exe);
    if (shim)
      ns = shim_namespace(pid);
  }
  /* Read before the check: had the caller died meanwhile, we would be
   * someone else's child now, and what was read may be another process's. */
  if (getppid() != pid || start == 0) {
    free(ns);
    return;
  }
  out->pid = pid;
  out->start = start;
  out->exe = n > 0 ? xstrdup(exe) : NULL;
  out->containerd_shim = shim;
  out->containerd_ns = ns;
}

void join_caller_record(const struct join_caller *c, json_t *state) {
  json_t *o = json_new_object();
  json_object_set(o, "pid", json_new_integer(c->pid));
  json_object_set(o, "start_time", json_new_integer((long long)c->start));
  json_object_set(o, "exe", c->exe ? json_new_string(c->exe) : json_new_null());
  json_object_set(o, "containerd_shim", json_new_bool(c->containerd_shim));
  json_object_set(o, "containerd_namespace", c->containerd_ns ? json_new_string(c->containerd_ns) : json_new_null());
  json_object_set(state, "caller", o);
}

void join_caller_recorded(const json_t *state, struct join_caller *out) {
  memset(out, 0, sizeof *out);
  const json_t *o = json_object_get(state, "caller");
  long long pid = 0, start = 0;
  if (!json_integer_value(json_object_get(o, "pid"), &pid) ||
      !json_integer_value(json_object_get(o, "start_time"), &start) || pid <= 0 || pid > INT_MAX || start <= 0)
    return;
  out->pid = (pid_t)pid;
  out->start = (unsigned long long)start;
  const char *exe = json_string_value(json_object_get(o, "exe"));
  const char *ns = json_string_value(json_object_get(o, "containerd_namespace"));
  out->exe = exe ? xstrdup(exe) : NULL;
  out->containerd_shim = json_is_true(json_object_get(o, "containerd_shim"));
  out->containerd_ns = ns ? xstrdup(ns) : NULL;
}

void join_caller_free(struct join_caller *c) {
  free(c->exe);
  free(c->containerd_ns);
  memset(c, 0, sizeof *c);
}

static bool listed(char *const *list, const char *s) {
  for (size_t i = 0; s != NULL && list != NULL && list[i] != NULL; i++)
    if (strcmp(list[i], s) == 0)
      return true;
  return false;
}

const char *join_proof(const struct join_caller *joiner, const struct join_caller *owner,
                       const char *vouched, const char *owner_id, char *const *trusted) {
  /* containerd runs one shim per pod (runc.v2 groups a pod's containers
   * by the sandbox id it was given by the CRI plugin): the very process
   * that created the sandbox creating this one is containerd saying so. */
  if (joiner->pid > 0 && joiner->pid == owner->pid && joiner->start == owner->start &&
      joiner->containerd_shim && owner->containerd_shim)
    return "the same containerd shim";
  if (vouched != NULL && owner_id != NULL && strcmp(vouched, owner_id) == 0)
    return "--join";
  if (joiner->pid > 0 && owner->pid > 0 && listed(trusted, joiner->exe) && listed(trusted, owner->exe))
    return "trusted_join_callers";
  return NULL;
}

int join_pod_identity(const json_t *member_config, const json_t *sandbox_config, const char *sandbox,
                      tg_error **err) {
  const json_t *theirs = json_object_get(sandbox_config, "annotations");
  const json_t *ours = json_object_get(member_config, "annotations");
  for (size_t i = 0; i < sizeof pod_identity_keys / sizeof pod_identity_keys[0]; i++) {
    const char *b = json_string_value(json_object_get(theirs, pod_identity_keys[i]));
    if (b == NULL)
      continue;
    const char *a = json_string_value(json_object_get(ours, pod_identity_keys[i]));
    if (a == NULL)
      return tg_error_set(err, 0,
                          "the pod sandbox %s records %s=\"%s\" and this container's config does not say it: a "
                          "pod member carries every identity annotation of its pod (the join rule, "
                          "docs/hardening.md \"Joins\")",
                          sandbox, pod_identity_keys[i], b);
    if (strcmp(a, b) != 0)
      return tg_error_set(err, 0, "the pod sandbox %s belongs to another pod: its %s is \"%s\", this container's \"%s\"",
                          sandbox, pod_identity_keys[i], b, a);
  }
  return 0;
}

/* What tollgate recorded about a would-be owner. */
struct owner {
  json_t *state;
  char *dir;
  pid_t init;
};

static void owner_free(struct owner *o) {
  json_free(o->state);
  free(o->dir);
  memset(o, 0, sizeof *o);
}

static int owner_load(const struct cli *cli, const char *id, struct owner *o) {
  memset(o, 0, sizeof *o);
  tg_error *e = NULL;
  if (cli->root == NULL || state_load(cli->root, id, &o->state, &o->dir, &e) < 0) {
    tg_error_free(&e);
    return -1;
  }
  long long init = 0;
  if (json_integer_value(json_object_get(o->state, "init_pid"), &init) && init > 0 && init < INT_MAX)
    o->init = (pid_t)init;
  return 0;
}

/* The owner's live status, as its backend reports it.  Its recorded pid
 * is not enough: runsc 20221219 keeps the sandbox process after the
 * pause's init is killed, its control server gone, so a join would fail
 * in runsc ("connection refused") instead of with this refusal. */
static bool owner_runs(const struct cli *cli, const char *id, const struct owner *o) {
  if (o->init <= 0 || kill(o->init, 0) < 0)
    return false;
  struct container c;
  tg_error *e = NULL;
  if (container_load(cli, id, &c, &e) < 0) {
    tg_error_free(&e);
    return false;
  }
  cleanup_json json_t *live = container_query(cli, &c, &e);
  tg_error_free(&e);
  const char *status = json_string_value(json_object_get(live, "status"));
  bool runs = status != NULL && (strcmp(status, "running") == 0 || strcmp(status, "created") == 0);
  container_free(&c);
  return runs;
}

static const char *ns_kind(const char *type) {
  static const char *const map[][2] = {{"pid", "pid"}, {"network", "net"}, {"mount", "mnt"}, {"ipc", "ipc"},
                                       {"uts", "uts"}, {"cgroup", "cgroup"}, {"time", "time"}};
  for (size_t i = 0; type != NULL && i < sizeof map / sizeof map[0]; i++)
    if (strcmp(map[i][0], type) == 0)
      return map[i][1];
  return NULL;
}

/* Is path (a namespace of kind) pid's?  literal: exactly
 * /proc/<pid>/ns/<kind> (runsc's sandbox process may sit in the host's
 * PID namespace, which no comparison could tell apart); otherwise the
 * same namespace by device and inode when that is not the host's own (a
 * path through another of the owner's processes, or a bind mount of its
 * namespace file). */
static bool names_ns_of(const char *path, const char *kind, pid_t pid, bool literal) {
  char lit[64];
  snprintf(lit, sizeof lit, "/proc/%d/ns/%s", (int)pid, kind);
  if (literal)
    return strcmp(path, lit) == 0;
  struct stat a, b, host;
  char hostp[64];
  snprintf(hostp, sizeof hostp, "/proc/1/ns/%s", kind);
  if (stat(path, &a) < 0 || stat(lit, &b) < 0)
    return false;
  if (stat(hostp, &host) == 0 && host.st_dev == a.st_dev && host.st_ino == a.st_ino)
    return false;
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* One pass over the root's containers for path_owner(). */
static char *path_owner_pass(const struct cli *cli, const char *path, const char *kind, bool literal) {
  DIR *d = opendir(cli->root);
  if (d == NULL)
    return NULL;
  char *found = NULL;
  struct dirent *de;
  while (found == NULL && (de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.' || !container_id_is_valid(de->d_name) || strcmp(de->d_name, "backend") == 0)
      continue;
    struct owner o;
    if (owner_load(cli, de->d_name, &o) < 0)
      continue;
    /* By identity, a joiner's namespaces are its owner's: the owner is
     * the one that made them. */
    bool joiner = json_object_get(o.state, "join") != NULL;
    if (o.init > 0 && (literal || !joiner) && kill(o.init, 0) == 0 && names_ns_of(path, kind, o.init, literal))
      found = xstrdup(de->d_name);
    owner_free(&o);
  }
  closedir(d);
  return found;
}

/* The tollgate container of this root whose init's namespace path names
 * (by its literal /proc path first, then by identity), or NULL (owned). */
static char *path_owner(const struct cli *cli, const char *path, const char *kind) {
  if (cli->root == NULL)
    return NULL;
  char *found = path_owner_pass(cli, path, kind, true);
  return found ? found : path_owner_pass(cli, path, kind, false);
}

/* The proof for a join of owner id, or a refusal that names the rule and
 * the three ways to allow it. */
static void prove(const struct cli *cli, const struct join_request *req, const struct owner *o, const char *id,
                  struct join *j) {
  struct join_caller oc;
  join_caller_recorded(o->state, &oc);
  j->proof = join_proof(req->caller, &oc, req->vouched, id, cli->config.trusted_join_callers);
  if (j->proof == NULL) {
    cleanup_free char *mine = req->caller->pid > 0
                                  ? xasprintf("%s (pid %d)", req->caller->exe ? req->caller->exe : "?", (int)req->caller->pid)
                                  : xstrdup("unknown");
    cleanup_free char *theirs = oc.pid > 0 ? xasprintf("%s (pid %d)", oc.exe ? oc.exe : "?", (int)oc.pid)
                                           : xstrdup("not recorded");
    tg_error_set(&j->refused, 0,
                 "this container asks to join %s's namespaces, and nothing proves they belong together: the join "
                 "rule (docs/hardening.md \"Joins\") accepts a join only when the same containerd shim created both, "
                 "when the caller passes --join %s, or when the host config's trusted_join_callers names both "
                 "callers (this one's is %s, %s's was %s)",
                 id, id, mine, id, theirs);
  }
  join_caller_free(&oc);
}

/* The pod member's sandbox: role, backend, liveness, identity, proof. */
static void decide_pod(const struct cli *cli, const struct join_request *req, const char *pod, struct join *j) {
  struct owner o;
  if (owner_load(cli, pod, &o) < 0) {
    tg_error_set(&j->refused, 0, "the CRI annotations ask to join pod sandbox %s, which is not a container of this tollgate root (%s): a container joins only a pause container tollgate runs under the same --root",
           pod, cli->root ? cli->root : "?");
    return;
  }
  const char *role = json_string_value(json_get_path(o.state, "cri.role"));
  const char *be = json_string_value(json_object_get(o.state, "backend"));
  const char *be_path = json_string_value(json_object_get(o.state, "backend_path"));
  const char *backend = json_string_value(json_object_get(req->state, "backend"));
  const char *path = json_string_value(json_object_get(req->state, "backend_path"));
  cleanup_json json_t *pause_config = NULL;
  tg_error *e = NULL;
  /* A sandbox is recorded with role "sandbox".  A container recorded with
   * no CRI role at all and joining nobody may stand as one too: Podman's
   * infra container carries no type (its members name it by id); the
   * proof below is asked of it all the same.  A pod member ("container")
   * or any joiner is never a sandbox. */
  bool infra = role == NULL && json_object_get(o.state, "join") == NULL;
  if (!infra && (role == NULL || strcmp(role, "sandbox") != 0)) {
    tg_error_set(&j->refused, 0, "the CRI annotations ask to join %s, which is not a pod sandbox (pause) container: only a container created with io.kubernetes.cri.container-type=sandbox can be joined",
           pod);
  } else if (be == NULL || backend == NULL || strcmp(be, backend) != 0 || be_path == NULL || path == NULL ||
             strcmp(be_path, path) != 0) {
    tg_error_set(&j->refused, 0, "the pod sandbox %s runs under %s (%s), this container under %s (%s): a pod's containers share one backend",
                 pod, be ? be : "?", be_path ? be_path : "?", backend ? backend : "?", path ? path : "?");
  } else if (!owner_runs(cli, pod, &o)) {
    tg_error_set(&j->refused, 0, "the pod sandbox %s is not running: start the pod's sandbox first", pod);
  } else if (state_backend_id(o.state, pod) == NULL) {
    tg_error_set(&j->refused, 0, "the pod sandbox %s records no valid backend id: remove the pod", pod);
  } else if ((pause_config = state_read_json(o.dir, "config.json", &e)) == NULL) {
    tg_error_free(&e);
    tg_error_set(&j->refused, 0, "the pod sandbox %s has no effective config in its state directory: recreate the pod", pod);
  } else if (join_pod_identity(req->config, pause_config, pod, &j->refused) == 0) {
    prove(cli, req, &o, pod, j);
  }
  if (j->refused == NULL) {
    j->owner = xstrdup(pod);
    j->owner_pid = o.init;
    j->owner_backend_id = xstrdup(state_backend_id(o.state, pod));
    j->pod = true;
    j->share_pid = oci_cri_shares_pod_pid(req->config, o.init);
    /* The pod's Kubernetes namespace, when containerd's CRI (the k8s.io
     * namespace's shim, the same one as the sandbox's) made both. */
    if (strcmp(j->proof, "the same containerd shim") == 0 && req->caller->containerd_ns != NULL &&
        strcmp(req->caller->containerd_ns, "k8s.io") == 0) {
      const char *ns = json_string_value(json_object_get(json_object_get(pause_config, "annotations"), CRI_NAMESPACE));
      j->kube_namespace = ns ? xstrdup(ns) : NULL;
    }
  }
  owner_free(&o);
}

/* A join by namespace path: owner id, found by one of its paths. */
static void decide_path(const struct cli *cli, const struct join_request *req, const char *id, struct join *j) {
  struct owner o;
  if (owner_load(cli, id, &o) < 0) {
    tg_error_set(&j->refused, 0, "the namespaces this container asks for belong to %s, whose state is gone", id);
    return;
  }
  const char *be = json_string_value(json_object_get(o.state, "backend"));
  const char *backend = json_string_value(json_object_get(req->state, "backend"));
  if (be == NULL || backend == NULL || strcmp(be, backend) != 0) {
    tg_error_set(&j->refused, 0, "this container asks to join %s's namespaces, which runs under %s, this one under %s: a join shares one backend",
           id, be ? be : "?", backend ? backend : "?");
  } else if (json_is_true(json_object_get(o.state, "waiter"))) {
    /* runsc: the recorded init is its waiter; its namespaces are inside
     * a sandbox of another container, which is the one to join. */
    const char *in = json_string_value(json_get_path(o.state, "join.owner"));
    tg_error_set(&j->refused, 0, "this container asks to join %s's namespaces, and %s runs inside %s's gVisor sandbox: join %s instead",
                 id, id, in ? in : "another container", in ? in : "that container");
  } else if (!owner_runs(cli, id, &o)) {
    tg_error_set(&j->refused, 0, "this container asks to join %s's namespaces, and %s is not running", id, id);
  } else if (state_backend_id(o.state, id) == NULL) {
    tg_error_set(&j->refused, 0, "%s records no valid backend id: it cannot be joined", id);
  } else {
    prove(cli, req, &o, id, j);
  }
  if (j->refused == NULL) {
    j->owner = xstrdup(id);
    j->owner_pid = o.init;
    j->owner_backend_id = xstrdup(state_backend_id(o.state, id));
    j->share_pid = oci_cri_shares_pod_pid(req->config, o.init);
  }
  owner_free(&o);
}

/* The owner every non-network, non-user namespace path of config names,
 * or a refusal: a path that no tollgate container of this root owns (the
 * container would share namespaces with something tollgate never made),
 * or paths naming two containers.  *owner NULL: no path at all. */
static void path_claim(const struct cli *cli, const json_t *config, char **owner, struct join *j) {
  *owner = NULL;
  const json_t *nss = json_get_path(config, "linux.namespaces");
  for (size_t i = 0; i < json_array_len(nss) && j->refused == NULL; i++) {
    const json_t *ns = json_array_get(nss, i);
    const char *type = json_string_value(json_object_get(ns, "type")) ?: "";
    const char *path = json_string_value(json_object_get(ns, "path"));
    const char *kind = ns_kind(type);
    /* user: oci_userns_harden refuses a path; network: see
     * join_check_kept_network; an unknown type: oci_harden names it. */
    if (path == NULL || path[0] == '\0' || strcmp(type, "user") == 0 || strcmp(type, "network") == 0 || kind == NULL)
      continue;
    /* A path of another kind (a user namespace given as pid), or no
     * namespace file at all, is no claim on anyone's namespace: oci_harden
     * refuses it with a message that names what it really is. */
    const char *is = oci_namespace_kind(path);
    if (is != NULL && strcmp(is, type) != 0)
      continue;
    char *who = path_owner(cli, path, kind);
    char idx[24];
    snprintf(idx, sizeof idx, "%zu", i);
    if (who == NULL) {
      /* The host's own namespace gets oci_harden's message, which names it so. */
      char hostp[64];
      struct stat a, h;
      snprintf(hostp, sizeof hostp, "/proc/1/ns/%s", kind);
      if (stat(path, &a) == 0 && stat(hostp, &h) == 0 && a.st_dev == h.st_dev && a.st_ino == h.st_ino)
        continue;
      tg_error_set(&j->refused, 0,
                   "linux.namespaces[%s]: the %s namespace %s belongs to no running container of this --root "
                   "(%s): a container joins only a tollgate container's namespaces (/proc/<its init pid>/ns/%s), "
                   "and only as the join rule allows (docs/hardening.md \"Joins\"); remove the path",
                   idx, type, path, cli->root ? cli->root : "?", kind);
    } else if (*owner != NULL && strcmp(*owner, who) != 0) {
      tg_error_set(&j->refused, 0, "linux.namespaces[%s]: %s is %s's, but another path names %s: a container joins one container's namespaces",
                   idx, path, who, *owner);
    } else if (*owner == NULL) {
      *owner = who;
      who = NULL;
    }
    free(who);
  }
}

/* Forget the owner (a refused or dropped claim). */
static void join_clear(struct join *j) {
  free(j->owner);
  free(j->owner_backend_id);
  free(j->kube_namespace);
  j->owner = j->owner_backend_id = j->kube_namespace = NULL;
  j->owner_pid = 0;
  j->pod = j->share_pid = j->net = false;
  j->proof = NULL;
}

/* The tollgate container whose network namespace config's network path
 * is, or NULL (owned). */
static char *network_claim(const struct cli *cli, const json_t *config) {
  const json_t *nss = json_get_path(config, "linux.namespaces");
  for (size_t i = 0; i < json_array_len(nss); i++) {
    const json_t *ns = json_array_get(nss, i);
    const char *type = json_string_value(json_object_get(ns, "type")) ?: "";
    const char *path = json_string_value(json_object_get(ns, "path"));
    if (strcmp(type, "network") == 0 && path != NULL && path[0] != '\0')
      return path_owner(cli, path, "net");
  }
  return NULL;
}

int join_decide(const struct cli *cli, const struct join_request *req, struct join *out, tg_error **err) {
  memset(out, 0, sizeof *out);
  struct cri_record asked = {0};
  if (oci_cri_read(req->config, &asked, err) < 0)
    return -1;
  bool member = oci_cri_is_pod_member(&asked) && strcmp(asked.pod, req->id) != 0;
  bool sandbox = asked.role != NULL && (strcmp(asked.role, "sandbox") == 0 ||
                                        (asked.pod != NULL && strcmp(asked.pod, req->id) == 0));
  cleanup_free char *by_path = NULL;
  path_claim(cli, req->config, &by_path, out);
  if (out->refused == NULL && member) {
    decide_pod(cli, req, asked.pod, out);
    if (out->refused == NULL && by_path != NULL && strcmp(by_path, out->owner) != 0) {
      tg_error_set(&out->refused, 0, "this container names pod sandbox %s but its namespace paths are %s's: a pod member joins its own pod's sandbox",
                   out->owner, by_path);
    }
  } else if (out->refused == NULL && by_path != NULL) {
    decide_path(cli, req, by_path, out);
  }
  /* A network path of a tollgate container: a join only where the
   * profile keeps it (join_check_kept_network refuses it unproven then);
   * proven here, it is a join like any other, so --join and the other
   * proofs hold for it too.  Unproven, it is left to that check. */
  cleanup_free char *by_net = out->refused == NULL ? network_claim(cli, req->config) : NULL;
  if (by_net != NULL && out->owner == NULL) {
    decide_path(cli, req, by_net, out);
    if (out->refused != NULL && (req->vouched == NULL || strcmp(req->vouched, by_net) != 0)) {
      tg_error_free(&out->refused);
      join_clear(out);
    }
  }
  if (by_net != NULL && out->owner != NULL && strcmp(by_net, out->owner) == 0)
    out->net = true;
  if (out->refused == NULL && out->owner == NULL && req->vouched != NULL)
    tg_error_set(&out->refused, 0, "--join %s: this container's config joins no container's namespaces (no CRI sandbox id, no /proc/<pid>/ns path of a container of this --root): remove --join or add the paths",
                 req->vouched);
  else if (out->refused == NULL && out->owner != NULL && req->vouched != NULL && strcmp(req->vouched, out->owner) != 0)
    tg_error_set(&out->refused, 0, "--join %s: this container's config joins %s, not %s: the caller vouches for one container by its id",
                 req->vouched, out->owner, req->vouched);
  /* A pod's sandbox made through containerd's CRI: containerd wrote its
   * Kubernetes namespace (the k8s.io namespace is the CRI plugin's). */
  if (out->refused == NULL && sandbox && req->caller->containerd_shim && req->caller->containerd_ns != NULL &&
      strcmp(req->caller->containerd_ns, "k8s.io") == 0) {
    const char *ns = json_string_value(json_object_get(json_object_get(req->config, "annotations"), CRI_NAMESPACE));
    out->kube_namespace = ns ? xstrdup(ns) : NULL;
  }
  if (out->refused != NULL)
    join_clear(out);
  cri_record_free(&asked);
  return 0;
}

int join_check_kept_network(const struct cli *cli, const json_t *hardened, const struct join *j, bool own_userns,
                            tg_error **err) {
  const json_t *nss = json_get_path(hardened, "linux.namespaces");
  for (size_t i = 0; i < json_array_len(nss); i++) {
    const json_t *ns = json_array_get(nss, i);
    const char *type = json_string_value(json_object_get(ns, "type")) ?: "";
    const char *path = json_string_value(json_object_get(ns, "path"));
    if (strcmp(type, "network") != 0 || path == NULL || path[0] == '\0')
      continue;
    cleanup_free char *who = path_owner(cli, path, "net");
    if (j->owner != NULL && who != NULL && strcmp(who, j->owner) == 0)
      continue; /* the proven owner's (and its user namespace's) */
    /* The client's network (CNI, Podman): no join.  But the kernel lets
     * only the user namespace that owns a network namespace mount sysfs
     * in it, so runc cannot make /sys for a container with a user
     * namespace of its own there (binding the host's /sys instead, as
     * Docker does, would show the host's interfaces). */
    if (who == NULL && own_userns)
      return tg_error_set(err, 0,
                          "linux.namespaces[%zu]: the profile keeps the network namespace %s, which the container's "
                          "own user namespace (its host id range) does not own, so runc cannot mount /sys there: "
                          "use a profile with \"network\": \"none\" (the shipped ones: the container gets a new "
                          "lo-only namespace), or remove the path",
                          i, path);
    if (who == NULL)
      continue;
    return tg_error_set(err, 0,
                        "linux.namespaces[%zu]: the network namespace %s is container %s's, and nothing proves this "
                        "container belongs with it: the join rule (docs/hardening.md \"Joins\") accepts it when the "
                        "same containerd shim created both, when the caller passes --join %s, or when the host "
                        "config's trusted_join_callers names both callers",
                        i, path, who, who);
  }
  return 0;
}

void join_record(const struct join *j, json_t *state) {
  if (j->owner == NULL)
    return;
  json_t *o = json_new_object();
  json_object_set(o, "owner", json_new_string(j->owner));
  json_object_set(o, "proof", json_new_string(j->proof ? j->proof : ""));
  json_object_set(state, "join", o);
}

void join_free(struct join *j) {
  free(j->owner);
  free(j->owner_backend_id);
  free(j->kube_namespace);
  tg_error_free(&j->refused);
  memset(j, 0, sizeof *j);
}
