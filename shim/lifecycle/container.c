#include "shim/lifecycle/container.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bridge/sidecar.h"
#include "shim/lifecycle/idrange.h"
#include "base/log.h"
#include "shim/lifecycle/mount_pin.h"
#include "shim/lifecycle/mount_reach.h"
#include "shim/lifecycle/cgroup_leftovers.h"
#include "shim/lifecycle/runsc_leftovers.h"
#include "shim/lifecycle/runsc_stdio.h"
#include "shim/lifecycle/lifetime.h"
#include "shim/lifecycle/state.h"
#include "base/util.h"
#include "oci/podnet.h"
#include "shim/lifecycle/waiter.h"

#define BACKEND_LOG "backend.log"

/* container_load without the pid namespace's check: delete's own. */
static int load_any_namespace(const struct cli *cli, const char *id, struct container *c,
                              tg_error **err) {
  memset(c, 0, sizeof *c);
  if (state_load(cli->root, id, &c->state, &c->dir, err) < 0)
    return -1;
  c->id = xstrdup(id);
  const char *bid = state_backend_id(c->state, id);
  if (bid == NULL) {
    container_free(c);
    return tg_error_set(err, 0,
                        "container %s: state.json records an invalid "
                        "backend_id: remove it with 'tollgate delete "
                        "--force %s'",
                        id, id);
  }
  c->backend_id = xstrdup(bid);
  if (backend_from_state(c->state, &c->backend, err) < 0) {
    container_free(c);
    return tg_error_wrap(err, "container %s", id);
  }
  return 0;
}

int container_load(const struct cli *cli, const char *id, struct container *c,
                   tg_error **err) {
  if (load_any_namespace(cli, id, c, err) < 0)
    return -1;
  unsigned long long ns = lifetime_state_pidns(c->state);
  if (lifetime_pidns_elsewhere(ns)) {
    if (lifetime_pidns_ended(ns))
      tg_error_set(err, 0,
                   "container %s was created in pid namespace %llu, which has ended, and its processes with it: "
                   "remove what is left with 'tollgate delete %s' or 'tollgate gc'",
                   id, ns, id);
    else
      tg_error_set(err, 0,
                   "container %s was created in another pid namespace (%llu; this process is in %llu): its "
                   "processes are numbered there and cannot be signalled, entered or queried from here; "
                   "run tollgate in that namespace",
                   id, ns, lifetime_self_pidns());
    container_free(c);
    return -1;
  }
  return 0;
}

int container_load_shared(const struct cli *cli, const char *id,
                          struct container *c, int *lock, tg_error **err) {
  *lock = -1;
  memset(c, 0, sizeof *c);
  if (state_check_id(id, err) < 0)
    return -1;
  cleanup_free char *dir = xasprintf("%s/%s", cli->root, id);
  int fd = state_lock_shared(dir);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR)
      return tg_error_set(err, 0, "container %s does not exist", id);
    return tg_error_set(err, errno, "container %s: lock %s", id, dir);
  }
  if (container_load(cli, id, c, err) < 0) {
    close(fd);
    return -1;
  }
  *lock = fd;
  return 0;
}

void container_free(struct container *c) {
  free(c->id);
  free(c->backend_id);
  free(c->dir);
  json_free(c->state);
  backend_free(&c->backend);
  memset(c, 0, sizeof *c);
}

json_t *container_effective_config(const struct container *c, tg_error **err) {
  return state_read_json(c->dir, "config.json", err);
}

static off_t file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? st.st_size : 0;
}

/* What the backend appended to its log since offset: its last MiB,
 * where its error is (a --debug run's log can be far longer). */
#define LOG_TAIL_MAX (1024 * 1024)
static char *log_since(const char *path, off_t offset) {
  cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0)
    return NULL;
  if (st.st_size - offset > LOG_TAIL_MAX)
    offset = st.st_size - LOG_TAIL_MAX;
  if (lseek(fd, offset, SEEK_SET) < 0)
    return NULL;
  char *out = NULL;
  /* room for what another call appends meanwhile to a shared log */
  if (read_all_bounded(fd, 2 * LOG_TAIL_MAX, &out) < 0)
    return NULL;
  return out;
}

/* The log text of the last call, kept so the error can quote it. */
static __thread char *last_log;

/* The backend calls in flight in this thread, by pid: where each one
 * logs and where its lines begin.  A call may start while another is in
 * flight (a kill forwarded during `runsc run`, the waiter's kill during
 * its `runsc wait`), so each keeps its own. */
struct call_log {
  pid_t pid;    /* 0: a free slot */
  char *own;    /* the call's private log, or NULL: backend.log */
  off_t offset; /* where its lines start in the log */
};
#define CALLS_IN_FLIGHT 8
static __thread struct call_log in_flight[CALLS_IN_FLIGHT];

/* Whether a call of verb logs to a file of its own.  Every call of the
 * container writes its backend's --log, and tollgate judges a call by
 * the error it logged: a non-zero exit of run or exec is the backend's
 * own failure only when it logged one, and kill or delete take "does
 * not exist" for a container already gone.  In one shared file a
 * poller's `runsc state` racing the exit ("container does not exist")
 * would turn a program's exit status 3 into that error.  Not the calls
 * that leave processes holding the log's fd for the sandbox's life (a
 * `runsc create`'s sandbox and gofer), nor `runsc events`, which the
 * waiter stops and reaps without container_finish: they write
 * backend.log itself. */
static bool logs_alone(const char *verb) {
  return strcmp(verb, "create") != 0 && strcmp(verb, "restore") != 0 && strcmp(verb, "events") != 0;
}

/* Append what a call logged alone to backend.log, which stays the
 * container's whole log (docs/cli.md), and remove the call's file.  A
 * container deleted meanwhile has neither left. */
static void fold_into_backend_log(const char *dir, const char *own) {
  cleanup_close int in = open(own, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  cleanup_free char *path = xasprintf("%s/%s", dir, BACKEND_LOG);
  cleanup_close int out =
      in < 0 ? -1 : open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  char buf[16384];
  ssize_t n;
  while (out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
    if (write_all(out, buf, (size_t)n) < 0)
      break;
  if (unlink(own) < 0) {
    /* gone with the container's directory: nothing to remove */
  }
}

int container_spawn(const struct cli *cli, const struct container *c,
                    const char *verb, char *const *args, char *const *after_id,
                    const struct proc_opts *opts, struct proc *p,
                    tg_error **err) {
  struct call_log *slot = NULL;
  for (size_t i = 0; i < CALLS_IN_FLIGHT && slot == NULL; i++)
    if (in_flight[i].pid == 0)
      slot = &in_flight[i];
  if (slot == NULL)
    return tg_error_set(err, 0, "run %s %s: more than %d backend calls in flight at once",
                        c->backend.name, verb, CALLS_IN_FLIGHT);
  cleanup_free char *own = logs_alone(verb)
      ? xasprintf("%s/backend-%s.%d.%llu.log", c->dir, verb, (int)getpid(), monotonic_ns())
      : NULL;
  cleanup_free char *log_path = own ? xstrdup(own) : xasprintf("%s/%s", c->dir, BACKEND_LOG);
  struct backend_call call = {.log_path = log_path,
                              .debug = cli->debug,
                              .systemd_cgroup = cli->systemd_cgroup};
  struct argv argv = {0};
  backend_argv(&c->backend, &call, verb, &argv);
  for (size_t i = 0; args && args[i]; i++)
    argv_add(&argv, args[i]);
  argv_add(&argv, c->backend_id ? c->backend_id : c->id);
  for (size_t i = 0; after_id && after_id[i]; i++)
    argv_add(&argv, after_id[i]);
  if (cli->debug) {
    /* --debug: say exactly what the backend was asked, in --log. */
    cleanup_free char *line = xstrdup("running:");
    for (size_t i = 0; i < argv.len; i++) {
      char *l = xasprintf("%s %s", line, argv.v[i]);
      free(line);
      line = l;
    }
    log_line(cli->log_path, cli->log_json, "debug", line);
  }
  off_t offset = own ? 0 : file_size(log_path);
  /* The container may write to the caller's stdout and stderr: under
   * runsc, only an appending description keeps what is in them. */
  if (c->backend.kind == BACKEND_RUNSC && (!opts->capture_stdout || !opts->capture_stderr))
    runsc_stdio_append();
  int r = proc_spawn(argv.v, opts, p, err);
  argv_free(&argv);
  if (r < 0) {
    if (own != NULL)
      fold_into_backend_log(c->dir, own);
    return tg_error_wrap(err, "run %s %s", c->backend.name, verb);
  }
  /* A call reaped without container_finish (the waiter's `runsc
   * events`) left its slot: a new process of that pid makes it stale. */
  for (size_t i = 0; i < CALLS_IN_FLIGHT; i++)
    if (in_flight[i].pid == p->pid) {
      free(in_flight[i].own);
      in_flight[i] = (struct call_log){0};
    }
  *slot = (struct call_log){.pid = p->pid, .own = own, .offset = offset};
  own = NULL;
  return 0;
}

int container_finish(const struct container *c, struct proc *p,
                     const struct proc_opts *opts, struct proc_result *res,
                     tg_error **err) {
  struct call_log call = {0};
  for (size_t i = 0; i < CALLS_IN_FLIGHT && p->pid != 0; i++)
    if (in_flight[i].pid == p->pid) {
      call = in_flight[i];
      in_flight[i] = (struct call_log){0};
      break;
    }
  cleanup_free char *own = call.own;
  int r = proc_finish(p, opts, res, err);
  cleanup_free char *log_path = own ? xstrdup(own) : xasprintf("%s/%s", c->dir, BACKEND_LOG);
  free(last_log);
  last_log = log_since(log_path, call.offset);
  if (own != NULL)
    fold_into_backend_log(c->dir, own);
  return r < 0 ? -1 : res->status;
}

int container_call(const struct cli *cli, const struct container *c,
                   const char *verb, char *const *args, char *const *after_id,
                   const struct proc_opts *opts, struct proc_result *res,
                   tg_error **err) {
  struct proc p;
  if (container_spawn(cli, c, verb, args, after_id, opts, &p, err) < 0)
    return -1;
  return container_finish(c, &p, opts, res, err);
}

/* s with every occurrence of from replaced by to.  Owned. */
static char *replace_all(const char *s, const char *from, const char *to) {
  size_t fl = strlen(from), tl = strlen(to), n = 0;
  for (const char *p = s; fl > 0 && (p = strstr(p, from)) != NULL; p += fl)
    n++;
  char *out = xmalloc(strlen(s) + n * tl + 1);
  char *o = out;
  for (const char *p = s, *q; ; p = q + fl) {
    q = fl > 0 ? strstr(p, from) : NULL;
    if (q == NULL) {
      strcpy(o, p);
      break;
    }
    memcpy(o, p, (size_t)(q - p));
    o += q - p;
    memcpy(o, to, tl);
    o += tl;
  }
  return out;
}

/* Whether msg is the backend tripping over a file of this container's
 * state directory that is gone ("open <dir>/backend.log: no such file or
 * directory"): only delete removes those files, so the container was
 * deleted under the call. */
static bool deleted_under_call(const struct container *c, const char *msg) {
  if (c->dir == NULL || strstr(msg, "no such file or directory") == NULL)
    return false;
  cleanup_free char *prefix = xasprintf("%s/", c->dir);
  return strstr(msg, prefix) != NULL;
}

int container_backend_error(const struct container *c, const char *verb,
                            const struct proc_result *res, tg_error **err) {
  cleanup_free char *raw = backend_message(last_log, res->err_text);
  if (raw == NULL)
    return tg_error_set(err, 0, "%s %s %s failed with exit status %d",
                        c->backend.name, verb, c->id, res->status);
  if (deleted_under_call(c, raw))
    return tg_error_set(err, 0, "%s %s: container %s does not exist",
                        c->backend.name, verb, c->id);
  /* The backend names the container by its backend id: users and
   * containerd only ever see tollgate's. */
  cleanup_free char *msg =
      c->backend_id && strcmp(c->backend_id, c->id) != 0
          ? replace_all(raw, c->backend_id, c->id)
          : xstrdup(raw);
  cleanup_free char *norm = backend_normalize_message(c->id, msg);
  return tg_error_set(err, 0, "%s %s: %s", c->backend.name, verb, norm);
}

int container_call_ok(const struct cli *cli, const struct container *c,
                      const char *verb, char *const *args,
                      const struct proc_opts *opts, struct proc_result *res,
                      tg_error **err) {
  int st = container_call(cli, c, verb, args, NULL, opts, res, err);
  if (st < 0)
    return -1;
  if (st != 0)
    return container_backend_error(c, verb, res, err);
  return 0;
}

/* Whether the backend may still hold state for c, asked after run (a
 * `runsc run` or `runc run` destroys the container when it ends):
 * runsc keeps one state and one lock file per container in its root, each
 * named after the container's id.  Conservative: any entry whose name
 * contains the id, or a root that cannot be read, counts as "may know". */
static bool backend_may_know(const struct container *c) {
  if (c->backend.root == NULL)
    return true;
  /* runc keeps a directory per container in its root, named after the
   * id; `runc run` removes it when the init exits. */
  if (c->backend.kind == BACKEND_RUNC) {
    cleanup_free char *dir = xasprintf("%s/%s", c->backend.root, c->backend_id ? c->backend_id : c->id);
    struct stat st;
    return lstat(dir, &st) == 0 || errno != ENOENT;
  }
  if (c->backend.kind != BACKEND_RUNSC)
    return true;
  DIR *d = opendir(c->backend.root);
  if (d == NULL)
    return errno != ENOENT;
  bool known = false;
  struct dirent *de;
  const char *bid = c->backend_id ? c->backend_id : c->id;
  while (!known && (de = readdir(d)) != NULL)
    known = strstr(de->d_name, bid) != NULL;
  closedir(d);
  return known;
}

/* Whether the backend's own `state` still finds c.  Anything but its
 * "does not exist" (a state it prints, or another error) counts as
 * "still knows": delete then reports the backend's failure rather than
 * drop tollgate's record of a container that may be alive. */
static bool backend_still_knows(const struct cli *cli,
                                const struct container *c, bool fresh_pid_ns) {
  struct proc_opts quiet = {.capture_stdout = true, .capture_stderr = true, .fresh_pid_ns = fresh_pid_ns};
  struct proc_result res = {0};
  tg_error *e = NULL;
  int st = container_call(cli, c, "state", NULL, NULL, &quiet, &res, &e);
  bool knows = true;
  if (st > 0) {
    container_backend_error(c, "state", &res, &e);
    knows = strstr(e->msg, "does not exist") == NULL;
  }
  tg_error_free(&e);
  proc_result_free(&res);
  return knows;
}

static int delete_container(struct cli *cli, const char *id, bool force,
                            bool skip_forgotten, tg_error **err) {
  if (state_check_id(id, err) < 0)
    return -1;
  /* A create of this id still in flight finishes (or undoes itself)
   * before delete looks: no delete ever sees half a container. */
  cleanup_free char *dir = xasprintf("%s/%s", cli->root, id);
  cleanup_close int lock = state_lock(dir);
  struct container c;
  tg_error *load_err = NULL;
  if (load_any_namespace(cli, id, &c, &load_err) < 0) {
    /* A state directory without a usable state.json is what an
     * interrupted create leaves; --force clears it. */
    struct stat st;
    if (force && stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
      tg_error_free(&load_err);
      if (mount_reach_release(dir, err) < 0 || bridge_teardown(dir, err) < 0 || mount_pin_release(dir, err) < 0)
        return -1;
      if (state_remove_dir(dir, err) < 0)
        return -1;
      idrange_release_owner(&cli->config, dir);
      return 0;
    }
    /* runc: `delete --force` of an id that does not exist succeeds, and
     * containerd's cleanup after a failed create relies on it. */
    if (force && strstr(load_err->msg, "does not exist") != NULL) {
      tg_error_free(&load_err);
      return 0;
    }
    *err = load_err;
    return -1;
  }
  unsigned long long ns = lifetime_state_pidns(c.state);
  /* A namespace that ended took the container's processes with it; what
   * is left is state, and the backend's delete runs where the numbers its
   * state holds name nothing (as PID 1 of an empty namespace: here they
   * would be other processes'). */
  bool ended = false;
  if (lifetime_pidns_elsewhere(ns) && !(ended = lifetime_pidns_ended(ns))) {
    int r = tg_error_set(err, 0,
                         "container %s was created in another pid namespace (%llu; this process is in %llu): its "
                         "processes are numbered there and cannot be signalled from here; delete it from that "
                         "namespace (once that namespace has ended, tollgate gc or delete in the host's initial "
                         "pid namespace removes it, docs/reliability.md)",
                         id, ns, lifetime_self_pidns());
    container_free(&c);
    return r;
  }
  if (ended)
    force = true;
  /* A container inside its pod's sandbox whose waiter is gone (killed)
   * has lost the process its caller waited on: nobody can wait for or
   * start it any more, so it goes like a forced one and leaves nothing
   * running in the pod's sandbox. */
  if (!force && waiter_recorded(c.state) && !waiter_alive(c.state))
    force = true;
  char *args[] = {force ? "--force" : NULL, NULL};
  struct proc_opts quiet = {.capture_stdout = true, .capture_stderr = true, .fresh_pid_ns = ended};
  struct proc_result res = {0};
  /* After `runsc run` the backend has already destroyed the container;
   * its `delete` would only start a Go process to say so (~25 ms of a
   * /bin/true run's start-up, docs/performance.md). */
  int st = skip_forgotten && !backend_may_know(&c)
               ? 0
               : container_call(cli, &c, "delete", args, NULL, &quiet, &res, err);
  if (st < 0) {
    container_free(&c);
    return -1;
  }
  if (st != 0) {
    tg_error *be = NULL;
    container_backend_error(&c, "delete", &res, &be);
    /* The backend no longer knows it (its state was lost, or create died
     * half-way): tollgate's own state still has to go.  A delete that
     * failed otherwise may still have removed the backend's container
     * (runsc after a killed `runsc run`: "stopping container: context
     * deadline exceeded", its state already gone), so --force asks the
     * backend whether it still knows the id before giving up; and a runsc
     * killed while it wrote its state leaves a torn one that no runsc verb
     * reads again, which --force clears with the processes it names. */
    bool gone = strstr(be->msg, "does not exist") != NULL ||
                (force && runsc_forget_torn_state(&c)) ||
                (force && !backend_still_knows(cli, &c, ended));
    if (!gone) {
      *err = be;
      proc_result_free(&res);
      container_free(&c);
      return -1;
    }
    tg_error_free(&be);
  }
  proc_result_free(&res);
  cgroup_clear_default(&c, cli->systemd_cgroup);
  runsc_clear_leftovers(&c);
  int r = mount_reach_release(c.dir, err);
  if (r == 0)
    r = bridge_teardown(c.dir, err);
  if (r == 0)
    r = mount_pin_release(c.dir, err);
  if (r == 0)
    r = state_remove_dir(c.dir, err);
  if (r == 0)
    idrange_release_owner(&cli->config, c.dir);
  container_free(&c);
  return r;
}

int container_delete(struct cli *cli, const char *id, bool force,
                     tg_error **err) {
  return delete_container(cli, id, force, false, err);
}

int container_delete_after_run(struct cli *cli, const char *id,
                               tg_error **err) {
  return delete_container(cli, id, true, true, err);
}

static void copy_key(json_t *dst, const char *key, const json_t *src,
                     json_t *fallback) {
  const json_t *v = json_object_get(src, key);
  if (v != NULL && !json_is(v, JSON_NULL)) {
    json_object_set(dst, key, json_copy(v));
    json_free(fallback);
  } else {
    json_object_set(dst, key, fallback);
  }
}

json_t *container_query(const struct cli *cli, const struct container *c,
                        tg_error **err) {
  struct proc_opts quiet = {.capture_stdout = true, .capture_stderr = true};
  struct proc_result res;
  int st = container_call(cli, c, "state", NULL, NULL, &quiet, &res, err);
  if (st < 0)
    return NULL;
  json_t *live = NULL;
  const char *recorded =
      json_string_value(json_object_get(c->state, "status"));
  if (st == 0) {
    live = json_parse(res.out, strlen(res.out), NULL, err);
    if (live == NULL) {
      proc_result_free(&res);
      tg_error_wrap(err, "%s state %s printed something that is not JSON",
                    c->backend.name, c->id);
      return NULL;
    }
  } else {
    tg_error *be = NULL;
    container_backend_error(c, "state", &res, &be);
    bool gone = strstr(be->msg, "does not exist") != NULL;
    if (!gone) {
      *err = be;
      proc_result_free(&res);
      return NULL;
    }
    tg_error_free(&be);
    /* Known to tollgate only: mid-create, or the backend lost it. */
    live = json_new_object();
    json_object_set(live, "status",
                    json_new_string(recorded && strcmp(recorded, "creating") == 0
                                        ? "creating" : "stopped"));
    json_object_set(live, "pid", json_new_integer(0));
  }
  proc_result_free(&res);

  json_t *out = json_new_object();
  copy_key(out, "ociVersion", live, json_new_string("1.0.2"));
  json_object_set(out, "id", json_new_string(c->id));
  long long pid = 0;
  if (!json_integer_value(json_object_get(live, "pid"), &pid) || pid < 0)
    pid = 0; /* runsc says -1 for a stopped container; runc says 0 */
  /* runsc says the sandbox's pid for a container inside a pod's sandbox:
   * its pid is the waiter's, as the caller's --pid-file said. */
  if (waiter_recorded(c->state)) {
    const char *status = json_string_value(json_object_get(live, "status"));
    long long w = 0;
    json_integer_value(json_object_get(c->state, "init_pid"), &w);
    pid = status != NULL && strcmp(status, "stopped") != 0 && waiter_alive(c->state) ? w : 0;
  }
  json_object_set(out, "pid", json_new_integer(pid));
  copy_key(out, "status", live, json_new_string("unknown"));
  json_object_set(out, "bundle",
                  json_copy(json_object_get(c->state, "bundle")));
  json_object_set(out, "rootfs",
                  json_copy(json_object_get(c->state, "rootfs")));
  copy_key(out, "created", live,
           json_copy(json_object_get(c->state, "created")));
  json_t *annotations = NULL;
  tg_error *ce = NULL;
  json_t *config = container_effective_config(c, &ce);
  tg_error_free(&ce);
  const json_t *ann = json_object_get(config, "annotations");
  annotations = json_is(ann, JSON_OBJECT) ? json_copy(ann) : json_new_object();
  json_free(config);
  /* The user's annotations only, as runc shows them; the profile is
   * tollgate's record (state.json), shown under "tollgate". */
  const char *profile = json_string_value(json_object_get(c->state, "profile"));
  json_object_set(out, "annotations", annotations);
  json_object_set(out, "owner", json_copy(json_object_get(c->state, "owner")));
  json_t *tg = json_new_object();
  json_object_set(tg, "backend", json_new_string(c->backend.name));
  json_object_set(tg, "backend_root", json_new_string(c->backend.root));
  json_object_set(tg, "backend_id",
                  json_new_string(c->backend_id ? c->backend_id : c->id));
  json_object_set(tg, "profile", json_new_string(profile ? profile : ""));
  json_object_set(tg, "policy", json_copy(json_object_get(c->state, "policy")));
  /* The sidecar as it is now, not as create left it: its supervisor may
   * have restarted it (another pid) or found it dead and stopped the
   * container (bridge/supervisor.h). */
  json_t *sidecar = bridge_sidecar_status(c->dir);
  long long live_pid = 0;
  if (sidecar != NULL && json_integer_value(json_object_get(sidecar, "pid"), &live_pid) &&
      live_pid > 0)
    json_object_set(tg, "sidecar_pid", json_new_integer(live_pid));
  else
    json_object_set(tg, "sidecar_pid", json_copy(json_object_get(c->state, "sidecar_pid")));
  json_object_set(tg, "sidecar", sidecar ? sidecar : json_new_null());
  const json_t *ids = json_object_get(c->state, "id_range");
  json_object_set(tg, "id_range", ids ? json_copy(ids) : json_new_null());
  /* Whose namespaces it joined and by which proof (shim/lifecycle/join.h). */
  const json_t *join = json_object_get(c->state, "join");
  json_object_set(tg, "join", join ? json_copy(join) : json_new_null());
  /* Its owner and deadline (docs/reliability.md), or null: never reaped. */
  struct lifetime lt;
  tg_error *le = NULL;
  json_object_set(tg, "lifetime", lifetime_read(c->dir, &lt, &le) == 1 ? lifetime_json(&lt) : json_new_null());
  tg_error_free(&le);
  json_object_set(out, "tollgate", tg);
  json_free(live);
  return out;
}

int container_simple_verb(struct cli *cli, const char *verb, int argc,
                          char **argv, tg_error **err) {
  if (argc != 2)
    return tg_error_set(err, 0, "%s: usage: tollgate %s ID", verb, verb);
  struct container c;
  cleanup_close int lock = -1;
  if (container_load_shared(cli, argv[1], &c, &lock, err) < 0)
    return -1;
  struct proc_opts quiet = {.capture_stdout = true, .capture_stderr = true};
  struct proc_result res = {0};
  int r = container_call_ok(cli, &c, verb, NULL, &quiet, &res, err);
  proc_result_free(&res);
  container_free(&c);
  return r;
}

/* A container given the pod network (oci/podnet.h) starts only while its
 * namespace still refuses egress as create recorded it. */
static int check_pod_network(const struct container *c, tg_error **err) {
  const char *netns = json_string_value(json_get_path(c->state, "pod_network.netns"));
  const char *refusal = json_string_value(json_get_path(c->state, "pod_network.refusal"));
  if (netns == NULL && refusal == NULL)
    return 0;
  cleanup_close int nsfd = -1;
  if (netns == NULL || refusal == NULL || oci_podnet_open(netns, &nsfd, err) < 0 ||
      oci_podnet_check(nsfd, refusal, err) < 0)
    return tg_error_wrap(err, "start %s: the pod network", c->id);
  return 0;
}

int container_start(const struct cli *cli, const struct container *c, tg_error **err) {
  if (check_pod_network(c, err) < 0)
    return -1;
  if (waiter_recorded(c->state))
    return waiter_start(c->id, c->dir, c->state, err);
  struct proc_opts quiet = {.capture_stdout = true, .capture_stderr = true};
  struct proc_result res = {0};
  int r = container_call_ok(cli, c, "start", NULL, &quiet, &res, err);
  proc_result_free(&res);
  return r;
}

json_t *container_unknown_record(const char *id, const json_t *state,
                                 const char *reason) {
  json_t *out = json_new_object();
  json_object_set(out, "ociVersion", json_new_string("1.0.2"));
  json_object_set(out, "id", json_new_string(id));
  json_object_set(out, "pid", json_new_integer(0));
  json_object_set(out, "status", json_new_string("unknown"));
  static const char *const recorded[] = {"bundle", "rootfs", "created",
                                         "owner"};
  for (size_t i = 0; i < sizeof recorded / sizeof *recorded; i++) {
    const char *v = json_string_value(json_object_get(state, recorded[i]));
    json_object_set(out, recorded[i], json_new_string(v ? v : ""));
  }
  json_t *tg = json_new_object();
  const char *backend = json_string_value(json_object_get(state, "backend"));
  json_object_set(tg, "backend", json_new_string(backend ? backend : ""));
  json_object_set(tg, "status_reason", json_new_string(reason));
  json_object_set(out, "tollgate", tg);
  return out;
}

char *container_last_error(void) { return backend_message(last_log, NULL); }
