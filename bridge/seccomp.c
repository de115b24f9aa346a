/* libseccomp filter for the bridge watcher thread.  See seccomp.h. */
#include "bridge/seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <stddef.h>
#include <sys/mman.h>

int bridge_seccomp_confine_watcher(tg_error **err) {
  /* Anything outside the list means the parser was subverted: end the
   * whole sidecar rather than let it go on (clients then get a clear
   * timeout, and the audit log shows no answer). */
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
  if (ctx == NULL)
    return tg_error_set(err, ENOMEM, "bridge: seccomp_init");
  static const int plain[] = {
      SCMP_SYS(read), SCMP_SYS(close), SCMP_SYS(newfstatat), SCMP_SYS(fstat),
      SCMP_SYS(statx), SCMP_SYS(lseek), SCMP_SYS(unlinkat),
      SCMP_SYS(getdents64), SCMP_SYS(epoll_wait), SCMP_SYS(epoll_pwait),
      SCMP_SYS(futex), SCMP_SYS(munmap), SCMP_SYS(mremap), SCMP_SYS(brk),
      SCMP_SYS(madvise), SCMP_SYS(clock_gettime), SCMP_SYS(gettimeofday),
      SCMP_SYS(time), SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigreturn),
      SCMP_SYS(restart_syscall), SCMP_SYS(sched_yield), SCMP_SYS(exit),
      SCMP_SYS(exit_group),
      SCMP_SYS(getpid), SCMP_SYS(gettid), SCMP_SYS(tgkill),
      SCMP_SYS(rt_sigaction), /* abort() on a failed allocation */
      SCMP_SYS(sigaltstack), /* thread exit under sanitizers */
      SCMP_SYS(write), /* the stderr of a dying process only; fds are ours */
  };
  int rc = 0;
  for (size_t i = 0; i < sizeof plain / sizeof plain[0] && rc == 0; i++)
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, plain[i], 0);
  /* fcntl: only F_GETFD/F_GETFL/F_SETFD (fdopendir checks the fd). */
  if (rc == 0)
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(fcntl), 1,
                          SCMP_A1(SCMP_CMP_EQ, F_GETFD));
  if (rc == 0)
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(fcntl), 1,
                          SCMP_A1(SCMP_CMP_EQ, F_GETFL));
  if (rc == 0)
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(fcntl), 1,
                          SCMP_A1(SCMP_CMP_EQ, F_SETFD));
  /* openat: read-only opens only, never creating anything. */
  if (rc == 0)
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1,
                          SCMP_A2(SCMP_CMP_MASKED_EQ,
                                  O_ACCMODE | O_CREAT | O_TRUNC | O_PATH, O_RDONLY));
  /* Memory for malloc, never executable. */
  if (rc == 0)
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
                          SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
  if (rc == 0)
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
                          SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
  if (rc == 0)
    rc = seccomp_load(ctx);
  seccomp_release(ctx);
  if (rc < 0)
    return tg_error_set(err, -rc, "bridge: load the watcher's seccomp filter");
  return 0;
}
