/* Running the backend binary: fork + exec with stdio either inherited
 * untouched (the container's stdio is the caller's) or captured through
 * pipes (to turn a backend's message into tollgate's one error line). */
#ifndef TOLLGATE_PROC_H
#define TOLLGATE_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/error.h"

struct proc_opts {
  bool capture_stdout;  /* else inherited */
  bool capture_stderr;  /* else inherited */
  bool forward_signals; /* INT/TERM/HUP/QUIT received meanwhile go to the child */
  bool die_with_parent; /* the child gets SIGKILL when tollgate dies
                           (PR_SET_PDEATHSIG): for a backend that must
                           not outlive it (run's `runsc run`) */
  bool fresh_pid_ns;    /* the child runs as PID 1 of a new, empty pid
                           namespace: the pids it was told of (a backend's
                           state from a namespace that ended) name no
                           process there.  /proc stays the caller's. */
};

struct proc {
  pid_t pid;
  int out_fd, err_fd; /* read ends, -1 when inherited */
};

struct proc_result {
  int status;     /* exit status; 128+N when killed by signal N */
  char *out;      /* captured stdout (owned, NUL-terminated) or NULL */
  char *err_text; /* captured stderr (owned, NUL-terminated) or NULL */
};

/* Start argv[0] (an absolute path) with argv.  The child gets an empty
 * signal mask and default dispositions, so a parent that blocks signals
 * for a signalfd does not hand that on to the container. */
int proc_spawn(char *const argv[], const struct proc_opts *opts,
               struct proc *p, tg_error **err);

/* Read the captured output (at most 16 MiB each) until EOF, then reap the
 * child.  Fills res; the caller frees it with proc_result_free(). */
int proc_finish(struct proc *p, const struct proc_opts *opts,
                struct proc_result *res, tg_error **err);

/* proc_spawn + proc_finish. */
int proc_run(char *const argv[], const struct proc_opts *opts,
             struct proc_result *res, tg_error **err);

void proc_result_free(struct proc_result *res);

/* Turn a wait status into a shell-style exit status (128+N for signal N). */
int proc_exit_status(int wstatus);

#endif
