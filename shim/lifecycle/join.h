/* Who may join whom: the one join rule (docs/hardening.md "Joins").
 *
 * A join is a container that asks to enter another container's
 * namespaces (and, under runsc, its gVisor sandbox): a CRI/CRI-O pod
 * member naming its sandbox (oci/cri.c reads both annotation families),
 * or a linux.namespaces path whose namespace is that of the recorded
 * init of a tollgate container of this --root.  What the config says is
 * only the claim.  The join is accepted when one of three proofs holds,
 * each taken from tollgate's own records or from the trusted caller:
 *
 *   1. the same containerd shim created both (same pid and start time,
 *      and its executable is a root-owned containerd-shim-runc-v1/v2):
 *      containerd runs one shim per pod;
 *   2. the caller vouches: `tollgate create|run --join OWNER`;
 *   3. the host config's trusted_join_callers names both callers'
 *      executables (e.g. /usr/bin/conmon for Podman).
 *
 * A pod member's sandbox must in every case be recorded with the CRI
 * role "sandbox", run under the same backend binary, be running, and
 * every pod-identity annotation it recorded must be present and equal in
 * the member's config.
 *
 * The caller is the parent process of this tollgate as tollgate reads it
 * from /proc; every container records its own in state.json ("caller") at
 * create.  containerd's runc.v2 shim execs BinaryName itself: a wrapper
 * script in between must `exec` tollgate, or its shell is the caller.
 */
#ifndef TOLLGATE_SHIM_JOIN_H
#define TOLLGATE_SHIM_JOIN_H

#include <stdbool.h>
#include <sys/types.h>

#include "shim/context.h"
#include "base/error.h"
#include "base/json.h"

/* The process that ran a tollgate create.  Owned strings. */
struct join_caller {
  pid_t pid;                /* 0: unknown */
  unsigned long long start; /* field 22 of /proc/PID/stat */
  char *exe;                /* readlink /proc/PID/exe, or NULL */
  bool containerd_shim;     /* exe is a root-owned containerd runc shim */
  char *containerd_ns;      /* such a shim's -namespace argument, or NULL */
};

/* This process's caller (getppid()), read from /proc.  Fields it cannot
 * read stay empty, which proves nothing; never fails. */
void join_caller_self(struct join_caller *out);
/* Record c in state as "caller"; read one recorded so (all empty when
 * the state has none: a container created before callers were recorded). */
void join_caller_record(const struct join_caller *c, json_t *state);
void join_caller_recorded(const json_t *state, struct join_caller *out);
void join_caller_free(struct join_caller *c);

/* The decision table, from facts alone (unit-tested).  Which proof ties a
 * joiner whose caller is joiner to owner_id, whose recorded caller is
 * owner: "the same containerd shim", "--join", "trusted_join_callers", or
 * NULL for none.  vouched is --join's value or NULL; trusted the host
 * config's trusted_join_callers (NULL-terminated, or NULL). */
const char *join_proof(const struct join_caller *joiner, const struct join_caller *owner,
                       const char *vouched, const char *owner_id, char *const *trusted);

/* Every pod-identity annotation of the sandbox's config (sandbox_config)
 * is present and equal in the member's: 0, or -1 with *err naming the
 * first one that is missing or differs. */
int join_pod_identity(const json_t *member_config, const json_t *sandbox_config, const char *sandbox,
                      tg_error **err);

struct join_request {
  const char *id;            /* the joiner's id */
  const json_t *config;      /* its config.json as the author wrote it */
  const json_t *state;       /* its state so far: backend, backend_path */
  const char *vouched;       /* --join OWNER, or NULL */
  const struct join_caller *caller;
};

/* What create does with a container: whose namespaces it shares, or
 * none.  Owned strings. */
struct join {
  char *owner;            /* the container joined, or NULL: no join */
  pid_t owner_pid;        /* its recorded init (runsc: its sandbox process) */
  char *owner_backend_id; /* the id the backend knows it by */
  bool pod;               /* a CRI/CRI-O pod member of sandbox owner */
  bool share_pid;         /* the config asks for the owner's PID namespace */
  bool net;               /* ... or its network namespace (runc: create
                             points it at the owner's, as for a pod) */
  const char *proof;      /* which proof held (static), or NULL */
  tg_error *refused;      /* the claim was not proven: the refusal, which
                             create gives unless the profile is passthrough */
  char *kube_namespace;   /* the Kubernetes namespace, only when proven to
                             come from containerd's CRI (k8s.io), or NULL */
};

/* Decide req's join (before hardening).  0 with *out filled (out->refused
 * set when a claim fails the rule), or -1 with *err for a config whose
 * CRI annotations are malformed. */
int join_decide(const struct cli *cli, const struct join_request *req, struct join *out, tg_error **err);

/* After hardening (not passthrough): a network namespace path the profile
 * kept ("network": "keep") that is a tollgate container's is a join as
 * well, accepted only for the owner decide() proved; any other kept path
 * is the client's network (CNI, Podman) and is no join, but is refused
 * when own_userns (runc, a user namespace of the container's own, which
 * cannot mount /sys in a network namespace it does not own).  0 or -1
 * with *err. */
int join_check_kept_network(const struct cli *cli, const json_t *hardened, const struct join *j, bool own_userns,
                            tg_error **err);

/* Record the accepted join in state ("join": {"owner", "proof"}). */
void join_record(const struct join *j, json_t *state);

void join_free(struct join *j);
#define cleanup_join __attribute__((cleanup(join_free)))

#endif
