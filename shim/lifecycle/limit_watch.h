/* What `tollgate run` says when a container met one of its limits
 * (docs/hardening.md "Limits"): the host cgroup's own counters, sampled
 * while the container runs.
 *
 * A limit hit used to end a run with nothing on stderr: a Sentry whose
 * thread the pids controller refused dies with the whole sandbox, exit 2,
 * and only dmesg knew why (issue 38.2).  The counters live in the
 * cgroup, which `runsc run` removes as the sandbox ends, so they are read
 * while it lives (a thread, every LIMIT_WATCH_MS ms) and once more at the
 * end when the cgroup is still there (runc keeps it until delete):
 *   - pids.events "max": forks the pids controller refused (runc: the
 *     container's processes; runsc: the Sentry's host tasks);
 *   - memory.oom_control "oom_kill": processes the OOM killer ended.
 * Under runsc the guest's own process limit (RLIMIT_NPROC, enforced by
 * the Sentry) has no counter anywhere on runsc 20240729: the guest gets
 * EAGAIN and nothing on the host can tell, so it is not reported. */
#ifndef TOLLGATE_LIMIT_WATCH_H
#define TOLLGATE_LIMIT_WATCH_H

#include <stdbool.h>
#include <sys/types.h>

#define LIMIT_WATCH_MS 5

struct limit_watch;

/* Start watching the cgroup of pid, or (pid 0) of the pid that the file
 * pid_file names once it appears (runsc writes it when the sandbox
 * runs), or (neither) of the pid limit_watch_settle names at the end,
 * with no thread meanwhile (runc's one-call run, which holds the cgroup
 * for that last look).  NULL when no thread could be started (nothing is
 * reported then). */
struct limit_watch *limit_watch_start(pid_t pid, const char *pid_file);

/* A watch started with neither pid nor pid file: open the counters of
 * pid's cgroups now, while pid (the verified init) lives.  Once only. */
void limit_watch_attach(struct limit_watch *lw, pid_t pid);

/* The container's init has exited and its cgroup is still there: stop
 * the thread and take the last sample now.  runc's one-call run (`runc
 * run` removes the cgroup as soon as it reaps the init) holds `runc run`
 * stopped until this returns.  Safe on NULL; report says what was seen. */
void limit_watch_settle(struct limit_watch *lw);

/* Stop watching, and print on stderr one line per limit the container
 * met, naming it and its value: "tollgate: container ID: ...".  Frees
 * lw.  Returns whether a line was printed. */
bool limit_watch_report(struct limit_watch *lw, const char *id, bool runsc);

#endif
