/* checkpoint and restore, the library half of `tollgate checkpoint` and
 * `tollgate restore` (shim/cli/cmd_checkpoint.c parses their flags).
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
#ifndef TOLLGATE_CHECKPOINT_H
#define TOLLGATE_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "shim/context.h"
#include "shim/lifecycle/container.h"

/* The criu options runc takes on both verbs.  gVisor saves the whole
 * sandbox (its TCP stack, unix sockets, file locks and terminals are the
 * sentry's own), so under runsc these ask for nothing more and are
 * dropped; the criu-only modes that change what is saved (incremental,
 * lazy, page server) are refused under runsc with the reason. */
struct criu_flags {
  const char *image_path, *work_path, *parent_path, *manage_cgroups_mode;
  const char *page_server, *status_fd;
  const char *const *empty_ns; /* borrowed */
  size_t n_empty_ns;
  bool tcp_established, ext_unix_sk, shell_job, file_locks, lazy_pages,
      pre_dump, auto_dedup, leave_running;
};

/* Checkpoint container id into f->image_path and seal the image.  Unless
 * f->leave_running, the container stops, and checkpoint waits for its
 * sidecar to close the audit log: records lost there (a full audit disk)
 * fail the checkpoint, naming the log, though the image is written.  0 or
 * -1 with *err. */
int container_checkpoint(const struct cli *cli, const char *id, const struct criu_flags *f,
                         tg_error **err);

/* Restore req->id from f->image_path: the backend create would choose,
 * the image's seal checked against the restoring bundle's hardened spec
 * (req's restore fields are set here).  0 or -1 with *err. */
int container_restore(struct cli *cli, struct create_request *req, const struct criu_flags *f,
                      tg_error **err);

#endif
