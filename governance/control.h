/* The control socket of one container's gate: a Unix stream socket at
 * gate_config.control_socket, mode 0600 (0660 with the approver group as
 * its group when approver_group is configured, so that group can connect).
 *
 * One request per connection: the client sends one JSON line, the server
 * answers one JSON line and closes.  Requests:
 *   {"verb":"pending"}
 *   {"verb":"calls"}
 *   {"verb":"approve","call":ID,"reason":TEXT}
 *   {"verb":"deny","call":ID,"reason":TEXT}
 *   {"verb":"cancel","reason":TEXT}
 *   {"verb":"add_tool","name":NAME,"entry":{...}}  (root or the sidecar's
 *     own uid only: an agent-written tool joins the live gate, gate.h)
 * Replies: {"ok":true,...} or {"ok":false,"error":MESSAGE}.
 * The peer's uid and gid come from SO_PEERCRED, never from the request:
 * only root or a member of the approver group may approve or deny. */
#ifndef TOLLGATE_CONTROL_H
#define TOLLGATE_CONTROL_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/error.h"
#include "base/json.h"

struct control;

/* Called on the control thread for each request; returns the reply
 * (owned by the control module afterwards).  may_decide says whether the
 * peer may approve or deny. */
typedef json_t *(*control_handler)(void *ctx, const json_t *req, uid_t uid, bool may_decide);

/* Bind path and serve on a thread.  approver_group may be NULL. */
int control_start(const char *path, const char *approver_group, control_handler handler,
                  void *ctx, struct control **out, tg_error **err);

/* Stop the thread, remove the socket. */
void control_stop(struct control *c);

/* Client side: send req to the socket at path and return the reply (owned),
 * waiting at most timeout_ms. */
int control_request(const char *path, const json_t *req, int timeout_ms, json_t **reply,
                    tg_error **err);

#endif
