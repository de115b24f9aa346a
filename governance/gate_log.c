/* A gate's audit log: opened for a new run, or continued after a sidecar
 * crash (gate_config.resume) with the records that say what happened.
 * See gate_log.h. */
#include "governance/gate_log.h"

#include <errno.h>

#include "base/util.h"

/* After the resume record: one record per call whose outcome is unknown,
 * so the log says which calls may or may not have run. */
static void record_unknown(struct audit *a, const struct gate_resume *r) {
  for (size_t i = 0; i < r->nunknown; i++) {
    struct audit_record rec = {
        .event = "unknown", .call_id = r->unknown_ids[i], .duration_ms = -1,
        .outcome = GATE_OUTCOME_UNKNOWN, .reason = r->reason,
        .message = "the bridge sidecar died while this call was in flight or queued: it may or "
                   "may not have run; the caller was told outcome_unknown"};
    audit_append(a, &rec, false, NULL);
  }
}

/* The same id under another --root is live: one log per (root, id),
 * never two writers interleaving one chain. */
int gate_log_open(const struct gate_config *cfg, struct audit **out, tg_error **err) {
  const struct gate_resume *r = cfg->resume;
  json_t *extra = NULL;
  struct audit_record rec = {.event = "sidecar_died", .duration_ms = -1};
  if (r != NULL) {
    extra = json_new_object();
    json_object_set(extra, "dead_pid", json_new_integer(r->dead_pid));
    json_object_set(extra, "restarts", json_new_integer(r->restarts));
    json_object_set(extra, "unknown_calls", json_new_integer((long long)(r->nunknown + r->unlisted)));
    rec.reason = r->reason;
    rec.outcome = r->action;
    rec.extra = extra;
  }
  const struct audit_record *resume = r ? &rec : NULL;
  int ret = audit_open_resumed(cfg->audit_dir, cfg->container_id, cfg->container_id,
                               cfg->audit_key, cfg->policy_path, cfg->state_dir, resume, out, err);
  if (ret < 0 && cfg->state_dir != NULL && err != NULL && *err != NULL &&
      (*err)->errnum == EBUSY) {
    tg_error_free(err);
    cleanup_free char *stem = audit_log_stem_for_state(cfg->container_id, cfg->state_dir);
    ret = audit_open_resumed(cfg->audit_dir, stem, cfg->container_id, cfg->audit_key,
                             cfg->policy_path, cfg->state_dir, resume, out, err);
  }
  json_free(extra);
  if (ret == 0 && r != NULL)
    record_unknown(*out, r);
  return ret;
}

int gate_record_death(const struct gate_config *cfg, tg_error **err) {
  if (cfg->container_id == NULL || !container_id_is_valid(cfg->container_id))
    return tg_error_set(err, 0, "gate: invalid container id");
  if (cfg->audit_dir == NULL || cfg->resume == NULL)
    return tg_error_set(err, 0, "gate: no audit directory or nothing to record");
  struct audit *a = NULL;
  if (gate_log_open(cfg, &a, err) < 0)
    return -1;
  if (audit_close(a) < 0)
    return tg_error_set(err, EIO, "gate: the audit log's closing records could not be written");
  return 0;
}

