/* Internal to bridge/: the bridge server's watcher (see server_state.h
 * for how the server's parts fit), the only code of the server that reads
 * container bytes.  One thread waits on inotify for calls/req, reads each
 * ready request without trusting it, validates it and posts it to the
 * pool (server_pool.h); it rescans the directory, removes what is no part
 * of the protocol, collects old leftovers and applies the attempt budget.
 */
#ifndef TOLLGATE_BRIDGE_SERVER_WATCHER_H
#define TOLLGATE_BRIDGE_SERVER_WATCHER_H

#include "bridge/server_state.h"
#include "base/error.h"

/* Make the watcher's descriptors: the inotify watch on calls/req, the
 * epoll sets (inotify, the wake eventfd and the stop fds; the pause set
 * without inotify) and the wake eventfd.  0 or -1 with *err; what was
 * made is closed by watcher_close. */
int watcher_open(struct bridge_service *s, tg_error **err);

/* Close what watcher_open made (any of them may be -1). */
void watcher_close(struct bridge_service *s);

/* The watcher thread's body (pthread_create with s).  It ends when a stop
 * fd becomes readable or watcher_stop is called, after taking the markers
 * already there; it returns NULL. */
void *watcher_main(void *s);

/* Tell the watcher to stop taking requests, and wake it. */
void watcher_stop(struct bridge_service *s);

#endif
