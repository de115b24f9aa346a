/* The gate's audit log, opened (internal to governance/: gate.c and
 * gate_log.c).  gate_record_death() is in gate.h. */
#ifndef TOLLGATE_GATE_LOG_H
#define TOLLGATE_GATE_LOG_H

#include "governance/audit.h"
#include "governance/gate.h"

/* Open cfg's container log (<id>.jsonl, or <id>@<hash>.jsonl when that one
 * is being written under another --root), or, with cfg->resume, continue
 * it: a synced sidecar_died record in place of "open", then one "unknown"
 * record per call in flight (docs/audit.md).  0 or -1 with *err. */
int gate_log_open(const struct gate_config *cfg, struct audit **out, tg_error **err);

#endif
