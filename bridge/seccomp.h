/* The seccomp filter of the bridge watcher thread: the code that reads and
 * parses bytes written by the container. */
#ifndef TOLLGATE_BRIDGE_SECCOMP_H
#define TOLLGATE_BRIDGE_SECCOMP_H

#include "base/error.h"

/* Confine the calling thread (only it: no TSYNC) to the system calls the
 * watcher uses: reading and removing files relative to directory fds it
 * already holds, epoll, memory management without PROT_EXEC, futexes and
 * thread exit.  Opening for writing, exec, sockets, ptrace, mount and
 * everything else kill the process.  Sets no_new_privs on the thread.
 * 0 or -1 with *err. */
int bridge_seccomp_confine_watcher(tg_error **err);

#endif
