/* A terminal for `tollgate run` under runc.
 *
 * runc's detached create needs --console-socket when process.terminal is
 * true (runsc run makes its own console).  When run is given no socket,
 * tollgate listens on one itself, receives the pty master that runc
 * sends before its create returns, and relays it to its own stdio (raw
 * mode while it runs, as runc run does). */
#ifndef TOLLGATE_CONSOLE_H
#define TOLLGATE_CONSOLE_H

#include <stdbool.h>

#include "base/error.h"

/* Listen on path (mode 0600) for the backend's console connection.  The
 * backend can connect and send before anyone accepts (the kernel queues
 * it), so no thread is needed.  Returns the listening fd or -1 with *err. */
int console_listen(const char *path, tg_error **err);

/* Take the pty master that the backend sent to listen_fd.  -1 with *err
 * when nothing was sent. */
int console_receive(int listen_fd, tg_error **err);

struct console_relay;

/* Relay stdin -> master and master -> stdout in a thread, with the
 * caller's terminal (if stdin is one) in raw mode and its size copied to
 * the pty.  Takes ownership of master. */
int console_relay_start(int master, struct console_relay **out,
                        tg_error **err);

/* Drain what the container wrote, stop the thread, restore the terminal,
 * close the master.  NULL is fine. */
void console_relay_stop(struct console_relay *r);

/* Does the bundle's config.json ask for a terminal?  false when it cannot
 * be read (create reports that properly). */
bool console_bundle_wants_terminal(const char *bundle);

#endif
