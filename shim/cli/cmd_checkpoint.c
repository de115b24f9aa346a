/* tollgate checkpoint / restore: runc's CLI shape (what containerd's runc
 * shim v2 and podman pass), delegated to the backend recorded at create:
 * runsc's checkpoint/restore (the sentry saves the whole sandbox), or
 * runc's with criu.
 *
 * What survives, and why (docs/cli.md, "checkpoint and restore"): restore
 * is create with the backend's restore in place of its create.  The
 * bundle's config.json is hardened again exactly as create hardens it, a
 * new state directory and bridge are made, the policy is resolved again
 * from the host's side, and a new sidecar serves the restored process,
 * writing a new audit log segment (<id>@<n>.jsonl when <id>.jsonl
 * exists).  Nothing governance-related is read from the checkpoint image:
 * it is written by the container's own memory and files, so it is
 * hostile data; budgets and call counts start again from the policy, as
 * for a new run, and the previous segment stays verifiable on its own.
 *
 * The process state in the image is hostile too, and the backend's
 * restore brings it back whole, credentials included (runsc's and criu's
 * restore give the process the uid and capabilities it was saved with,
 * not the bundle's).  So checkpoint seals the image it wrote, and restore
 * accepts only a sealed image whose recorded credentials are the ones the
 * restoring bundle's hardened spec gives (shim/lifecycle/checkpoint_seal.h). */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim/cli/args.h"
#include "shim/lifecycle/checkpoint_seal.h"
#include "shim/cli/commands.h"
#include "shim/lifecycle/container.h"
#include "shim/lifecycle/proc_creds.h"
#include "shim/lifecycle/runsc_version.h"
#include "base/util.h"

/* The criu options runc takes on both verbs.  gVisor saves the whole
 * sandbox (its TCP stack, unix sockets, file locks and terminals are the
 * sentry's own), so under runsc these ask for nothing more and are
 * dropped; the criu-only modes that change what is saved (incremental,
 * lazy, page server) are refused under runsc with the reason. */
struct criu_flags {
  const char *image_path, *work_path, *parent_path, *manage_cgroups_mode;
  const char *page_server, *status_fd;
  struct strlist empty_ns;
  bool tcp_established, ext_unix_sk, shell_job, file_locks, lazy_pages,
      pre_dump, auto_dedup, leave_running;
};

#define CRIU_OPTS(f)                                                     \
  {"image-path", 0, OPT_STRING, &(f)->image_path},                       \
      {"work-path", 0, OPT_STRING, &(f)->work_path},                     \
      {"manage-cgroups-mode", 0, OPT_STRING, &(f)->manage_cgroups_mode}, \
      {"empty-ns", 0, OPT_LIST, &(f)->empty_ns},                         \
      {"tcp-established", 0, OPT_BOOL, &(f)->tcp_established},           \
      {"ext-unix-sk", 0, OPT_BOOL, &(f)->ext_unix_sk},                   \
      {"shell-job", 0, OPT_BOOL, &(f)->shell_job},                       \
      {"file-locks", 0, OPT_BOOL, &(f)->file_locks},                     \
      {"lazy-pages", 0, OPT_BOOL, &(f)->lazy_pages},                     \
      {"status-fd", 0, OPT_STRING, &(f)->status_fd}

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
  for (size_t i = 0; i < f->empty_ns.len; i++)
    argv_addf(out, "--empty-ns=%s", f->empty_ns.items[i]);
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

/* "sha256:<hex>" of bytes, owned. */
static char *sha256_text(const char *data, size_t len) {
  unsigned char md[32] = {0};
  size_t n = 0;
  EVP_Q_digest(NULL, "SHA256", NULL, data, len, md, &n);
  char hex[65];
  for (size_t i = 0; i < sizeof md; i++)
    snprintf(hex + 2 * i, 3, "%02x", md[i]);
  return xasprintf("sha256:%s", hex);
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
  cleanup_free char *digest = sha256_text(bytes, len);
  const char *profile = json_string_value(json_object_get(c->state, "profile"));
  cleanup_json json_t *creds = seal_credentials(config, profile);
  return seal_write(&cli->config, image, c->id, c->backend.name, digest, creds, err);
}

int cmd_checkpoint(struct cli *cli, int argc, char **argv, tg_error **err) {
  struct criu_flags f = {0};
  struct opt opts[] = {CRIU_OPTS(&f),
                       {"leave-running", 0, OPT_BOOL, &f.leave_running},
                       {"parent-path", 0, OPT_STRING, &f.parent_path},
                       {"page-server", 0, OPT_STRING, &f.page_server},
                       {"pre-dump", 0, OPT_BOOL, &f.pre_dump},
                       {"auto-dedup", 0, OPT_BOOL, &f.auto_dedup},
                       {0}};
  int i = args_parse("checkpoint", argc, argv, 1, opts, err);
  if (i < 0)
    goto out;
  if (argc - i != 1) {
    i = tg_error_set(err, 0, "checkpoint: %s: usage: tollgate checkpoint "
                     "--image-path DIR [--leave-running] ID",
                     argc - i < 1 ? "no container id given"
                                  : "too many arguments");
    goto out;
  }
  struct container c;
  cleanup_close int lock = -1;
  if (container_load_shared(cli, argv[i], &c, &lock, err) < 0) {
    i = -1;
    goto out;
  }
  struct argv args = {0};
  i = criu_args(&c.backend, "checkpoint", &f, &args, err);
  if (i >= 0)
    runsc_image_flags(cli, &c.backend, &args);
  if (i >= 0) {
    struct proc_opts quiet = {.capture_stdout = true, .capture_stderr = true};
    struct proc_result res = {0};
    i = container_call_ok(cli, &c, "checkpoint", args.v, &quiet, &res, err);
    proc_result_free(&res);
  }
  if (i >= 0)
    i = seal_image(cli, &c, f.image_path, err);
  argv_free(&args);
  container_free(&c);
out:
  strlist_free(&f.empty_ns);
  return i < 0 ? -1 : 0;
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

int cmd_restore(struct cli *cli, int argc, char **argv, tg_error **err) {
  struct criu_flags f = {0};
  struct create_request req = {.preserve_fds = -1};
  bool detach = false;
  struct opt opts[] = {CRIU_OPTS(&f),
                       {"bundle", 'b', OPT_STRING, &req.bundle},
                       {"pid-file", 0, OPT_STRING, &req.pid_file},
                       {"console-socket", 0, OPT_STRING, &req.console_socket},
                       {"no-pivot", 0, OPT_BOOL, &req.no_pivot},
                       {"no-new-keyring", 0, OPT_BOOL, &req.no_new_keyring},
                       {"policy", 0, OPT_STRING, &req.policy_file},
                       {"detach", 'd', OPT_BOOL, &detach},
                       {"no-subreaper", 0, OPT_IGNORE_BOOL, NULL},
                       {0}};
  int i = args_parse("restore", argc, argv, 1, opts, err);
  if (i < 0)
    goto out;
  if (argc - i != 1) {
    i = tg_error_set(err, 0, "restore: %s: usage: tollgate restore "
                     "--image-path DIR [--bundle DIR] [--pid-file FILE] "
                     "--detach ID",
                     argc - i < 1 ? "no container id given"
                                  : "too many arguments");
    goto out;
  }
  /* Without --detach runc would stay the restored process's parent and
   * relay its stdio; tollgate's restore returns once the process runs
   * (containerd and podman always pass --detach). */
  if (!detach) {
    i = tg_error_set(err, 0, "restore: only --detach is supported: add "
                     "--detach, and use `tollgate state` / `kill` on the "
                     "restored container");
    goto out;
  }
  req.id = argv[i];
  /* The backend to restore with is the one create would choose (host
   * config, --runtime), never one named by the image. */
  struct backend chosen;
  if (backend_choose(cli, &chosen, err) < 0) {
    i = -1;
    goto out;
  }
  struct argv flags = {0};
  struct restore_gate gate = {.image = f.image_path};
  i = criu_args(&chosen, "restore", &f, &flags, err);
  if (i >= 0)
    i = restore_admit(cli, &chosen, &gate, err);
  backend_free(&chosen);
  if (i >= 0) {
    req.restore = &flags;
    req.restore_check = restore_check;
    req.restore_arg = &gate;
    struct created c;
    i = container_create(cli, &req, &c, err);
    if (i >= 0)
      created_free(&c);
  }
  argv_free(&flags);
  json_free(gate.body);
  free(gate.reason);
out:
  strlist_free(&f.empty_ns);
  return i < 0 ? -1 : 0;
}
