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
 * A tick can miss the moment between a Sentry's refused thread and runsc
 * removing its cgroup (a loaded machine, a stopped tollgate): the kernel
 * logs a cgroup's first refused fork and every OOM kill, and the report
 * then reads /dev/kmsg from the watch's start for those lines of the
 * container's cgroups (base/kmsg.h): a refusal with its count unknown and
 * pids.max as last read, each OOM kill counted.
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
 * runs), or (neither) of the pid limit_watch_attach names later, with
 * no thread (runc's one-call run: the init is known once `runc run
 * --detach` has exited, and its cgroup stays until delete).  NULL when
 * no thread could be started (nothing is reported then). */
struct limit_watch *limit_watch_start(pid_t pid, const char *pid_file);

/* A watch started with neither pid nor pid file: open the counters of
 * the container's cgroups, as runc's state.json in runc_dir (runc's
 * directory of the container) records them (else, or when NULL, those of
 * pid, the verified init) and take a sample.  Once only. */
void limit_watch_attach(struct limit_watch *lw, pid_t pid, const char *runc_dir);

/* Stop watching, and print on stderr one line per limit the container
 * met, naming it and its value: "tollgate: container ID: ...".  Frees
 * lw.  Returns whether a line was printed. */
bool limit_watch_report(struct limit_watch *lw, const char *id, bool runsc);

#endif
