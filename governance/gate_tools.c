/* Agent-written tools added to a live gate (issue 43; docs/policy.md
 * "Adding a tool to a running gate"): the control socket's add_tool verb,
 * and a restarted sidecar's replay of the tools its run had added.
 *
 * The addition is narrow on purpose.  A full policy reload would start
 * the budgets afresh, so a model could clear its spending by creating a
 * tool; here one tool entry joins the policy and nothing else changes:
 * budgets, counters, anomaly state and every other tool stay as they are.
 * Only an entry with source_sha256 is taken, validated exactly as the
 * policy loader validates it, and counted against max_custom_tools. */
#include "governance/gate.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "governance/audit.h"
#include "governance/budget.h"
#include "governance/gate_state.h"
#include "governance/policy.h"
#include "governance/verify.h"
#include "base/util.h"

#define TOOL_ADDED_EVENT "tool_added"

/* The ceiling's max_custom_tools: -1 when there is no ceiling or it sets
 * none.  A ceiling that cannot be read refuses the addition (fail closed:
 * the host's bound is not to be skipped because its file went missing). */
static int ceiling_max_custom(const struct gate *g, long long *max, tg_error **err) {
  *max = -1;
  if (g->policy_ceiling == NULL)
    return 0;
  struct policy *c = NULL;
  if (policy_load(g->policy_ceiling, &c, err) < 0)
    return tg_error_wrap(err, "read the host's policy ceiling %s", g->policy_ceiling);
  *max = c->budgets.max_custom_tools;
  policy_free(c);
  return 0;
}

/* Join t to the live policy: the write lock keeps every lookup out while
 * the tools array and table are rebuilt, mu the budget's counters. */
static void insert(struct gate *g, struct tool *t) {
  pthread_mutex_lock(&g->mu);
  pthread_rwlock_wrlock(&g->tools_lock);
  policy_insert_tool(g->policy, t);
  budget_tool_added(g->budget);
  pthread_rwlock_unlock(&g->tools_lock);
  pthread_mutex_unlock(&g->mu);
}

int gate_add_tool(struct gate *g, const char *name, const json_t *entry, const char *who,
                  tg_error **err) {
  if (g->policy == NULL)
    return tg_error_set(err, 0, "this gate has no policy (it denies every call): a tool cannot be added to it");
  long long cmax = -1;
  if (ceiling_max_custom(g, &cmax, err) < 0)
    return -1;
  /* Only adds change the policy, one at a time: the check (name taken,
   * count) and the insert are one step. */
  pthread_mutex_lock(&g->add_mu);
  struct tool *t = NULL;
  if (policy_parse_added_tool(g->policy, name, entry, cmax, &t, err) < 0) {
    pthread_mutex_unlock(&g->add_mu);
    return -1;
  }
  /* Recorded (synced) before the tool is callable: a call of it is never
   * on the log before its addition, and the record carries the entry so
   * a restarted sidecar adds it again (gate_replay_added_tools). */
  cleanup_json json_t *extra = json_new_object();
  json_object_set(extra, "source_sha256", json_new_string(t->source_sha256));
  json_object_set(extra, "entry", json_copy(entry));
  struct audit_record rec = {.event = TOOL_ADDED_EVENT, .tool = name, .approver = who,
                             .duration_ms = -1, .extra = extra};
  if (audit_append(g->audit, &rec, true, err) < 0) {
    policy_tool_free(t);
    pthread_mutex_unlock(&g->add_mu);
    return tg_error_wrap(err, "the tool was not added: its audit record could not be written");
  }
  insert(g, t);
  int r = 0;
  if (g->tools_dirfd >= 0 &&
      gate_write_tools_json(g, g->tools_dirfd, g->tools_name, err) < 0)
    r = tg_error_wrap(err, "%s was added, but tools.json could not be rewritten (programs that "
                           "read it do not list the tool)", name);
  pthread_mutex_unlock(&g->add_mu);
  return r;
}

json_t *gate_add_tool_verb(struct gate *g, const json_t *req, uid_t uid) {
  json_t *o = json_new_object();
  /* Root, or the uid the sidecar runs as (the one that created the
   * container: an unprivileged rootless run), and no one else: an
   * approver may decide one call, not widen what every later call may
   * do.  The container never reaches this socket at all: it lives in the
   * container's state directory on the host, which is mounted nowhere in
   * the container (only the bridge area is: docs/architecture.md). */
  if (uid != 0 && uid != geteuid()) {
    json_object_set(o, "ok", json_new_bool(false));
    json_object_set(o, "error", json_new_string("permission denied: only root (or the user the "
                                                "container runs for) may add a tool"));
    return o;
  }
  const char *name = json_string_value(json_object_get(req, "name"));
  const json_t *entry = json_object_get(req, "entry");
  cleanup_free char *who = xasprintf("uid:%u", (unsigned)uid);
  cleanup_error tg_error *err = NULL;
  if (gate_add_tool(g, name, entry, who, &err) < 0) {
    json_object_set(o, "ok", json_new_bool(false));
    json_object_set(o, "error", json_new_string(err->msg));
    return o;
  }
  json_object_set(o, "ok", json_new_bool(true));
  json_object_set(o, "tool", json_new_string(name));
  return o;
}

/* --- replay --------------------------------------------------------------- */

struct added {
  json_t *records; /* the current segment's tool_added records (copies) */
};

static int collect_added(void *ctx, const json_t *rec) {
  struct added *a = ctx;
  const char *event = json_string_value(json_object_get(rec, "event"));
  if (event == NULL)
    return 0;
  /* An "open" starts a new run of the id: its tools are not this run's. */
  if (strcmp(event, "open") == 0) {
    json_free(a->records);
    a->records = json_new_array();
  } else if (strcmp(event, TOOL_ADDED_EVENT) == 0) {
    json_array_append(a->records, json_copy(rec));
  }
  return 0;
}

int gate_replay_added_tools(struct gate *g, tg_error **err) {
  if (g->policy == NULL)
    return 0;
  struct added a = {.records = json_new_array()};
  if (audit_each_record(audit_path(g->audit), collect_added, &a, err) < 0) {
    json_free(a.records);
    return -1;
  }
  int r = 0;
  for (size_t i = 0; r == 0 && i < json_array_len(a.records); i++) {
    const json_t *rec = json_array_get(a.records, i);
    const char *name = json_string_value(json_object_get(rec, "tool"));
    const json_t *entry = json_object_get(rec, "entry"); /* extra's members are the record's */
    struct tool *t = NULL;
    /* Checked again as the live gate checked it (the ceiling was checked
     * then): a record that no longer makes a valid tool fails the
     * restart rather than leave a tool of the run half there. */
    if (policy_parse_added_tool(g->policy, name, entry, -1, &t, err) < 0)
      r = tg_error_wrap(err, "add again the tool %s the run had added", name ? name : "(unnamed)");
    else
      insert(g, t);
  }
  json_free(a.records);
  return r;
}
