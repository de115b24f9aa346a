/* create: from a bundle to a created container, all or nothing. */
#include "shim/lifecycle/container.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bridge/area.h"
#include "oci/cri.h"
#include "oci/harden.h"
#include "shim/lifecycle/effective_mark.h"
#include "shim/lifecycle/idrange.h"
#include "shim/lifecycle/join.h"
#include "oci/netcheck.h"
#include "base/hostconfig.h"
#include "shim/lifecycle/mount_pin.h"
#include "shim/lifecycle/mount_points.h"
#include "shim/lifecycle/mount_reach.h"
#include "shim/lifecycle/runc_floor.h"
#include "base/log.h"
#include "shim/lifecycle/state.h"
#include "base/util.h"
#include "shim/lifecycle/waiter.h"

#define CONFIG_MAX_BYTES (16u * 1024 * 1024)
#define POLICY_ANNOTATION "dev.tollgate.policy"

/* Everything create did so far, for the undo. */
struct undo {
  int bundle_fd;
  char *config_before;   /* config.json's bytes before we touched it */
  size_t config_before_len;
  mode_t config_mode;
  bool wrote_config;
  bool wrote_orig;
  bool wrote_mark;       /* the mark is new: removed with the original */
  char *dir;             /* state directory, once claimed */
  bool backend_called;
  int lock_fd;           /* the state directory's lock, or -1 */
  struct bridge_gate_opening *gate_opening; /* run: the gate, opening */
};

/* Join the gate's opening (if one is under way): the gate goes to out,
 * or its error to err. */
static int gate_opened(struct undo *u, struct created *out, tg_error **err) {
  if (u->gate_opening == NULL)
    return 0;
  int r = bridge_gate_open_end(u->gate_opening, &out->gate, err);
  u->gate_opening = NULL;
  return r;
}

/* The gate's audit log hashes its first record (the "open") with
 * SHA-256, and OpenSSL 3's first fetch of a digest initialises the
 * library: its config file, the default provider, every algorithm's
 * method; callgrind put that at a third of the instructions of a whole
 * `tollgate run` (~1.5 ms), and the sidecar paid it again before it was
 * ready.  A thread pays it while create parses and hardens the bundle;
 * the audit log's own fetch (run's gate opening, on its own thread, or
 * the sidecar, which inherits the initialised library through fork) then
 * finds it in OpenSSL's cache.  Nothing is skipped: the same
 * initialisation, earlier and on the other core.  The thread is joined
 * before create starts the backend or the sidecar, so no forked child can
 * inherit a lock it holds. */
struct warm_up {
  pthread_t thread;
  bool running;
};

static void *warm_up_sha256(void *arg) {
  (void)arg;
  EVP_MD_free(EVP_MD_fetch(NULL, "SHA256", NULL));
  return NULL;
}

static void warm_up_start(struct warm_up *w) {
  /* Signals stay the main thread's (the backend calls forward them). */
  w->running = thread_start_masked(&w->thread, warm_up_sha256, NULL);
}

static void warm_up_wait(struct warm_up *w) {
  if (w->running)
    pthread_join(w->thread, NULL);
  w->running = false;
}

static void undo_all(struct cli *cli, struct undo *u, const char *id) {
  if (u->backend_called) {
    struct container c = {.id = (char *)id, .dir = u->dir};
    tg_error *e = NULL;
    json_t *s = state_read_json(u->dir, "state.json", &e);
    tg_error_free(&e);
    c.backend_id = (char *)state_backend_id(s, id);
    if (s && c.backend_id && backend_from_state(s, &c.backend, &e) == 0) {
      char *args[] = {"--force", NULL};
      struct proc_opts quiet = {.capture_stdout = true, .capture_stderr = true};
      struct proc_result res;
      if (container_call(cli, &c, "delete", args, NULL, &quiet, &res, &e) >= 0)
        proc_result_free(&res);
      backend_free(&c.backend);
    }
    tg_error_free(&e);
    json_free(s);
  }
  if (u->dir) {
    tg_error *e = NULL;
    mount_reach_release(u->dir, &e);
    tg_error_free(&e);
    bridge_teardown(u->dir, &e);
    tg_error_free(&e);
    mount_pin_release(u->dir, &e);
    tg_error_free(&e);
    remove_tree(u->dir, &e);
    tg_error_free(&e);
    idrange_release_owner(&cli->config, u->dir);
  }
  if (u->wrote_config) {
    tg_error *e = NULL;
    write_file_atomic(u->bundle_fd, "config.json", u->config_before,
                      u->config_before_len, u->config_mode, true, &e);
    tg_error_free(&e);
  }
  if (u->wrote_orig)
    unlinkat(u->bundle_fd, "config.json.orig", 0);
  if (u->wrote_mark)
    unlinkat(u->bundle_fd, EFFECTIVE_MARK, 0);
}

/* Claim the container's host id range before hardening: the slots its
 * own user namespace mappings touch, or (runc without mappings) a free
 * one, which oci_harden() then maps.  Recorded in state as "id_range";
 * freed by delete (idrange_release_owner). */
/* The range and user namespace a container shares instead of claiming a
 * range of its own: a pod member under runc joins its sandbox's. */
struct shared_range {
  pid_t owner_pid;
  unsigned long long first, size;
};

/* A runc pod member shares the range of its pod's sandbox container (pid
 * pod_pid, accepted by the join rule, shim/lifecycle/join.h): one user namespace per pod,
 * which owns the ipc/uts/pid namespaces the member joins.  Its claim file
 * gets this container's line too, so the range outlives the pause until
 * the pod's last container is deleted.  0 with *share unset when the
 * sandbox has no range (created without a pool): the member then keeps
 * the host user namespace as its sandbox does. */
static int share_pod_range(struct cli *cli, const struct id_pool *pool, const char *pod, pid_t pod_pid,
                           const char *dir, json_t *state, struct shared_range *share, tg_error **err) {
  cleanup_json json_t *pst = NULL;
  cleanup_free char *pdir = NULL;
  tg_error *e = NULL;
  if (state_load(cli->root, pod, &pst, &pdir, &e) < 0) {
    tg_error_free(&e);
    return 0;
  }
  const json_t *r = json_object_get(pst, "id_range");
  const json_t *one = json_array_get(json_object_get(r, "ranges"), 0);
  long long first = 0, size = 0;
  if (one == NULL || !json_integer_value(json_object_get(one, "host_first"), &first) ||
      !json_integer_value(json_object_get(one, "size"), &size))
    return 0;
  const char *pdir_pool = json_string_value(json_object_get(r, "pool"));
  unsigned long long f = (unsigned long long)first;
  if (pdir_pool == NULL || strcmp(pdir_pool, pool->dir) != 0 || first < 0 || f < pool->base ||
      (unsigned long long)size != pool->size || (f - pool->base) % pool->size != 0 ||
      json_array_len(json_object_get(r, "ranges")) != 1)
    return tg_error_set(err, 0, "the pod's sandbox container %s holds host ids that are not one range of this "
                        "host's pool %s: recreate the pod", pod, pool->dir);
  if (idrange_share(pool, dir, pdir, (f - pool->base) / pool->size, err) < 0)
    return -1;
  json_t *mine = json_copy(r);
  json_object_set(mine, "pod", json_new_string(pod));
  json_object_set(state, "id_range", mine);
  share->owner_pid = pod_pid;
  share->first = f;
  share->size = pool->size;
  return 0;
}

static int claim_id_range(struct cli *cli, const json_t *config, const char *dir,
                          json_t *state, struct harden_options *ho, const char *pod, pid_t pod_pid,
                          struct shared_range *share, tg_error **err) {
  struct id_pool pool = idrange_pool(&cli->config);
  if (pool.count == 0)
    return 0;
  ho->id_pool_first = pool.base;
  ho->id_pool_end = pool.base + pool.size * pool.count;
  cleanup_free unsigned long long *slots = NULL;
  size_t n = 0;
  bool maps = false;
  oci_userns_slots(config, pool.base, pool.size, pool.count, &slots, &n, &maps);
  bool runc = strcmp(json_string_value(json_object_get(state, "backend")) ?: "", "runc") == 0;
  if (n == 0 && !maps && runc && pod_pid > 0 && pod != NULL) {
    if (share_pod_range(cli, &pool, pod, pod_pid, dir, state, share, err) < 0)
      return -1;
    if (share->size == 0)
      return 0;
    if (chmod(dir, 0711) < 0)
      return tg_error_set(err, errno, "chmod %s", dir);
    return 0;
  }
  if (n == 0 && (maps || !runc || oci_joins_a_namespace(config)))
    return 0; /* nothing to claim (out-of-pool mappings are refused by oci_harden) */
  unsigned long long slot = 0;
  if (idrange_claim(&pool, dir, slots, n, &slot, err) < 0)
    return -1;
  json_t *r = json_new_object();
  json_t *list = json_new_array();
  for (size_t i = 0; i < (n ? n : 1); i++) {
    unsigned long long k = n ? slots[i] : slot;
    json_t *one = json_new_object();
    json_object_set(one, "host_first", json_new_integer((long long)(pool.base + k * pool.size)));
    json_object_set(one, "size", json_new_integer((long long)pool.size));
    json_array_append(list, one);
  }
  json_object_set(r, "ranges", list);
  json_object_set(r, "pool", json_new_string(pool.dir));
  json_object_set(state, "id_range", r);
  if (n == 0) {
    ho->id_range_first = pool.base + slot * pool.size;
    ho->id_range_size = pool.size;
  }
  /* runc mounts, and runsc's gofer opens mounts, as the container's root:
   * an unprivileged host id of the range.  It must be able to walk into
   * the state directory to reach the bridge area (its files stay 0600
   * root, and it cannot list it). */
  if (chmod(dir, 0711) < 0)
    return tg_error_set(err, errno, "chmod %s", dir);
  return 0;
}

static json_t *parse_config(const char *bundle, const char *name,
                            const char *buf, size_t len, tg_error **err) {
  struct json_parse_options po = {.max_depth = 64, .track_positions = true};
  tg_error *pe = NULL;
  json_t *v = json_parse(buf, len, &po, &pe);
  if (v == NULL) {
    tg_error_set(err, 0, "bundle %s: %s: %s: fix the JSON", bundle, name,
                 pe->msg);
    tg_error_free(&pe);
    return NULL;
  }
  if (!json_is(v, JSON_OBJECT)) {
    json_free(v);
    tg_error_set(err, 0, "bundle %s: %s must hold a JSON object", bundle, name);
    return NULL;
  }
  return v;
}

/* --policy FILE, or the annotation dev.tollgate.policy=NAME, which can
 * only name a file in the host's policy directory: the workload chooses
 * among the host's policies, it never gives a path. */
static int resolve_policy(const struct cli *cli, const char *policy_file,
                          const json_t *source, const char *kube_ns, char **out, tg_error **err) {
  *out = NULL;
  if (policy_file != NULL) {
    char *p = realpath(policy_file, NULL);
    if (p == NULL)
      return tg_error_set(err, errno,
                          "--policy %s cannot be used: give the path of an "
                          "existing policy file",
                          policy_file);
    *out = p;
    return 0;
  }
  const json_t *ann = json_object_get(json_object_get(source, "annotations"),
                                      POLICY_ANNOTATION);
  const char *requested = json_string_value(ann);
  if (ann != NULL && (requested == NULL || !container_id_is_valid(requested)))
    return tg_error_set(err, 0,
                        "annotation %s must be a policy name "
                        "([A-Za-z0-9][A-Za-z0-9_.-]*, no path): it selects "
                        "<policy_dir>/NAME.json",
                        POLICY_ANNOTATION);
  /* The host config's binding decides what the workload may select, and
   * gives a namespace its default policy.  The namespace is only one that
   * containerd's CRI proved (shim/lifecycle/join.h), never an annotation alone. */
  cleanup_free char *name = NULL;
  if (policy_binding_resolve(&cli->config, requested, kube_ns,
                             cli->root ? cli->root : TG_DEFAULT_ROOT, &name, err) < 0)
    return -1;
  if (name == NULL)
    return 0;
  if (!container_id_is_valid(name))
    return tg_error_set(err, 0, "the host config's default policy \"%s\" is not a policy name",
                        name);
  const char *dir = cli->config.policy_dir;
  char *p = xasprintf("%s/%s.json", dir ? dir : "/etc/tollgate/policies", name);
  if (access(p, R_OK) < 0) {
    int e = errno;
    tg_error_set(err, e,
                 "annotation %s=%s names policy %s, which cannot be read: "
                 "install that policy or remove the annotation",
                 POLICY_ANNOTATION, name, p);
    free(p);
    return -1;
  }
  *out = p;
  return 0;
}

static char *owner_name(void) {
  /* runc reports an owner only for rootless containers; root is "". */
  if (geteuid() == 0)
    return xstrdup("");
  struct passwd *pw = getpwuid(geteuid());
  return pw ? xstrdup(pw->pw_name) : xasprintf("%u", (unsigned)geteuid());
}

static char *rootfs_path(const char *bundle, const json_t *config) {
  const char *root = json_string_value(json_get_path(config, "root.path"));
  if (root == NULL)
    return xstrdup("");
  if (root[0] == '/')
    return xstrdup(root);
  return xasprintf("%s/%s", bundle, root);
}

static int write_bundle_file(int bundle_fd, const char *bundle,
                             const char *name, const void *data, size_t len,
                             mode_t mode, tg_error **err) {
  if (write_file_atomic(bundle_fd, name, data, len, mode, true, err) < 0)
    return tg_error_wrap(err, "bundle %s", bundle);
  return 0;
}

/* Keep the user's config.json as config.json.orig before the effective
 * config replaces it: a hard link to the very file that was read (same
 * inode, so the same bytes, mode and owner), made under a temporary name
 * and renamed into place.  No byte is copied, so there is nothing to sync:
 * the original's data is whatever the user's file already had on disk, and
 * at every moment one of the two names holds it.  Filesystems without hard
 * links, or a config.json swapped by someone else since it was read, get a
 * synced copy of the bytes that were read instead. */
static int keep_original(int bundle_fd, const char *bundle, const struct stat *read_st,
                         const char *data, size_t len, mode_t mode, tg_error **err) {
  char tmp[64];
  snprintf(tmp, sizeof tmp, "config.json.orig.tmp.%d", (int)getpid());
  unlinkat(bundle_fd, tmp, 0); /* a leftover of a killed create */
  if (linkat(bundle_fd, "config.json", bundle_fd, tmp, 0) == 0) {
    struct stat st;
    if (fstatat(bundle_fd, tmp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        st.st_ino == read_st->st_ino && st.st_dev == read_st->st_dev) {
      if (renameat(bundle_fd, tmp, bundle_fd, "config.json.orig") == 0)
        return 0;
      int e = errno;
      unlinkat(bundle_fd, tmp, 0);
      return tg_error_set(err, e, "bundle %s: rename %s to config.json.orig",
                          bundle, tmp);
    }
    unlinkat(bundle_fd, tmp, 0); /* not the file we read: copy its bytes */
  } else if (errno != EPERM && errno != EXDEV && errno != ENOTSUP &&
             errno != EMLINK && errno != ENOSYS &&
             /* The file we read was renamed over (a concurrent create of
              * another container from this bundle wrote its effective
              * config): link(2) then fails ENOENT on the dying inode.
              * Its bytes are still ours to copy. */
             errno != ENOENT) {
    return tg_error_set(err, errno, "bundle %s: link config.json to %s",
                        bundle, tmp);
  }
  return write_bundle_file(bundle_fd, bundle, "config.json.orig", data, len,
                           mode, err);
}

static int do_create(struct cli *cli, const struct create_request *req,
                     struct created *out, struct undo *u, struct warm_up *warm,
                     tg_error **err) {
  const char *id = req->id;
  if (state_check_id(id, err) < 0)
    return -1;
  struct backend b;
  if (backend_choose(cli, &b, err) < 0)
    return -1;
  if (runc_floor_check(cli, &b, err) < 0) {
    backend_free(&b);
    return -1;
  }
  json_t *state = json_new_object();
  backend_to_state(&b, state);
  struct backend kind_only = {.kind = b.kind};
  backend_free(&b);

  /* The bundle and its config.json. */
  const char *given = req->bundle ? req->bundle : ".";
  cleanup_free char *bundle = realpath(given, NULL);
  if (bundle == NULL) {
    json_free(state);
    return tg_error_set(err, 0,
                        "bundle %s does not exist: pass --bundle DIR, the "
                        "directory that holds config.json",
                        given);
  }
  u->bundle_fd = open(bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (u->bundle_fd < 0) {
    json_free(state);
    return tg_error_set(err, errno, "bundle %s is not a directory", bundle);
  }
  /* config.json, config.json.orig and the mark beside them are read and
   * rewritten as one step: a second create from the same bundle that read
   * config.json between another's mark and config.json writes, or after a
   * third create replaced the mark, took the other's effective config for
   * the user's (20 concurrent creates from one bundle hit it).  Held until
   * create and its undo are over (closing bundle_fd drops it); only
   * creates from this very bundle wait. */
  int locked;
  do
    locked = flock(u->bundle_fd, LOCK_EX);
  while (locked < 0 && errno == EINTR);
  if (locked < 0) {
    json_free(state);
    return tg_error_set(err, errno, "bundle %s: cannot lock it against concurrent creates", bundle);
  }
  tg_error *re = NULL;
  if (read_file_untrusted(u->bundle_fd, "config.json", CONFIG_MAX_BYTES,
                          &u->config_before, &u->config_before_len, &re) < 0) {
    bool missing = re->errnum == ENOENT;
    json_free(state);
    if (missing) {
      tg_error_free(&re);
      return tg_error_set(err, 0,
                          "bundle %s has no config.json: write one with "
                          "'tollgate spec' or 'runc spec'",
                          bundle);
    }
    *err = re;
    return tg_error_wrap(err, "bundle %s: config.json", bundle);
  }
  struct stat st = {0};
  u->config_mode = 0644;
  if (fstatat(u->bundle_fd, "config.json", &st, AT_SYMLINK_NOFOLLOW) == 0)
    u->config_mode = st.st_mode & 0777;
  cleanup_json json_t *current = parse_config(
      bundle, "config.json", u->config_before, u->config_before_len, err);
  if (current == NULL) {
    json_free(state);
    /* The effective config is written without a sync (see below), so a
     * crash can leave it empty: the user's original is then beside it. */
    if (err != NULL && *err != NULL &&
        faccessat(u->bundle_fd, "config.json.orig", F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
      tg_error *pe = *err;
      *err = NULL;
      tg_error_set(err, 0, "%s; config.json.orig beside it is the original "
                   "an earlier create kept: if config.json is a half-written "
                   "effective config, move config.json.orig back to "
                   "config.json", pe->msg);
      tg_error_free(&pe);
    }
    return -1;
  }
  /* Which file is the user's?  An effective config that tollgate wrote on
   * an earlier create is hardened from the original kept beside it. */
  json_t *config = NULL;
  bool ours = effective_mark_is_ours(u->bundle_fd, u->config_before, u->config_before_len, current);
  cleanup_free char *orig_buf = NULL;
  size_t orig_len = 0;
  if (ours) {
    tg_error *oe = NULL;
    if (read_file_untrusted(u->bundle_fd, "config.json.orig", CONFIG_MAX_BYTES,
                            &orig_buf, &orig_len, &oe) < 0) {
      tg_error_free(&oe);
      json_free(state);
      return tg_error_set(err, 0,
                          "bundle %s: config.json was written by tollgate but "
                          "the original config.json.orig is gone: put the "
                          "original config.json back",
                          bundle);
    }
    config = parse_config(bundle, "config.json.orig", orig_buf, orig_len, err);
    if (config == NULL) {
      json_free(state);
      return -1;
    }
  } else {
    config = json_copy(current);
  }
  cleanup_json json_t *config_owner = config;

  /* Check the rootfs here: runsc reports a missing one only as "cannot read
   * client sync file", which names neither the problem nor the fix. */
  {
    cleanup_free char *rootfs = rootfs_path(bundle, config);
    struct stat rst;
    int e = 0;
    if (rootfs[0] == '\0') {
      json_free(state);
      return tg_error_set(err, 0, "bundle %s: config.json has no root.path: "
                          "set it to the container's root filesystem", bundle);
    }
    if (stat(rootfs, &rst) < 0)
      e = errno;
    else if (!S_ISDIR(rst.st_mode))
      e = ENOTDIR;
    if (e != 0) {
      json_free(state);
      return tg_error_set(err, e, "bundle %s: root.path %s is not a usable "
                          "directory (build the rootfs first, or fix root.path "
                          "in config.json)", bundle, rootfs);
    }
  }

  if (state_create_dir(cli->root, id, &u->dir, err) < 0) {
    json_free(state);
    return -1;
  }
  /* Held until create (or its undo) is over: a delete of this id waits. */
  u->lock_fd = state_lock(u->dir);
  cleanup_json json_t *state_owner = state;

  /* Whose namespaces it joins, by the join rule (shim/lifecycle/join.h): decided
   * from tollgate's records and the caller, before the policy (whose
   * Kubernetes namespace only a proven CRI container has). */
  struct join_caller caller;
  join_caller_self(&caller);
  cleanup_join struct join jn;
  struct join_request jr = {.id = id, .config = config, .state = state, .vouched = req->join, .caller = &caller};
  int jrc = join_decide(cli, &jr, &jn, err);
  join_caller_record(&caller, state);
  join_caller_free(&caller);
  if (jrc < 0)
    return tg_error_wrap(err, "bundle %s: config.json", bundle);
  /* Policy (from the user's config, before hardening touches it). */
  cleanup_free char *policy = NULL;
  if (resolve_policy(cli, req->policy_file, config, jn.kube_namespace, &policy, err) < 0)
    return -1;

  /* run serves the bridge itself: its gate opens while the bundle is
   * hardened, and is ready before the backend is called.  Without a
   * policy the profile decides whether there is a bridge at all
   * (passthrough has none), so the gate waits for the hardening. */
  out->dir = xstrdup(u->dir);
  out->policy_path = policy ? xstrdup(policy) : NULL;
  out->setup = (struct bridge_setup){.container_id = id,
                                     .state_dir = out->dir,
                                     .policy_path = out->policy_path,
                                     .host = &cli->config};
  if (req->in_process_bridge && policy != NULL)
    u->gate_opening = bridge_gate_open_begin(&out->setup);

  /* Hardening, then the pod policy. */
  cleanup_free char *profiles = host_config_data_path(&cli->config, "profiles", NULL);
  cleanup_free char *seccomp = host_config_data_path(&cli->config, "seccomp", NULL);
  struct harden_options ho = {
      .profile = cli->config.profile,
      .profiles_dir = profiles,
      .seccomp_dir = seccomp,
      .allow_passthrough = cli->config.allow_passthrough,
      .backend = json_string_value(json_object_get(state, "backend")),
      .bundle_dir = bundle,
      .state_root = cli->root,
      .audit_dir = cli->config.audit_dir,
  };
  /* A container that joins another (a pod member, a namespace path of a
   * tollgate container) shares its namespaces, its user namespace and
   * range under runc, and under runsc its sandbox (docs/kubernetes.md
   * "Pods"), once the join rule accepted it (shim/lifecycle/join.h).  A refusal
   * waits for the profile: passthrough is the bare backend. */
  pid_t pod_pid = jn.pod || jn.net ? jn.owner_pid : 0;
  ho.pod_sandbox_pid = jn.owner_pid;
  struct shared_range share = {0};
  if (claim_id_range(cli, config, u->dir, state, &ho, jn.owner, jn.owner_pid, &share, err) < 0)
    return tg_error_wrap(err, "bundle %s: config.json", bundle);
  struct harden_result hr = {0};
  /* A refused join is the reason whatever hardening says of its paths
   * (runsc's sandbox pid namespace is the host's, say): passthrough,
   * which alone would take it, checks nothing and cannot fail here. */
  if (oci_harden(config, &ho, &hr, err) < 0) {
    if (jn.refused != NULL) {
      tg_error_free(err);
      *err = jn.refused;
      jn.refused = NULL;
    }
    return tg_error_wrap(err, "bundle %s: config.json", bundle);
  }
  if (jn.refused != NULL && !hr.passthrough) {
    harden_result_free(&hr);
    *err = jn.refused;
    jn.refused = NULL;
    return tg_error_wrap(err, "bundle %s: config.json", bundle);
  }
  cleanup_free char *profile = hr.profile ? xstrdup(hr.profile) : xstrdup("");
  bool passthrough = hr.passthrough;
  /* Into the runtime log (--log, which Docker, Podman and containerd
   * give), never onto a person's terminal: there the effective config
   * says it all, and stderr stays the container's. */
  if (hr.notice != NULL && cli->log_path != NULL) {
    cleanup_free char *msg = xasprintf("container %s: %s", id, hr.notice);
    log_line(cli->log_path, cli->log_json, "warning", msg);
  }
  harden_result_free(&hr);
  /* passthrough maps nothing: its range would be held for no one. */
  if ((ho.id_range_size != 0 && json_get_path(config, "linux.uidMappings") == NULL) ||
      (share.size != 0 && passthrough)) {
    idrange_release_owner(&cli->config, u->dir);
    json_object_del(state, "id_range");
  } else if (share.size != 0 &&
             oci_userns_join_pod(config, share.owner_pid, share.first, share.size, err) < 0) {
    return tg_error_wrap(err, "bundle %s: config.json", bundle);
  }
  bool own_userns = strcmp(ho.backend ?: "", "runc") == 0 && share.size == 0 &&
                    json_array_len(json_get_path(config, "linux.uidMappings")) > 0;
  if (!passthrough && join_check_kept_network(cli, config, &jn, own_userns, err) < 0)
    return tg_error_wrap(err, "bundle %s: config.json", bundle);
  /* passthrough is the bare backend: the user's config byte for byte, no
   * pod policy, and no bridge unless a policy was given explicitly (the
   * bridge's mounts then go in, and nothing else). */
  out->bridged = !passthrough || policy != NULL;
  struct cri_record cri = {0};
  if (!passthrough && oci_apply_cri_policy(config, &cri, err) < 0)
    return tg_error_wrap(err, "bundle %s: config.json", bundle);
  /* runc: the pod's loopback is its sandbox's network namespace (checked
   * loopback-only after the backend's create, like any other).  runsc:
   * the pause container is the root of the pod's sandbox and an app
   * container starts inside it (oci/cri.c says why). */
  bool runsc = ho.backend != NULL && strcmp(ho.backend, "runsc") == 0;
  bool joined = false;
  if (pod_pid > 0 && !passthrough && !runsc &&
      oci_cri_join_pod_network(config, pod_pid, err) < 0) {
    cri_record_free(&cri);
    return tg_error_wrap(err, "bundle %s: config.json", bundle);
  }
  /* A config naming itself as its sandbox (Podman's infra container) is
   * its pod's sandbox. */
  if (cri.role != NULL && cri.pod != NULL && strcmp(cri.pod, id) == 0) {
    free(cri.role);
    cri.role = xstrdup("sandbox");
  }
  if (runsc && !passthrough) {
    if (cri.role != NULL && strcmp(cri.role, "sandbox") == 0) {
      oci_cri_mark_sandbox(config);
    } else if (jn.owner != NULL) {
      /* A pod member, and as well any other accepted join (Podman's
       * --pid=container:): gVisor shares a namespace only inside one
       * sandbox, so the joiner starts in its owner's. */
      if (oci_cri_join_sandbox(config, jn.owner_backend_id, jn.share_pid && jn.pod, jn.owner_pid, err) < 0) {
        cri_record_free(&cri);
        return tg_error_wrap(err, "bundle %s: config.json", bundle);
      }
      if (jn.share_pid && !jn.pod)
        oci_cri_join_root_pid(config);
      joined = true;
    }
  }
  if (!passthrough)
    join_record(&jn, state);
  if (cri.role != NULL) {
    json_t *pod = json_new_object();
    json_object_set(pod, "role", json_new_string(cri.role));
    json_object_set(pod, "sandbox", cri.pod ? json_new_string(cri.pod) : json_new_null());
    if (joined)
      json_object_set(pod, "joined", json_new_string(jn.owner_backend_id));
    json_object_set(state, "cri", pod);
  }
  cri_record_free(&cri);
  /* The backend gets sources that cannot change after this check (a
   * passthrough profile applies nothing, this included). */
  if (!passthrough && mount_pin_all(u->dir, config, &ho, err) < 0)
    return tg_error_wrap(err, "bundle %s: config.json", bundle);
  if (req->in_process_bridge && out->bridged && u->gate_opening == NULL)
    u->gate_opening = bridge_gate_open_begin(&out->setup);

  /* The bridge area and its mounts. */
  if (out->bridged && bridge_prepare(&out->setup, config, err) < 0)
    return -1;
  /* runc (and runsc's gofer) make missing mount points and the cwd as the
   * container's root, which a user namespace maps to an unprivileged host
   * id: in an image rootfs owned by host root they cannot, so tollgate
   * makes them first, the bridge's included (shim/lifecycle/mount_points.h).  Under
   * passthrough only the bridge's: the user's are the bare backend's to
   * make or refuse. */
  if ((!passthrough || out->bridged) &&
      json_array_len(json_get_path(config, "linux.uidMappings")) > 0 &&
      (mount_points_make(config, bundle, passthrough ? BRIDGE_CONTAINER_DIR : NULL, err) < 0 ||
       (!passthrough && mount_points_make_cwd(config, bundle, err) < 0)))
    return tg_error_wrap(err, "bundle %s: config.json", bundle);
  /* The mapped root (runc's, and runsc's gofer with mappings) resolves the
   * pins and the bridge area by path, and no other host user may: the
   * state directory passes its group alone, and when a parent (Docker's
   * 0700 exec root) keeps it out, the config goes through a view only it
   * can reach (shim/lifecycle/mount_reach.h). */
  if (!passthrough && json_array_len(json_get_path(config, "linux.uidMappings")) > 0 &&
      mount_reach_make(u->dir, config, err) < 0)
    return tg_error_wrap(err, "bundle %s: config.json", bundle);

  /* The effective config: under a bare passthrough the very bytes the
   * user wrote (never re-serialised: hooks and conformance tests compare
   * them), otherwise the hardened tree. */
  const char *user_bytes = ours ? orig_buf : u->config_before;
  size_t user_len = ours ? orig_len : u->config_before_len;
  cleanup_free char *dumped = NULL;
  const char *eff = user_bytes;
  size_t eff_len = user_len;
  if (out->bridged) {
    dumped = json_dump_checked(config, true, &eff_len, err);
    if (dumped == NULL) /* a host path or flag that is not UTF-8 */
      return tg_error_wrap(err, "bundle %s: the effective config.json", bundle);
    eff = dumped;
  }
  /* Into the bundle, the user's kept beside it; a bundle whose
   * config.json already holds exactly these bytes is left alone. */
  bool same = eff_len == u->config_before_len &&
              memcmp(eff, u->config_before, eff_len) == 0;
  if (!same) {
    if (!ours) {
      if (keep_original(u->bundle_fd, bundle, &st, u->config_before,
                        u->config_before_len, u->config_mode, err) < 0)
        return -1;
      u->wrote_orig = true;
      u->wrote_mark = faccessat(u->bundle_fd, EFFECTIVE_MARK, F_OK, AT_SYMLINK_NOFOLLOW) != 0;
    }
    if (effective_mark_write(u->bundle_fd, bundle, eff, eff_len, u->config_before,
                             u->config_before_len, ours, err) < 0)
      return -1;
    u->wrote_config = true;
    /* Not synced: the effective config is derived, rewritten by every
     * create, and the original is safe under config.json.orig whatever a
     * crash leaves here (create names it when config.json does not parse).
     * The sync cost 0.3-50 ms on the test machine's disk, in front of every
     * container start. */
    if (write_file_atomic(u->bundle_fd, "config.json", eff, eff_len,
                          u->config_mode, false, err) < 0)
      return tg_error_wrap(err, "bundle %s", bundle);
  }
  {
    /* The state directory's copy is the same bytes: not serialised again. */
    cleanup_close int sfd = open(u->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (sfd < 0 || write_file_atomic(sfd, "config.json", eff, eff_len, 0600, false, err) < 0) {
      if (sfd < 0)
        tg_error_set(err, errno, "open %s", u->dir);
      return -1;
    }
  }

  char now[40];
  rfc3339_now(now, sizeof now);
  cleanup_free char *owner = owner_name();
  cleanup_free char *rootfs = rootfs_path(bundle, config);
  /* The backend id is a SHA-256: computed once the warm-up has paid
   * OpenSSL's initialisation on the other core (see warm_up). */
  warm_up_wait(warm);
  {
    char *bid = backend_container_id(&kind_only, cli->root, id);
    json_object_set(state, "backend_id", json_new_string(bid));
    free(bid);
  }
  json_object_set(state, "id", json_new_string(id));
  /* With prepare_only the caller's `runsc run` creates it next (and
   * deletes it itself when the init exits): it is never mid-create. */
  json_object_set(state, "status",
                  json_new_string(req->prepare_only ? "created" : "creating"));
  json_object_set(state, "bundle", json_new_string(bundle));
  json_object_set(state, "rootfs", json_new_string(rootfs));
  json_object_set(state, "profile", json_new_string(profile));
  json_object_set(state, "passthrough", json_new_bool(passthrough));
  json_object_set(state, "bridge", json_new_bool(out->bridged));
  json_object_set(state, "policy", policy ? json_new_string(policy) : json_new_null());
  json_object_set(state, "created", json_new_string(now));
  json_object_set(state, "owner", json_new_string(owner));
  json_object_set(state, "init_pid", json_new_integer(0));
  json_object_set(state, "sidecar_pid", json_new_integer(0));
  if (state_write_json(u->dir, "state.json", state, err) < 0)
    return -1;

  /* The backend's create.  stdio is inherited: it is the container's. */
  struct container *c = &out->container;
  c->id = xstrdup(id);
  c->backend_id = xstrdup(state_backend_id(state, id));
  c->dir = xstrdup(u->dir);
  c->state = json_copy(state);
  if (backend_from_state(state, &c->backend, err) < 0)
    return -1;
  if (gate_opened(u, out, err) < 0)
    return -1;
  if (req->prepare_only)
    return 0;
  cleanup_free char *backend_pid = xasprintf("%s/backend.pid", u->dir);
  struct create_flags cf = {.bundle = bundle,
                            .pid_file = backend_pid,
                            .console_socket = req->console_socket,
                            .no_pivot = req->no_pivot,
                            .no_new_keyring = req->no_new_keyring,
                            .preserve_fds = req->preserve_fds};
  struct argv args = {0};
  backend_create_args(&c->backend, &cf, &args);
  /* restore: the same hardened bundle, state directory and bridge as
   * create; only the backend's verb differs (runc's and runsc's restore
   * both create the container from the bundle and start it from the
   * image).  Detached: tollgate returns once the process runs. */
  const char *verb = req->restore ? "restore" : "create";
  if (req->restore) {
    argv_add(&args, "--detach");
    for (size_t i = 0; req->restore->v && req->restore->v[i]; i++)
      argv_add(&args, req->restore->v[i]);
  }
  struct proc_opts inherit = {0};
  struct proc_result res;
  warm_up_wait(warm); /* before the first fork */
  if (req->restore_check && req->restore_check(req->restore_arg, config, state, 0, err) < 0) {
    argv_free(&args);
    return -1;
  }
  u->backend_called = true;
  int rc = container_call(cli, c, verb, args.v, NULL, &inherit, &res, err);
  argv_free(&args);
  if (rc < 0)
    return -1;
  if (rc != 0) {
    container_backend_error(c, verb, &res, err);
    proc_result_free(&res);
    return -1;
  }
  proc_result_free(&res);
  long pid = 0;
  if (state_read_pid_file(backend_pid, &pid, err) < 0)
    return tg_error_wrap(err, "%s %s", c->backend.name, verb);
  out->init_pid = (pid_t)pid;
  /* runsc reports the sandbox's pid for a container inside it: the
   * waiter stands for this one (shim/lifecycle/waiter.h). */
  if (joined) {
    pid_t w = 0;
    if (waiter_spawn(cli, c, &w, err) < 0)
      return -1;
    waiter_record(state, w);
    out->init_pid = w;
    pid = w;
  }

  /* runc: the new network namespace must hold nothing but lo before the
   * process starts (runsc runs with --network=none and has no netns). */
  if (c->backend.kind == BACKEND_RUNC && !passthrough) {
    /* A pod's namespace is shared: checked, never changed.  The
     * container's own fresh namespace may have gained a client's veth
     * (Docker's default network, set up by its prestart hook): removed,
     * so the container runs loopback-only as the profile says, and said
     * once in the runtime log. */
    if (pod_pid > 0) {
      if (oci_check_netns_loopback_only(out->init_pid, err) < 0)
        return tg_error_wrap(err, "the pod's network namespace");
    } else {
      cleanup_free char *removed = NULL;
      if (oci_netns_strip_to_loopback(out->init_pid, &removed, err) < 0)
        return -1;
      if (removed != NULL && cli->log_path != NULL) {
        cleanup_free char *msg = xasprintf(
            "container %s: the %s profile gives no network: removed %s that the client set up in the container's network namespace (the container has lo only; run it with --network none to say so)",
            id, profile, removed);
        log_line(cli->log_path, cli->log_json, "warning", msg);
      }
    }
  }

  if (req->restore_check && req->restore_check(req->restore_arg, config, state, out->init_pid, err) < 0)
    return -1;

  pid_t sidecar = 0;
  if (!req->in_process_bridge && out->bridged &&
      bridge_spawn_sidecar(&out->setup, out->init_pid, &sidecar, err) < 0)
    return -1;

  json_object_set(state, "status",
                  json_new_string(req->restore ? "running" : "created"));
  json_object_set(state, "init_pid", json_new_integer(out->init_pid));
  json_object_set(state, "sidecar_pid", json_new_integer(sidecar));
  if (state_write_json(u->dir, "state.json", state, err) < 0)
    return -1;
  json_free(c->state);
  c->state = json_copy(state);

  /* Last, so a failed create never leaves a pid file for the caller. */
  if (req->pid_file && state_write_pid_file(req->pid_file, pid, err) < 0)
    return -1;
  return 0;
}

int container_create(struct cli *cli, const struct create_request *req,
                     struct created *out, tg_error **err) {
  memset(out, 0, sizeof *out);
  struct undo u = {.bundle_fd = -1, .lock_fd = -1};
  struct warm_up warm;
  warm_up_start(&warm);
  int r = do_create(cli, req, out, &u, &warm, err);
  if (gate_opened(&u, out, r < 0 ? NULL : err) < 0)
    r = -1;
  warm_up_wait(&warm);
  if (r < 0) {
    if (out->gate != NULL) { /* before its control socket's directory goes */
      gate_close(out->gate);
      out->gate = NULL;
    }
    undo_all(cli, &u, req->id);
    created_free(out);
  }
  if (u.lock_fd >= 0)
    close(u.lock_fd);
  if (u.bundle_fd >= 0)
    close(u.bundle_fd);
  free(u.config_before);
  free(u.dir);
  return r;
}

void created_free(struct created *c) {
  if (c->gate != NULL)
    gate_close(c->gate);
  free(c->dir);
  free(c->policy_path);
  container_free(&c->container);
  memset(c, 0, sizeof *c);
}
