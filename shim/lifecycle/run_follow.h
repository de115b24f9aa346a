/* Following `runc run`'s pid file to the container's init, safely.
 *
 * A governed `tollgate run` under runc is one `runc run --detach`
 * (create_direct.c, shim/lifecycle/run.c) and its run guard (run_guard.h)
 * wants a pidfd of the container's init, which only runc knows: it
 * writes the init's pid to --pid-file (in the container's state
 * directory, root's, 0700) once the init runs.  A pid is a name that can
 * be reused, so the pid read is trusted only when the process behind the
 * pidfd opened on it is provably the one runc started:
 *   - its parent is the expected one, an unreaped process whose pid is
 *     therefore its own: tollgate itself, the child subreaper that runc's
 *     init is re-parented to once `runc run --detach` has exited (only a
 *     descendant of tollgate can become its child), or `runc run` while
 *     it still runs (runc clones its init with CLONE_PARENT);
 *   - it started no earlier than that `runc run` did;
 *   - it is still unreaped after both were read (a signal 0 through the
 *     pidfd succeeds), so the /proc entry read was the pidfd's process and
 *     not a later holder of the same pid.
 * The file is opened without following a symlink and without blocking
 * (a FIFO planted there cannot hold tollgate), must be a regular file of
 * tollgate's own user, and is read to a small bound. */
#ifndef TOLLGATE_RUN_FOLLOW_H
#define TOLLGATE_RUN_FOLLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The fields of /proc/PID/stat the check needs. */
struct proc_stat_fields {
  pid_t ppid;
  unsigned long long start; /* starttime, clock ticks after boot */
};

/* Parse /proc/PID/stat text (len bytes, not necessarily NUL-terminated):
 * the command name may hold spaces and parentheses, so the fields are
 * counted after its last ')'.  0, or -1 when the text is not such a line. */
int run_follow_parse_stat(const char *buf, size_t len, struct proc_stat_fields *out);

/* Parse a pid file's text: decimal digits, an optional trailing newline,
 * a pid above 1 (pid 1 is never a container's init seen from the host).
 * 0, or -1 (also for an empty or cut text: the caller tries again). */
int run_follow_parse_pid(const char *buf, size_t len, pid_t *pid);

/* Whether init (as read from /proc) may be the init that `runc run`
 * made, given its expected parent (pid parent: see above) and the time
 * runc run started (runner_start). */
bool run_follow_trusts(const struct proc_stat_fields *init, pid_t parent,
                       unsigned long long runner_start);

/* Read /proc/PID/stat of pid into *out.  0 or -1 (errno). */
int run_follow_read_stat(pid_t pid, struct proc_stat_fields *out);

/* One attempt: the pid file name in directory dir_fd names a verified
 * init, a child of parent started after runner_start?  1 with *pidfd (owned,
 * close-on-exec) and *pid, 0 when not (yet): no file, a cut or foreign
 * one, a process that fails the check.  Never blocks. */
int run_follow_try(int dir_fd, const char *name, pid_t parent, unsigned long long runner_start,
                   int *pidfd, pid_t *pid);

#endif
