/* The backend runtime (runsc or runc) and how to call it.
 *
 * tollgate never does a runtime's work itself: each verb becomes one call
 * of the backend binary, with the backend's own --root (it never shares
 * tollgate's layout) and the global flags tollgate insists on.  For runsc
 * these are --network=none --oci-seccomp --platform=P (and --directfs=false
 * where the release has directfs; shim/lifecycle/runsc_version.h says how the
 * release is found), passed on EVERY call: runsc does not remember them
 * between create and start.  Flags a
 * backend does not take are translated or dropped here, in one place.
 */
#ifndef TOLLGATE_BACKEND_H
#define TOLLGATE_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "shim/context.h"
#include "base/error.h"
#include "base/json.h"

enum backend_kind { BACKEND_RUNSC, BACKEND_RUNC };

struct backend {
  enum backend_kind kind;
  char *name;   /* "runsc" or "runc" */
  char *path;   /* absolute path of the binary */
  char *root;   /* the backend's --root */
  char **args;  /* its other global flags, NULL-terminated */
};

/* Choose the backend for a new container from --runtime (runsc, runc or a
 * path whose name starts with runsc/runc) or else the host config.  The
 * binary must exist and be executable: a missing runsc is an error naming
 * the fix, never a fall back to runc. */
int backend_choose(const struct cli *cli, struct backend *b, tg_error **err);

/* Record b in a container's state object / read it back, so later verbs
 * use the same binary, root and flags even if the host config changed. */
void backend_to_state(const struct backend *b, json_t *state);
int backend_from_state(const json_t *state, struct backend *b, tg_error **err);

void backend_free(struct backend *b);

/* The id the backend knows a container by (recorded in state.json as
 * "backend_id"; tollgate's own id stays the one users and containerd
 * see).  runc looks ids up exactly and keeps tollgate's id.
 *
 * runsc looks a container up by id PREFIX: with "x-1" and "x-10" alive
 * every call on "x-1" fails as "ambiguous".  So runsc gets tollgate's own
 * id (what hooks, its state and its cgroup then show, as with the bare
 * backend) where that is safe: when no other directory of the tollgate root
 * (each container's state directory, claimed before this is asked, kept
 * until the backend has forgotten the container) is a prefix of the id
 * or has it as a prefix, and the id is not a prefix of "tg-" nor starts
 * with it.  Otherwise it gets "tg-" and 32 hex digits of SHA-256(id): a
 * fixed length in a namespace no own id enters, so no live backend id is
 * a prefix of another either way (two creates at once each see the
 * other's directory, so at most one keeps its own id).  The runsc root
 * is per tollgate root (<root>/backend/runsc), so ids of other roots
 * never meet.  root: the tollgate root (cli->root).  Owned. */
char *backend_container_id(const struct backend *b, const char *root, const char *id);

/* A NULL-terminated, growable argv; owns its strings. */
struct argv {
  char **v;
  size_t len;
};
void argv_add(struct argv *a, const char *s);
void argv_addf(struct argv *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void argv_free(struct argv *a);

/* Per-call options that become backend global flags. */
struct backend_call {
  const char *log_path; /* --log FILE --log-format json, or NULL */
  bool debug;           /* --debug */
  bool systemd_cgroup;  /* --systemd-cgroup */
};

/* Start an argv: binary, --root, the recorded global flags, the per-call
 * flags, then verb.  The caller appends the verb's own arguments. */
void backend_argv(const struct backend *b, const struct backend_call *call,
                  const char *verb, struct argv *out);

/* The create/run flags as tollgate received them. */
struct create_flags {
  const char *bundle;         /* absolute */
  const char *pid_file;       /* the backend's pid file */
  const char *console_socket; /* passed through, or NULL */
  bool no_pivot;
  bool no_new_keyring;
  long preserve_fds; /* -1 when not given */
};

/* Append create's arguments for b (not the id): runsc takes --bundle,
 * --pid-file and --console-socket only; --no-pivot, --no-new-keyring and
 * --preserve-fds go to runc alone. */
void backend_create_args(const struct backend *b, const struct create_flags *f,
                         struct argv *out);

struct exec_flags {
  const char *process;        /* the hardened process.json */
  const char *pid_file;       /* or NULL */
  const char *console_socket; /* or NULL */
  bool detach;
  long preserve_fds; /* -1 when not given; runc only */
};

/* Append exec's arguments for b (not the id). */
void backend_exec_args(const struct backend *b, const struct exec_flags *f,
                       struct argv *out);

/* Pick the backend's message out of what it wrote: the msg of the last
 * error line of a JSON log, else the last non-empty stderr line with
 * logrus's `time=... level=error msg="..."` wrapping removed.  Returns an
 * owned string, or NULL when there is nothing. */
char *backend_message(const char *log_text, const char *stderr_text);

/* Rewrite a backend message into the wording containerd matches on
 * ("container <id> does not exist", "container not running",
 * "process already finished"), or return a copy.  Owned. */
char *backend_normalize_message(const char *id, const char *msg);

#endif
