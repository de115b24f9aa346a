#include "shim/container.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim/log.h"
#include "shim/state.h"
#include "shim/util.h"

#define BACKEND_LOG "backend.log"

int container_load(const struct cli *cli, const char *id, struct container *c,
                   tg_error **err) {
  memset(c, 0, sizeof *c);
  if (state_load(cli->root, id, &c->state, &c->dir, err) < 0)
    return -1;
  c->id = xstrdup(id);
  if (backend_from_state(c->state, &c->backend, err) < 0) {
    container_free(c);
    return tg_error_wrap(err, "container %s", id);
  }
  return 0;
}

void container_free(struct container *c) {
  free(c->id);
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

/* What the backend appended to its log since offset. */
static char *log_since(const char *path, off_t offset) {
  cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 || lseek(fd, offset, SEEK_SET) < 0)
    return NULL;
  char *out = NULL;
  if (read_all_bounded(fd, 1024 * 1024, &out) < 0)
    return NULL;
  return out;
}

/* The log text of the last call, kept so the error can quote it, and
 * where the log ended when the call in flight started. */
static __thread char *last_log;
static __thread off_t log_offset;

int container_spawn(const struct cli *cli, const struct container *c,
                    const char *verb, char *const *args, char *const *after_id,
                    const struct proc_opts *opts, struct proc *p,
                    tg_error **err) {
  cleanup_free char *log_path = xasprintf("%s/%s", c->dir, BACKEND_LOG);
  struct backend_call call = {.log_path = log_path,
                              .debug = cli->debug,
                              .systemd_cgroup = cli->systemd_cgroup};
  struct argv argv = {0};
  backend_argv(&c->backend, &call, verb, &argv);
  for (size_t i = 0; args && args[i]; i++)
    argv_add(&argv, args[i]);
  argv_add(&argv, c->id);
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
  log_offset = file_size(log_path);
  int r = proc_spawn(argv.v, opts, p, err);
  argv_free(&argv);
  if (r < 0)
    return tg_error_wrap(err, "run %s %s", c->backend.name, verb);
  return 0;
}

int container_finish(const struct container *c, struct proc *p,
                     const struct proc_opts *opts, struct proc_result *res,
                     tg_error **err) {
  if (proc_finish(p, opts, res, err) < 0)
    return -1;
  cleanup_free char *log_path = xasprintf("%s/%s", c->dir, BACKEND_LOG);
  free(last_log);
  last_log = log_since(log_path, log_offset);
  return res->status;
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

int container_backend_error(const struct container *c, const char *verb,
                            const struct proc_result *res, tg_error **err) {
  cleanup_free char *msg = backend_message(last_log, res->err_text);
  if (msg == NULL)
    return tg_error_set(err, 0, "%s %s %s failed with exit status %d",
                        c->backend.name, verb, c->id, res->status);
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

/* Whether the backend may still hold state for c.  Only runsc is ever
 * asked (after its own `run`, which destroys the container when it ends):
 * runsc keeps one state and one lock file per container in its root, each
 * named after the container's id.  Conservative: any entry whose name
 * contains the id, or a root that cannot be read, counts as "may know". */
static bool backend_may_know(const struct container *c) {
  if (c->backend.kind != BACKEND_RUNSC || c->backend.root == NULL)
    return true;
  DIR *d = opendir(c->backend.root);
  if (d == NULL)
    return errno != ENOENT;
  bool known = false;
  struct dirent *de;
  while (!known && (de = readdir(d)) != NULL)
    known = strstr(de->d_name, c->id) != NULL;
  closedir(d);
  return known;
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
  if (container_load(cli, id, &c, &load_err) < 0) {
    /* A state directory without a usable state.json is what an
     * interrupted create leaves; --force clears it. */
    struct stat st;
    if (force && stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
      tg_error_free(&load_err);
      if (bridge_teardown(dir, err) < 0)
        return -1;
      return remove_tree(dir, err);
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
  char *args[] = {force ? "--force" : NULL, NULL};
  struct proc_opts quiet = {.capture_stdout = true, .capture_stderr = true};
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
     * half-way): tollgate's own state still has to go. */
    bool gone = strstr(be->msg, "does not exist") != NULL;
    if (!gone) {
      *err = be;
      proc_result_free(&res);
      container_free(&c);
      return -1;
    }
    tg_error_free(&be);
  }
  proc_result_free(&res);
  int r = bridge_teardown(c.dir, err);
  if (r == 0)
    r = remove_tree(c.dir, err);
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
  json_object_set(tg, "profile", json_new_string(profile ? profile : ""));
  json_object_set(tg, "policy", json_copy(json_object_get(c->state, "policy")));
  json_object_set(tg, "sidecar_pid",
                  json_copy(json_object_get(c->state, "sidecar_pid")));
  json_object_set(out, "tollgate", tg);
  json_free(live);
  return out;
}

int container_simple_verb(struct cli *cli, const char *verb, int argc,
                          char **argv, tg_error **err) {
  if (argc != 2)
    return tg_error_set(err, 0, "%s: usage: tollgate %s ID", verb, verb);
  struct container c;
  if (container_load(cli, argv[1], &c, err) < 0)
    return -1;
  struct proc_opts quiet = {.capture_stdout = true, .capture_stderr = true};
  struct proc_result res = {0};
  int r = container_call_ok(cli, &c, verb, NULL, &quiet, &res, err);
  proc_result_free(&res);
  container_free(&c);
  return r;
}

char *container_last_error(void) { return backend_message(last_log, NULL); }
