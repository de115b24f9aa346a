/* `tollgate calls` of a container whose gate is gone: its calls read back
 * from the audit log's current run (from its last "open" record), each
 * with its decision, status and duration, the anomalies on record, and
 * the budget spent.  The spending is budget_replay_log's, the one count a
 * resumed gate starts from (budget_replay.h), so the listing never tells
 * another figure than the gate would (a sidecar's death with calls in
 * flight included).  The shape is the live gate's `calls` reply, plus
 * "source" (the log). */
#ifndef TOLLGATE_CALL_REPLAY_H
#define TOLLGATE_CALL_REPLAY_H

#include "base/error.h"
#include "base/json.h"

/* The reply for container id from the log at path (owned), or NULL with
 * *err when the log cannot be read.  The run's policy, named in its
 * "open" record, gives the limits when it can still be read; without it
 * no limit is shown. */
json_t *call_replay_log(const char *path, const char *id, tg_error **err);

#endif
