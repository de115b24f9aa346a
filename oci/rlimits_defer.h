/* Address-space rlimits under runc: applied by the container's first exec,
 * not by runc.
 *
 * runc applies process.rlimits to its own init (a prlimit() from its
 * parent when the init reports ready) before that init loads the seccomp
 * filter, and `runc exec`'s init the same way.  The init is a Go program
 * with cgo threads and holds about 990 MiB of address space and 80 MiB of
 * data by then (runc 1.1.5, measured: Go's heap and page-summary
 * reservations, a 64 MiB glibc malloc arena per cgo thread, thread
 * stacks), so an RLIMIT_AS near 1 GiB made libseccomp's allocations fail
 * at random ("error adding seccomp filter rule for syscall ...: cannot
 * allocate memory"), and a lower one, or an RLIMIT_DATA below ~100 MiB,
 * always.  Nothing tollgate passes reaches that init's environment.
 *
 * So those two limits leave process.rlimits and go in front of the args:
 *
 *   WRAPPER --rlimits RLIMIT_AS=SOFT:HARD [RLIMIT_DATA=SOFT:HARD] -- ARGS...
 *
 * WRAPPER is the static client, bound read-only into the container from
 * the host (bridge/client/rlimit_exec.h): it runs after runc's init has
 * exec'd it (seccomp loaded, no new privileges, the container's user),
 * sets the limits, only ever lowering them, and execs ARGS as runc would.
 * SOFT and HARD are decimal or "unlimited".
 */
#ifndef TOLLGATE_OCI_RLIMITS_DEFER_H
#define TOLLGATE_OCI_RLIMITS_DEFER_H

#include <stdbool.h>

#include "base/error.h"
#include "base/json.h"

#define OCI_RLIMITS_FLAG "--rlimits"

/* Move process's RLIMIT_AS and RLIMIT_DATA entries into its args as
 * above.  An entry whose soft and hard are both unlimited stays (it bounds
 * nothing, and runc's init is not hurt by it); so does one whose values
 * are not numbers >= 0 (runc's own error names it).  Nothing changes when
 * no entry moves.  0, or -1 with *err when an entry to move has a soft
 * value above its hard one, or when process.args is not a non-empty array
 * of strings (runc would refuse either). */
int oci_rlimits_defer(json_t *process, const char *wrapper, tg_error **err);

/* Undo oci_rlimits_defer(): when process.args are WRAPPER --rlimits
 * SPEC... -- ARGS... with well-formed SPECs, the limits go back to the end
 * of process.rlimits and the args become ARGS.  For `exec`, which hardens a
 * new process against the container's own (effective) process.  false,
 * with process untouched, when its args are not of that form. */
bool oci_rlimits_undefer(json_t *process, const char *wrapper);

#endif
