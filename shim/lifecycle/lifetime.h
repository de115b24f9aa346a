/* A container's lifetime: who owns it and until when it may run
 * (docs/reliability.md, "Nothing outlives its owner").
 *
 * create|run --owner-pid PID records the owner as the process identity
 * that pid reuse cannot fake: pid, start time (field 22 of /proc/PID/stat)
 * and the pid namespace tollgate read them in.  --deadline SECONDS|RFC3339
 * records a wall-clock deadline.  Both are optional: a container with
 * neither (what containerd, Docker and Podman create) is never reaped,
 * as runc never deletes a container by itself; the shim (or conmon) that
 * created it is its owner and deletes it.
 *
 * The record is <state dir>/lifetime.json, written only by tollgate:
 *   {"owner": {"pid": N, "start_time": T, "pid_ns": INODE} | null,
 *    "deadline": UNIX_SECONDS | null, "deadline_text": "RFC 3339" | null}
 * It is a file of its own, beside state.json, so that the reaper reads a
 * hundred bytes per container, and so that a later service can move a
 * deadline (lifetime_set_deadline) without rewriting state.json. */
#ifndef TOLLGATE_LIFETIME_H
#define TOLLGATE_LIFETIME_H

#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

#include "base/error.h"
#include "base/json.h"

#define LIFETIME_FILE "lifetime.json"

struct lifetime {
  pid_t owner_pid;                /* 0: no owner */
  unsigned long long owner_start; /* its start time, clock ticks since boot */
  unsigned long long owner_pidns; /* inode of the pid namespace it was read in */
  long long deadline;             /* unix seconds; 0: none */
};

/* --deadline's value: SECONDS from now (1 to 10 years' worth) or an
 * RFC 3339 time ("2026-12-06T05:00:00Z", an offset, or fractions) that
 * is still to come.  0 with *deadline, or -1 with *err naming the form. */
int lifetime_parse_deadline(const char *s, time_t now, long long *deadline, tg_error **err);

/* --owner-pid's value: a live process, read now.  0 with lt's owner
 * fields set, or -1 with *err. */
int lifetime_parse_owner(const char *s, struct lifetime *lt, tg_error **err);

/* The owner is this process (foreground `tollgate run`). */
void lifetime_owner_self(struct lifetime *lt);

/* Whether lt says anything (an owner or a deadline). */
bool lifetime_is_set(const struct lifetime *lt);

/* Write lt into dir/lifetime.json (atomically, mode 0600). */
int lifetime_write(const char *dir, const struct lifetime *lt, tg_error **err);

/* Read dir/lifetime.json.  1 with *lt, 0 when there is none (never
 * reaped), -1 with *err when it is unreadable or malformed. */
int lifetime_read(const char *dir, struct lifetime *lt, tg_error **err);

/* Move the deadline of the container at dir (0: none), keeping the owner:
 * for a service's set_timeout.  The caller holds the container's lock. */
int lifetime_set_deadline(const char *dir, long long deadline, tg_error **err);

/* lt as a JSON object (the same form as the file).  Owned. */
json_t *lifetime_json(const struct lifetime *lt);

/* Why the container must go, or NULL while it may live: its owner is
 * gone (no such process, another process under its pid, or a zombie), or
 * its deadline passed.  An owner recorded in another pid namespace than
 * this process's cannot be judged from here and counts as alive.  Owned
 * string. */
char *lifetime_verdict(const struct lifetime *lt, time_t now);

/* The inode of this process's pid namespace, or 0. */
unsigned long long lifetime_self_pidns(void);

/* Whether a container whose processes are numbered in pid namespace ns
 * (state.json "pid_ns", recorded by create) must be left alone by this
 * process: ns is not ours.  Its sandbox, sidecar and init, and the pids
 * the backend's own state names, are numbered there, not here: a delete
 * from here signals pids that name other processes or none, finds them
 * "gone", and removes the state while they run on (seen: a `gc
 * --all-roots` from a service run as PID 1 of its own namespace left a
 * runsc sandbox, its gofer and its sidecar running, out of every list).
 * Once that namespace has ended (lifetime_pidns_ended), its processes
 * have too, and the container is removed from the initial namespace, with
 * the backend's delete run where those numbers name nothing.  0 (not
 * recorded: older state) is ours. */
bool lifetime_pidns_elsewhere(unsigned long long ns);

/* Whether pid namespace ns has ended: this process is in the initial pid
 * namespace, which sees every process of every namespace, and none has
 * ns (a namespace lives while its init does, and its init is a process
 * like any other here).  Anywhere else, or for ns 0, false: a namespace
 * this process cannot see into proves nothing. */
bool lifetime_pidns_ended(unsigned long long ns);

/* Whether this process is in the initial pid namespace (where
 * lifetime_pidns_ended can tell). */
bool lifetime_sees_every_pidns(void);

/* The pid namespace create recorded in a container's state.json, or 0. */
unsigned long long lifetime_state_pidns(const json_t *state);

#endif
