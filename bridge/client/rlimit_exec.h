/* tollgate-call --rlimits: set address-space rlimits, then exec a program.
 *
 *   tollgate-call --rlimits NAME=SOFT:HARD... -- PROGRAM [ARG...]
 *
 * Under runc, tollgate moves RLIMIT_AS and RLIMIT_DATA out of
 * process.rlimits and puts this in front of the process's args
 * (oci/rlimits_defer.h says why and writes the form; docs/hardening.md,
 * "Address-space rlimits under runc").  NAME is RLIMIT_AS or RLIMIT_DATA;
 * SOFT and HARD are decimal byte counts or "unlimited".
 */
#ifndef TOLLGATE_CLIENT_RLIMIT_EXEC_H
#define TOLLGATE_CLIENT_RLIMIT_EXEC_H

#define RLIMIT_EXEC_FLAG "--rlimits"

/* argv[1] is RLIMIT_EXEC_FLAG.  Sets each limit, only ever lowering it (a
 * soft or hard limit already below the one asked for stays), then execs PROGRAM as
 * runc would have: found over the environment's PATH as Go's
 * exec.LookPath finds it, with argv[0] PROGRAM and the environment as they
 * are.  Returns only on failure, before PROGRAM runs, with one line on
 * stderr: 127 when PROGRAM is not found, 126 for anything else (a bad
 * argument, a limit the kernel or the seccomp filter refuses, an exec that
 * fails). */
int rlimit_exec_main(int argc, char **argv);

#endif
