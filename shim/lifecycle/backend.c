#include "shim/lifecycle/backend.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim/lifecycle/runsc_version.h"
#include "base/digest.h"
#include "base/util.h"

void argv_add(struct argv *a, const char *s) {
  a->v = xrealloc(a->v, (a->len + 2) * sizeof *a->v);
  a->v[a->len++] = xstrdup(s);
  a->v[a->len] = NULL;
}

void argv_addf(struct argv *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  if (vasprintf(&s, fmt, ap) < 0)
    abort();
  va_end(ap);
  argv_add(a, s);
  free(s);
}

void argv_free(struct argv *a) {
  for (size_t i = 0; i < a->len; i++)
    free(a->v[i]);
  free(a->v);
  a->v = NULL;
  a->len = 0;
}

void backend_free(struct backend *b) {
  free(b->name);
  free(b->path);
  free(b->root);
  for (size_t i = 0; b->args && b->args[i]; i++)
    free(b->args[i]);
  free(b->args);
  memset(b, 0, sizeof *b);
}

/* Look a bare name up in PATH (plus the sbin directories, where Debian
 * puts runc, which a non-login PATH may lack). */
static char *find_in_path(const char *name) {
  const char *env = getenv("PATH");
  cleanup_free char *path = xasprintf(
      "%s:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
      env ? env : "");
  char *save = NULL;
  for (char *dir = strtok_r(path, ":", &save); dir;
       dir = strtok_r(NULL, ":", &save)) {
    if (dir[0] != '/')
      continue; /* a relative PATH entry would depend on the cwd */
    char *cand = xasprintf("%s/%s", dir, name);
    if (access(cand, X_OK) == 0)
      return cand;
    free(cand);
  }
  return NULL;
}

static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

static int missing_backend(const char *name, const char *where,
                           tg_error **err) {
  if (strcmp(name, "runsc") == 0)
    return tg_error_set(
        err, 0,
        "runsc (gVisor) not found %s: install it with 'make deps' or "
        "'apt-get install runsc', or choose runc explicitly with --runtime "
        "runc or \"runtime\": \"runc\" in the host config",
        where);
  return tg_error_set(err, 0,
                      "runc not found %s: install it with 'make deps' or "
                      "'apt-get install runc', or use the default runsc",
                      where);
}

/* The flags that depend on the runsc release at path, asked of the binary
 * once and cached in <root>/backend/ (only the first create after an
 * upgrade runs it):
 *  - before the host's runtime_args, which may override it: --platform,
 *    the host config's choice, or for "auto" (the default) ptrace (on
 *    20240729 faster than systrap for the bridge round trip, a process
 *    per call and start-up, docs/performance.md; 20221219 has nothing
 *    else that works here; kvm hangs in nested VMs);
 *  - after them, so they cannot be undone: --directfs=false where the
 *    release has directfs (on by default in 20240729).  With directfs the
 *    Sentry, which runs the untrusted program's system calls, opens host
 *    files itself ("Sentry runs with higher privileges", runsc's own
 *    help); without it only the gofer touches the host, as in 20221219.
 *    It also breaks the bridge: creating a file the sidecar consumes at
 *    once (the request marker) fails with ENOENT inside the container
 *    about one call in eight (the Sentry looks the new name up again
 *    after creating it), so a served call looks failed to its client.
 *    tests/integration/test_bridge_hostile.sh runs that race. */
static int runsc_release_flags(const struct cli *cli, const char *path,
                               struct argv *early, struct argv *late,
                               tg_error **err) {
  struct runsc_version v;
  cleanup_free char *cache = xasprintf("%s/backend", cli->root);
  if (runsc_version_of(path, cache, &v, err) < 0)
    return -1;
  const char *platform = runsc_platform_for(&v, cli->config.platform, err);
  if (platform != NULL) {
    argv_addf(early, "--platform=%s", platform);
    if (v.directfs)
      argv_add(late, "--directfs=false");
  }
  runsc_version_free(&v);
  return platform != NULL ? 0 : -1;
}

int backend_choose(const struct cli *cli, struct backend *b, tg_error **err) {
  memset(b, 0, sizeof *b);
  const struct host_config *cfg = &cli->config;
  const char *name = cfg->runtime ? cfg->runtime : "runsc";
  const char *path = cfg->runtime_path;
  const char *o = cli->runtime_override;
  if (o != NULL) {
    path = NULL;
    if (strchr(o, '/') != NULL) {
      const char *base = base_name(o);
      if (strncmp(base, "runsc", 5) == 0)
        name = "runsc";
      else if (strncmp(base, "runc", 4) == 0)
        name = "runc";
      else
        return tg_error_set(err, 0,
                            "--runtime %s: cannot tell whether this is runsc "
                            "or runc from its name: name the binary runsc* or "
                            "runc*, or set \"runtime\" and \"runtime_path\" "
                            "in the host config",
                            o);
      path = o;
    } else if (strcmp(o, "runsc") == 0 || strcmp(o, "runc") == 0) {
      name = o;
      /* The configured path still applies when it is for this backend. */
      if (cfg->runtime_path && strcmp(cfg->runtime, o) == 0)
        path = cfg->runtime_path;
    } else {
      return tg_error_set(err, 0,
                          "--runtime %s: give runsc, runc or a path to one "
                          "of them",
                          o);
    }
  }
  if (path != NULL) {
    if (access(path, X_OK) < 0) {
      cleanup_free char *where = xasprintf("at %s (%s)", path, strerror(errno));
      return missing_backend(name, where, err);
    }
    b->path = realpath(path, NULL);
    if (b->path == NULL)
      b->path = xstrdup(path);
  } else {
    b->path = find_in_path(name);
    if (b->path == NULL)
      return missing_backend(name, "in PATH", err);
  }
  b->kind = strcmp(name, "runsc") == 0 ? BACKEND_RUNSC : BACKEND_RUNC;
  b->name = xstrdup(name);
  b->root = xasprintf("%s/backend/%s", cli->root, name);
  struct argv args = {0}, late = {0};
  if (b->kind == BACKEND_RUNSC &&
      runsc_release_flags(cli, b->path, &args, &late, err) < 0) {
    argv_free(&args);
    argv_free(&late);
    backend_free(b);
    return -1;
  }
  for (size_t i = 0; cfg->runtime_args && cfg->runtime_args[i]; i++)
    argv_add(&args, cfg->runtime_args[i]);
  if (b->kind == BACKEND_RUNSC) {
    /* No network at all, and config.json's seccomp enforced inside the
     * sandbox too.  Last, because runsc's flag parser keeps the last
     * value: no runtime_args entry can turn them off. */
    argv_add(&args, "--network=none");
    argv_add(&args, "--oci-seccomp");
    for (size_t i = 0; i < late.len; i++)
      argv_add(&args, late.v[i]);
  }
  argv_free(&late);
  if (args.v == NULL)
    args.v = xcalloc(1, sizeof *args.v);
  b->args = args.v;
  return 0;
}

void backend_to_state(const struct backend *b, json_t *state) {
  json_object_set(state, "backend", json_new_string(b->name));
  json_object_set(state, "backend_path", json_new_string(b->path));
  json_object_set(state, "backend_root", json_new_string(b->root));
  json_t *args = json_new_array();
  for (size_t i = 0; b->args[i]; i++)
    json_array_append(args, json_new_string(b->args[i]));
  json_object_set(state, "backend_args", args);
}

int backend_from_state(const json_t *state, struct backend *b,
                       tg_error **err) {
  memset(b, 0, sizeof *b);
  const char *name = json_string_value(json_object_get(state, "backend"));
  const char *path = json_string_value(json_object_get(state, "backend_path"));
  const char *root = json_string_value(json_object_get(state, "backend_root"));
  const json_t *args = json_object_get(state, "backend_args");
  if (name == NULL || path == NULL || root == NULL ||
      !json_is(args, JSON_ARRAY) ||
      (strcmp(name, "runsc") != 0 && strcmp(name, "runc") != 0))
    return tg_error_set(err, 0,
                        "state.json does not record a usable backend: remove "
                        "the container with 'tollgate delete --force'");
  b->kind = strcmp(name, "runsc") == 0 ? BACKEND_RUNSC : BACKEND_RUNC;
  b->name = xstrdup(name);
  b->path = xstrdup(path);
  b->root = xstrdup(root);
  size_t n = json_array_len(args);
  b->args = xcalloc(n + 1, sizeof *b->args);
  for (size_t i = 0; i < n; i++) {
    const char *s = json_string_value(json_array_get(args, i));
    b->args[i] = xstrdup(s ? s : "");
  }
  return 0;
}

/* Whether a or b is a prefix of the other. */
static bool prefix_related(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  return strncmp(a, b, la < lb ? la : lb) == 0;
}

/* Whether runsc may know this container by its own id (backend.h). */
static bool own_id_is_safe(const char *root, const char *id) {
  if (prefix_related(id, "tg-"))
    return false;
  DIR *d = opendir(root);
  if (d == NULL)
    return false;
  bool safe = true;
  struct dirent *de;
  while (safe && (de = readdir(d)) != NULL) {
    /* Every container runsc may know has its state directory here; files
     * (a caller's pod1.out beside pod1) and the reserved backend
     * directory are no container.  An entry whose type is unknown counts:
     * a conservative answer costs only the hashed form. */
    if (de->d_name[0] == '.' || strcmp(de->d_name, id) == 0 || strcmp(de->d_name, "backend") == 0 ||
        (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
      continue;
    safe = !prefix_related(de->d_name, id);
  }
  closedir(d);
  return safe;
}

char *backend_container_id(const struct backend *b, const char *root, const char *id) {
  if (b->kind != BACKEND_RUNSC)
    return xstrdup(id);
  if (root != NULL && own_id_is_safe(root, id))
    return xstrdup(id);
  /* A digest, not a cheap hash: two ids whose backend ids collided would
   * name one runsc container, and create's undo of the second would
   * delete the first's.  The algorithm is the one create's warm-up
   * fetched, so this finds OpenSSL initialised.  The first 32 hex digits,
   * lowercase: the SDK (_oom.py) spells the same name. */
  char hex[DIGEST_HEX_SIZE];
  if (digest_buffer_hex(id, strlen(id), hex, NULL) < 0)
    abort(); /* SHA-256 is built into libcrypto: this cannot fail */
  return xasprintf("tg-%.32s", hex);
}

void backend_argv(const struct backend *b, const struct backend_call *call,
                  const char *verb, struct argv *out) {
  argv_add(out, b->path);
  argv_addf(out, "--root=%s", b->root);
  for (size_t i = 0; b->args[i]; i++)
    argv_add(out, b->args[i]);
  if (call != NULL) {
    if (call->debug)
      argv_add(out, "--debug");
    if (call->systemd_cgroup)
      argv_add(out, "--systemd-cgroup");
    if (call->log_path != NULL) {
      argv_addf(out, "--log=%s", call->log_path);
      argv_add(out, "--log-format=json");
    }
  }
  argv_add(out, verb);
}

void backend_create_args(const struct backend *b, const struct create_flags *f,
                         struct argv *out) {
  argv_addf(out, "--bundle=%s", f->bundle);
  if (f->pid_file)
    argv_addf(out, "--pid-file=%s", f->pid_file);
  if (f->console_socket)
    argv_addf(out, "--console-socket=%s", f->console_socket);
  if (b->kind == BACKEND_RUNC) {
    if (f->no_pivot)
      argv_add(out, "--no-pivot");
    if (f->no_new_keyring)
      argv_add(out, "--no-new-keyring");
    if (f->preserve_fds > 0)
      argv_addf(out, "--preserve-fds=%ld", f->preserve_fds);
  }
  /* runsc: --no-pivot and --no-new-keyring have no meaning inside the
   * sandbox (it never pivots the host's root nor shares its keyring) and
   * runsc rejects them; --preserve-fds is not supported by runsc either. */
}

void backend_exec_args(const struct backend *b, const struct exec_flags *f,
                       struct argv *out) {
  argv_addf(out, "--process=%s", f->process);
  if (f->detach)
    argv_add(out, "--detach");
  if (f->pid_file)
    argv_addf(out, "--pid-file=%s", f->pid_file);
  if (f->console_socket)
    argv_addf(out, "--console-socket=%s", f->console_socket);
  if (b->kind == BACKEND_RUNC && f->preserve_fds > 0)
    argv_addf(out, "--preserve-fds=%ld", f->preserve_fds);
}

/* Length of the JSON object starting at s[0] == '{', or 0 if it does not
 * end.  runsc writes its JSON log lines without a newline between them,
 * so objects are found by brace matching (outside strings), not by line. */
static size_t object_length(const char *s) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; s[i]; i++) {
    char ch = s[i];
    if (in_string) {
      if (ch == '\\' && s[i + 1] != '\0')
        i++;
      else if (ch == '"')
        in_string = false;
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '{') {
      depth++;
    } else if (ch == '}' && --depth == 0) {
      return i + 1;
    }
  }
  return 0;
}

/* The msg of the last {"level":"error",...} object in a JSON log. */
static char *last_json_error(const char *text) {
  char *found = NULL;
  const char *p = text;
  while ((p = strchr(p, '{')) != NULL) {
    size_t len = object_length(p);
    if (len == 0)
      break;
    json_t *v = json_parse(p, len, NULL, NULL);
    size_t step = v ? len : 1;
    const char *level = json_string_value(json_object_get(v, "level"));
    const char *msg = json_string_value(json_object_get(v, "msg"));
    if (level && msg &&
        (strcmp(level, "error") == 0 || strcmp(level, "fatal") == 0)) {
      free(found);
      found = xstrdup(msg);
    }
    json_free(v);
    p += step;
  }
  return found;
}

/* logrus text: time="..." level=error msg="quoted \"text\"" */
static char *unwrap_logrus(const char *line) {
  const char *m = strstr(line, "msg=\"");
  if (m == NULL || strstr(line, "level=") == NULL)
    return xstrdup(line);
  m += 5;
  char *out = xmalloc(strlen(m) + 1);
  size_t n = 0;
  for (; *m && *m != '"'; m++) {
    if (*m == '\\' && m[1] != '\0')
      m++;
    out[n++] = *m;
  }
  out[n] = '\0';
  return out;
}

char *backend_message(const char *log_text, const char *stderr_text) {
  if (log_text != NULL) {
    char *m = last_json_error(log_text);
    if (m != NULL)
      return m;
  }
  if (stderr_text == NULL)
    return NULL;
  char *m = last_json_error(stderr_text);
  if (m != NULL)
    return m;
  /* The last non-empty line. */
  const char *end = stderr_text + strlen(stderr_text);
  while (end > stderr_text && (end[-1] == '\n' || end[-1] == ' ' ||
                               end[-1] == '\r' || end[-1] == '\t'))
    end--;
  if (end == stderr_text)
    return NULL;
  const char *start = end;
  while (start > stderr_text && start[-1] != '\n')
    start--;
  cleanup_free char *line = xstrndup(start, (size_t)(end - start));
  return unwrap_logrus(line);
}

/* Whether msg is a backend failing to find the container's own state:
 * every "not found" form either backend prints. */
static bool names_missing_container(const char *msg) {
  /* runc: "container does not exist"; runsc: "loading container "x": file
   * does not exist", "loading container: file does not exist". */
  if (strstr(msg, "does not exist") != NULL && strstr(msg, "container") != NULL)
    return true;
  if (strstr(msg, "no such file or directory") == NULL)
    return false;
  /* runsc racing a delete: "loading container: open <root>/<sandbox>_
   * sandbox:<id>.state: no such file or directory" (or its .lock);
   * runc racing a delete: "open <root>/<id>/state.json: no such file or
   * directory".  A missing file of the backend's own state for this
   * container is the container being gone. */
  return strstr(msg, "loading container") != NULL ||
         strstr(msg, "state.json: no such file") != NULL ||
         strstr(msg, ".state: no such file") != NULL;
}

char *backend_normalize_message(const char *id, const char *msg) {
  if (names_missing_container(msg))
    return xasprintf("container %s does not exist", id);
  if (strstr(msg, "process already finished") != NULL)
    return xstrdup(msg);
  /* runc: "container not running"; runsc: "sandbox is not running",
   * "cannot signal container "x" in state stopped". */
  if (strstr(msg, "container not running") != NULL)
    return xstrdup(msg);
  /* runsc, between the sandbox's exit and its delete: the control
   * server is gone, so the container is not running. */
  /* runsc, a kill racing the container's exit (concurrent kills: the
   * first one's signal ended the init before the sentry delivered the
   * next): the sentry answers ESRCH, "no such process".  runc says
   * "container not running" for the same moment. */
  if (strstr(msg, "not running") != NULL || strstr(msg, "no such process") != NULL ||
      (strstr(msg, "control server") != NULL &&
       strstr(msg, "connection refused") != NULL) ||
      (strstr(msg, "cannot signal") != NULL && strstr(msg, "stopped") != NULL))
    return xasprintf("container not running: %s", msg);
  return xstrdup(msg);
}
