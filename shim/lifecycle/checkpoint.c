/* checkpoint and restore (checkpoint.h). */
#include "shim/lifecycle/checkpoint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bridge/sidecar.h"
#include "base/digest.h"
#include "base/util.h"
#include "shim/lifecycle/checkpoint_seal.h"
#include "shim/lifecycle/proc_creds.h"
#include "shim/lifecycle/runsc_version.h"

#define SIDECAR_END_WAIT_MS 30000 /* its gate's close: callers answered, log synced */

/* The backend's flags for f, into out.  verb names the caller in errors. */
static int criu_args(const struct backend *b, const char *verb,
                     const struct criu_flags *f, struct argv *out,
                     tg_error **err) {
  if (f->image_path == NULL || f->image_path[0] == '\0')
    return tg_error_set(err, 0, "%s: --image-path DIR is required (the "
                        "directory of the checkpoint image)", verb);
  argv_addf(out, "--image-path=%s", f->image_path);
  if (f->work_path)
    argv_addf(out, "--work-path=%s", f->work_path);
  if (f->leave_running)
    argv_add(out, "--leave-running");
  if (b->kind != BACKEND_RUNC) {
    const char *criu_only = f->parent_path   ? "--parent-path"
                            : f->pre_dump    ? "--pre-dump"
                            : f->lazy_pages  ? "--lazy-pages"
                            : f->page_server ? "--page-server"
                            : f->status_fd   ? "--status-fd"
                            : f->auto_dedup  ? "--auto-dedup"
                                             : NULL;
    if (criu_only)
      return tg_error_set(err, 0, "%s: %s is a criu option: runsc saves the "
                          "whole sandbox in one image; leave it out, or "
                          "create the container with --runtime runc",
                          verb, criu_only);
    return 0;
  }
  if (f->parent_path)
    argv_addf(out, "--parent-path=%s", f->parent_path);
  if (f->manage_cgroups_mode)
    argv_addf(out, "--manage-cgroups-mode=%s", f->manage_cgroups_mode);
  if (f->page_server)
    argv_addf(out, "--page-server=%s", f->page_server);
  if (f->status_fd)
    argv_addf(out, "--status-fd=%s", f->status_fd);
  for (size_t i = 0; i < f->n_empty_ns; i++)
    argv_addf(out, "--empty-ns=%s", f->empty_ns[i]);
  static const struct {
    size_t offset;
    const char *flag;
  } bools[] = {
      {offsetof(struct criu_flags, tcp_established), "--tcp-established"},
      {offsetof(struct criu_flags, ext_unix_sk), "--ext-unix-sk"},
      {offsetof(struct criu_flags, shell_job), "--shell-job"},
      {offsetof(struct criu_flags, file_locks), "--file-locks"},
      {offsetof(struct criu_flags, lazy_pages), "--lazy-pages"},
      {offsetof(struct criu_flags, pre_dump), "--pre-dump"},
      {offsetof(struct criu_flags, auto_dedup), "--auto-dedup"},
  };
  for (size_t i = 0; i < sizeof bools / sizeof *bools; i++)
    if (*(const bool *)((const char *)f + bools[i].offset))
      argv_add(out, bools[i].flag);
  return 0;
}

/* Seal the image the backend just wrote with the container's effective
 * config (the very bytes its backend was given) and the credentials that
 * config gives its process. */
static int seal_image(const struct cli *cli, const struct container *c, const char *image, tg_error **err) {
  cleanup_free char *path = xasprintf("%s/config.json", c->dir);
  cleanup_free char *bytes = NULL;
  size_t len = 0;
  if (read_file(path, 16u * 1024 * 1024, &bytes, &len, err) < 0)
    return tg_error_wrap(err, "checkpoint: the container's effective config");
  struct json_parse_options po = {.max_depth = 64};
  cleanup_json json_t *config = json_parse(bytes, len, &po, err);
  if (config == NULL)
    return tg_error_wrap(err, "checkpoint: the container's effective config %s", path);
  /* A failed digest ends the seal: it never records a digest of zeros. */
  char digest[DIGEST_TEXT_SIZE];
  if (digest_buffer_text(bytes, len, digest, err) < 0)
    return tg_error_wrap(err, "checkpoint: the digest of %s", path);
  const char *profile = json_string_value(json_object_get(c->state, "profile"));
  cleanup_json json_t *creds = seal_credentials(config, profile);
  return seal_write(&cli->config, image, c->id, c->backend.name, digest, creds, err);
}

/* The container stopped with its checkpoint: wait for its sidecar to end
 * (both locks released) and say whether its audit log closed whole.  A
 * log whose closing records were lost to a full disk ends unverifiable,
 * and a checkpoint that said nothing would hide it. */
static int wait_log_closed(const struct cli *cli, const struct container *c, const char *image,
                           tg_error **err) {
  for (int waited = 0;; waited += 10) {
    cleanup_json json_t *st = bridge_sidecar_status(c->dir);
    if (st == NULL)
      return 0; /* no sidecar: passthrough without a policy */
    long long sup = 0, worker = 0;
    json_integer_value(json_object_get(st, "supervisor_pid"), &sup);
    json_integer_value(json_object_get(st, "pid"), &worker);
    if (sup == 0 && worker == 0) {
      const json_t *closed = json_object_get(st, "log_closed");
      if (closed != NULL && !json_is_true(closed))
        return tg_error_set(err, EIO,
                            "checkpoint: the image %s is written, but container %s's audit log in "
                            "%s lost records as it closed (its closing records among them): the "
                            "audit directory is full or failing; free space there, then check the "
                            "log with `tollgate audit verify`", image, c->id,
                            cli->config.audit_dir ? cli->config.audit_dir : "the audit directory");
      return 0;
    }
    if (waited >= SIDECAR_END_WAIT_MS)
      return tg_error_set(err, ETIMEDOUT,
                          "checkpoint: the image is written, but container %s's sidecar has not "
                          "closed its audit log within %d s; check it with `tollgate state %s`",
                          c->id, SIDECAR_END_WAIT_MS / 1000, c->id);
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

/* runsc 20240729 and later: the image uncompressed (flate costs the
 * checkpoint and the restore more CPU than the larger file costs the
 * disk: docs/performance.md, "Pause and resume") and without the
 * committed pages that hold only zeros.  Neither changes what is
 * restored.  An older or unknown release gets neither (20221219 has no
 * such flags). */
static void runsc_image_flags(const struct cli *cli, const struct backend *b, struct argv *out) {
  if (b->kind != BACKEND_RUNSC || b->path == NULL)
    return;
  struct runsc_version v;
  tg_error *e = NULL;
  cleanup_free char *cache = xasprintf("%s/backend", cli->root);
  if (runsc_version_of(b->path, cache, &v, &e) < 0) {
    tg_error_free(&e);
    return;
  }
  if (v.date >= 20240729) {
    argv_add(out, "--compression=none");
    argv_add(out, "--exclude-committed-zero-pages");
  }
  runsc_version_free(&v);
}

int container_checkpoint(const struct cli *cli, const char *id, const struct criu_flags *f,
                         tg_error **err) {
  struct container c;
  cleanup_close int lock = -1;
  if (container_load_shared(cli, id, &c, &lock, err) < 0)
    return -1;
  struct argv args = {0};
  int r = criu_args(&c.backend, "checkpoint", f, &args, err);
  if (r >= 0)
    runsc_image_flags(cli, &c.backend, &args);
  if (r >= 0) {
    struct proc_opts quiet = {.capture_stdout = true, .capture_stderr = true};
    struct proc_result res = {0};
    r = container_call_ok(cli, &c, "checkpoint", args.v, &quiet, &res, err);
    proc_result_free(&res);
  }
  if (r >= 0)
    r = seal_image(cli, &c, f->image_path, err);
  if (r >= 0 && !f->leave_running)
    r = wait_log_closed(cli, &c, f->image_path, err);
  argv_free(&args);
  container_free(&c);
  return r < 0 ? -1 : 0;
}

/* What restore knows about the image before the backend sees it. */
struct restore_gate {
  const char *image;
  enum seal_status status;
  json_t *body;    /* SEAL_VALID: the sealed body */
  char *reason;    /* otherwise: why it is not valid */
};

static const char *const unsealed_fix =
    "restore only an image that `tollgate checkpoint` took on this host (it seals the image with the "
    "container's credentials), or, under runc, set allow_unsealed_restore in the host config to accept "
    "an image whose restored processes are then checked to run with the hardened spec's credentials";

/* Before anything is created: an image without a valid seal goes no
 * further unless the host opted in, and then only under runc, whose
 * restored processes the host can read (/proc).  Under runsc the
 * restored processes live in gVisor's sentry: their uid and capabilities
 * are the sentry's own state, which no host interface shows, so an
 * unsealed image is refused there even when opted in. */
static int restore_admit(const struct cli *cli, const struct backend *b, struct restore_gate *g,
                         tg_error **err) {
  if (seal_verify(&cli->config, g->image, &g->status, &g->body, &g->reason, err) < 0)
    return -1;
  if (g->status == SEAL_VALID)
    return 0;
  const char *what = g->status == SEAL_MISSING ? "is not sealed" : "has a seal that does not verify";
  if (!cli->config.allow_unsealed_restore)
    return tg_error_set(err, 0, "restore: the checkpoint image %s %s (%s): the process state in an image "
                        "is restored with the credentials it was saved with, so tollgate refuses it: %s",
                        g->image, what, g->reason, unsealed_fix);
  if (b->kind != BACKEND_RUNC)
    return tg_error_set(err, 0, "restore: the checkpoint image %s %s (%s), and allow_unsealed_restore does "
                        "not apply under %s: the restored processes live inside gVisor's sentry, whose "
                        "credentials no host interface shows, so tollgate cannot check them: checkpoint "
                        "the container with `tollgate checkpoint`, or restore it under runc",
                        g->image, what, g->reason, b->name);
  return 0;
}

static char *dump_text(const json_t *v) { return json_dump(v, false, NULL); }

/* create's restore_check: the sealed credentials against the restoring
 * bundle's hardened spec (before the backend runs), or for an opted-in
 * unsealed image under runc, the restored processes against it (once
 * they run; create's undo removes them when they differ). */
static int restore_check(void *arg, const json_t *config, const json_t *state, pid_t pid, tg_error **err) {
  struct restore_gate *g = arg;
  if (g->status != SEAL_VALID) {
    if (pid <= 0)
      return 0;
    if (proc_creds_check(pid, config, err) < 0)
      return tg_error_wrap(err, "restore: allow_unsealed_restore: the image %s (%s) restored a process that "
                           "does not run with the hardened spec's credentials, so the container is removed",
                           g->image, g->reason);
    return 0;
  }
  if (pid > 0)
    return 0;
  const char *sealed_be = json_string_value(json_object_get(g->body, "backend")) ?: "?";
  const char *be = json_string_value(json_object_get(state, "backend")) ?: "?";
  if (strcmp(sealed_be, be) != 0)
    return tg_error_set(err, 0, "restore: the image %s was checkpointed under %s, this container would be "
                        "restored under %s: restore it with --runtime %s", g->image, sealed_be, be, sealed_be);
  const char *profile = json_string_value(json_object_get(state, "profile"));
  cleanup_json json_t *mine = seal_credentials(config, profile);
  cleanup_free char *want = dump_text(mine);
  cleanup_free char *had = dump_text(json_object_get(g->body, "credentials"));
  if (strcmp(want, had) != 0)
    return tg_error_set(err, 0, "restore: the image %s was checkpointed from container %s whose process ran "
                        "with %s, but the restoring bundle's hardened spec gives %s: the restored process "
                        "would keep the image's credentials, so restore it only with a bundle and host "
                        "profile that give the same user, capabilities and noNewPrivileges, or start the "
                        "container anew", g->image,
                        json_string_value(json_object_get(g->body, "container")) ?: "?", had, want);
  return 0;
}

int container_restore(struct cli *cli, struct create_request *req, const struct criu_flags *f,
                      tg_error **err) {
  /* The backend to restore with is the one create would choose (host
   * config, --runtime), never one named by the image. */
  struct backend chosen;
  if (backend_choose(cli, &chosen, err) < 0)
    return -1;
  struct argv flags = {0};
  struct restore_gate gate = {.image = f->image_path};
  int r = criu_args(&chosen, "restore", f, &flags, err);
  if (r >= 0)
    r = restore_admit(cli, &chosen, &gate, err);
  backend_free(&chosen);
  if (r >= 0) {
    req->restore = &flags;
    req->restore_check = restore_check;
    req->restore_arg = &gate;
    struct created c;
    r = container_create(cli, req, &c, err);
    if (r >= 0)
      created_free(&c);
    req->restore = NULL;
    req->restore_arg = NULL;
  }
  argv_free(&flags);
  json_free(gate.body);
  free(gate.reason);
  return r < 0 ? -1 : 0;
}
