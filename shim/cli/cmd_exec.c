/* tollgate exec: another process in a running container.
 *
 * Both forms end as a process.json that oci_harden_process() has checked
 * against the container's effective config, handed to the backend with
 * --process.  The runc-style `exec ID CMD...` starts from the effective
 * config's own process, so the new process keeps the container's user,
 * capabilities and environment unless the flags say otherwise. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bridge/area.h"
#include "oci/harden.h"
#include "oci/rlimits_defer.h"
#include "shim/lifecycle/backend.h"
#include "shim/cli/cli_parse.h"
#include "shim/cli/commands.h"
#include "shim/lifecycle/container.h"
#include "shim/lifecycle/state.h"
#include "base/util.h"

#define PROCESS_MAX_BYTES (1024 * 1024)

static int parse_user(const char *s, json_t *proc, tg_error **err) {
  char *end = NULL;
  errno = 0;
  unsigned long uid = strtoul(s, &end, 10);
  unsigned long gid = 0;
  bool has_gid = false;
  if (errno == 0 && end != s && *end == ':') {
    const char *g = end + 1;
    gid = strtoul(g, &end, 10);
    has_gid = end != g;
  }
  if (errno != 0 || end == s || *end != '\0' || uid > 0xfffffffful ||
      gid > 0xfffffffful)
    return tg_error_set(err, 0,
                        "exec: --user %s: give UID or UID:GID as numbers", s);
  json_t *user = json_object_ensure_object(proc, "user");
  json_object_set(user, "uid", json_new_integer((long long)uid));
  if (has_gid)
    json_object_set(user, "gid", json_new_integer((long long)gid));
  return 0;
}

static void set_env(json_t *proc, const char *kv) {
  json_t *env = json_object_ensure_array(proc, "env");
  const char *eq = strchr(kv, '=');
  size_t klen = eq ? (size_t)(eq - kv) : strlen(kv);
  for (size_t i = 0; i < json_array_len(env); i++) {
    const char *cur = json_string_value(json_array_get(env, i));
    if (cur && strncmp(cur, kv, klen) == 0 && cur[klen] == '=') {
      json_array_remove(env, i);
      break;
    }
  }
  json_array_append(env, json_new_string(kv));
}

/* Every string of the command line that goes into process.json must be
 * UTF-8 (JSON text holds nothing else): said here, naming it, rather than
 * as a failure to write process.json. */
static int check_utf8(const char *what, int n, const char *s, tg_error **err) {
  size_t len = strlen(s), bad = json_utf8_check(s, len);
  if (bad == len)
    return 0;
  cleanup_free char *name = n > 0 ? xasprintf("%s %d", what, n) : xstrdup(what);
  return tg_error_set(err, 0,
                      "exec: %s is not valid UTF-8 (byte %zu, 0x%02X): process.json is JSON, "
                      "which holds only UTF-8; pass it in UTF-8",
                      name, bad, (unsigned)(unsigned char)s[bad]);
}

static int check_request_utf8(const struct exec_request *req, tg_error **err) {
  for (int i = 0; i < req->nargs; i++)
    if (check_utf8("argument", i + 1, req->args[i], err) < 0)
      return -1;
  for (size_t i = 0; i < req->env.len; i++)
    if (check_utf8("--env", (int)i + 1, req->env.items[i], err) < 0)
      return -1;
  for (size_t i = 0; i < req->caps.len; i++)
    if (check_utf8("--cap", (int)i + 1, req->caps.items[i], err) < 0)
      return -1;
  return req->cwd ? check_utf8("--cwd", 0, req->cwd, err) : 0;
}

static json_t *build_process(const struct exec_request *req,
                             const json_t *effective, tg_error **err) {
  if (req->process != NULL) {
    cleanup_free char *buf = NULL;
    size_t len = 0;
    if (read_file(req->process, PROCESS_MAX_BYTES, &buf, &len, err) < 0) {
      tg_error_wrap(err, "exec: --process");
      return NULL;
    }
    struct json_parse_options po = {.max_depth = 32, .track_positions = true};
    tg_error *pe = NULL;
    json_t *p = json_parse(buf, len, &po, &pe);
    if (p == NULL) {
      tg_error_set(err, 0, "exec: --process %s: %s: fix the JSON",
                   req->process, pe->msg);
      tg_error_free(&pe);
      return NULL;
    }
    if (!json_is(p, JSON_OBJECT)) {
      json_free(p);
      tg_error_set(err, 0, "exec: --process %s must hold a JSON object",
                   req->process);
      return NULL;
    }
    return p;
  }
  if (check_request_utf8(req, err) < 0)
    return NULL;
  const json_t *base = json_object_get(effective, "process");
  json_t *p = json_is(base, JSON_OBJECT) ? json_copy(base) : json_new_object();
  json_t *args = json_new_array();
  for (int i = 0; i < req->nargs; i++)
    json_array_append(args, json_new_string(req->args[i]));
  json_object_set(p, "args", args);
  json_object_set(p, "terminal", json_new_bool(req->tty));
  json_object_del(p, "consoleSize");
  if (req->cwd)
    json_object_set(p, "cwd", json_new_string(req->cwd));
  for (size_t i = 0; i < req->env.len; i++)
    set_env(p, req->env.items[i]);
  if (req->user && parse_user(req->user, p, err) < 0) {
    json_free(p);
    return NULL;
  }
  if (req->caps.len > 0) {
    /* Asked-for capabilities go in; oci_harden_process() then keeps only
     * what the container itself holds. */
    json_t *caps = json_object_ensure_object(p, "capabilities");
    const char *sets[] = {"bounding", "effective", "permitted"};
    for (size_t s = 0; s < 3; s++) {
      json_t *arr = json_object_ensure_array(caps, sets[s]);
      for (size_t i = 0; i < req->caps.len; i++)
        json_array_append(arr, json_new_string(req->caps.items[i]));
    }
  }
  return p;
}

int cmd_exec(struct cli *cli, int argc, char **argv, tg_error **err) {
  struct exec_request req;
  if (cli_parse_exec(argc, argv, &req, err) < 0)
    return -1;
  struct container c;
  cleanup_close int lock = -1;
  if (container_load_shared(cli, req.id, &c, &lock, err) < 0) {
    exec_request_free(&req);
    return -1;
  }
  int status = -1;
  cleanup_free char *proc_name = NULL;
  cleanup_free char *proc_path = NULL;
  cleanup_free char *pid_path = NULL;
  cleanup_free char *backend_err = NULL;
  bool passthrough = json_is_true(json_object_get(c.state, "passthrough"));
  bool runc = c.backend.kind == BACKEND_RUNC;
  json_t *effective = container_effective_config(&c, err);
  /* Under runc the container's address-space rlimits are in its args
   * (oci/rlimits_defer.h): back into its rlimits, so that the new process
   * is hardened against the limits the container really has. */
  if (effective != NULL && runc && !passthrough)
    oci_rlimits_undefer(json_object_get(effective, "process"), BRIDGE_CONTAINER_CLIENT);
  json_t *proc = effective ? build_process(&req, effective, err) : NULL;
  if (proc == NULL)
    goto out;
  /* A process from the caller (containerd's exec, `crictl exec`,
   * `kubectl exec`) carries the image's environment, not the one create
   * gave the container: without this `from tollgate import ...` fails in
   * it.  Only names, paths inside the container; nothing is loosened. */
  if (json_is_true(json_object_get(c.state, "bridge")))
    bridge_process_env(proc);
  if (oci_harden_process(proc, effective, passthrough, err) < 0) {
    tg_error_wrap(err, "exec");
    goto out;
  }
  /* and runc's exec init, like its create init, is left none of them. */
  if (runc && !passthrough && oci_rlimits_defer(proc, BRIDGE_CONTAINER_CLIENT, err) < 0) {
    tg_error_wrap(err, "exec");
    goto out;
  }
  /* The hardened process goes to the backend from the state directory
   * (0700), never from a path the caller could swap under us. */
  unsigned long long tag = monotonic_ns();
  proc_name = xasprintf("exec-%d-%llu.json", (int)getpid(), tag);
  if (state_write_json(c.dir, proc_name, proc, err) < 0)
    goto out;
  proc_path = xasprintf("%s/%s", c.dir, proc_name);
  if (req.detach && req.pid_file)
    pid_path = xasprintf("%s/exec-%d-%llu.pid", c.dir, (int)getpid(), tag);
  struct exec_flags ef = {.process = proc_path,
                          .pid_file = pid_path ? pid_path : req.pid_file,
                          .console_socket = req.console_socket,
                          .detach = req.detach,
                          .preserve_fds = req.preserve_fds};
  struct argv args = {0};
  backend_exec_args(&c.backend, &ef, &args);
  /* stdio is the process's own; signals to tollgate go on to it. */
  struct proc_opts o = {.forward_signals = !req.detach};
  struct proc_result res = {0};
  /* A foreground exec lasts as long as its process: holding the lock
   * through it would make a `delete --force` wait for the very process
   * it is to kill.  A delete that now removes the state directory under
   * the backend shows as "does not exist" (container_backend_error). */
  if (!req.detach) {
    close(lock);
    lock = -1;
  }
  int st = container_call(cli, &c, "exec", args.v, NULL, &o, &res, err);
  argv_free(&args);
  unlink(proc_path);
  if (st < 0)
    goto out;
  backend_err = container_last_error();
  if (req.detach || backend_err != NULL) {
    if (st != 0) {
      container_backend_error(&c, "exec", &res, err);
      proc_result_free(&res);
      goto out;
    }
  }
  proc_result_free(&res);
  status = st;
  if (pid_path) {
    long pid = 0;
    if (state_read_pid_file(pid_path, &pid, err) < 0 ||
        state_write_pid_file(req.pid_file, pid, err) < 0)
      status = -1;
  }
out:
  if (pid_path)
    unlink(pid_path);
  json_free(proc);
  json_free(effective);
  container_free(&c);
  exec_request_free(&req);
  return status;
}
