/* policy check warnings; see policy_lint.h.  Each one names a way a call
 * could make a rule mean something its writer did not intend. */
#include "governance/policy_lint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

static bool path_like(const struct condition *c) {
  const char *s = json_string_value(c->value);
  const char *names[] = {"path", "file", "dir", "url", "uri", "dest", "src"};
  if (s && (strchr(s, '/') || strchr(s, '\\')))
    return true;
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (strstr(c->arg, names[i]))
      return true;
  return false;
}

/* An http tool's request parts are strings (port a number) that the gate
 * derives and normalises itself, with "." and ".." segments refused
 * (docs/egress.md): none of the warnings below applies to them. */
static bool http_part(const struct tool *t, const char *arg) {
  static const char *const parts[] = {"method", "url", "scheme", "host", "port", "path", "query", NULL};
  if (t->backend.type != BACKEND_HTTP)
    return false;
  for (const char *const *p = parts; *p; p++)
    if (strcmp(*p, arg) == 0)
      return true;
  return false;
}

static size_t lint_condition(const struct tool *t, const struct rule *r, const struct condition *c,
                             const char *path, struct policy_errors *out) {
  json_t at = {.line = c->line, .col = c->col};
  size_t n = 0;
  if (c->op == OP_ALL || c->op == OP_ANY) {
    for (size_t i = 0; i < c->nchildren; i++) {
      cleanup_free char *cp = xasprintf("%s.%s[%zu]", path, op_name(c->op), i);
      n += lint_condition(t, r, &c->children[i], cp, out);
    }
    return n;
  }
  if (http_part(t, c->arg))
    return 0;
  struct schema_arg info;
  schema_describe_arg(t->args, c->arg, &info);
  if (info.readings > 1) {
    policy_error_add(out, &at, path,
                     "warning: \"%s\" can name a literal key \"%s\" or a path into objects, and the "
                     "schema admits both; a call carrying both is refused (bad_request), but a tool "
                     "may read the other one: declare exactly one in \"args\" with "
                     "\"additionalProperties\": false",
                     c->arg, c->arg);
    n++;
  }
  switch (c->op) {
  case OP_LT: case OP_LE: case OP_GT: case OP_GE:
    if (!info.only_numbers) {
      policy_error_add(out, &at, path,
                       "warning: \"%s\" is compared with \"%s\" but the schema does not say "
                       "\"type\": \"number\" (or \"integer\") for it; a call sending it as a string "
                       "is refused at run time, but say what it is: \"args\": {\"type\": \"object\", "
                       "\"properties\": {\"%s\": {\"type\": \"number\"}}}",
                       c->arg, op_name(c->op), c->arg);
      n++;
    }
    break;
  case OP_EQ: case OP_IN:
    /* A deny-list entry matches one type only: "rm" is not ["rm"], 640 is
     * not "640".  Unless the schema pins the type, the same value in
     * another type slips past it to the next rule. */
    if (r->effect == EFFECT_DENY && !info.only_numbers && !info.only_strings) {
      policy_error_add(out, &at, path,
                       "warning: a deny rule matching \"%s\" with \"%s\" does not match the same value "
                       "sent as another type (\"640\" for 640, [\"rm\"] for \"rm\"), which then falls "
                       "through to the next rule; declare the type of \"%s\" in \"args\", or allow "
                       "known values instead of denying bad ones",
                       c->arg, op_name(c->op), c->arg);
      n++;
    }
    break;
  case OP_PREFIX:
    /* A schema pattern on the argument is taken as the writer's answer
     * to "..": the check cannot tell a good pattern from a bad one. */
    if (path_like(c) && !info.patterned) {
      policy_error_add(out, &at, path,
                       "warning: \"prefix\" %s also matches \"%s../etc/passwd\": a prefix is not a "
                       "directory; refuse \"..\" with a schema \"pattern\" (e.g. \"pattern\": "
                       "\"^[^.]*$\" or a stricter one) and have the tool resolve the path itself",
                       json_string_value(c->value), json_string_value(c->value));
      n++;
    }
    if (r->effect == EFFECT_DENY && !info.only_strings) {
      policy_error_add(out, &at, path,
                       "warning: a deny rule with \"prefix\" on \"%s\", whose type the schema does "
                       "not pin to string: a call sending another type is refused at run time, "
                       "but declare \"type\": \"string\" for it",
                       c->arg);
      n++;
    }
    break;
  default:
    break;
  }
  return n;
}

size_t policy_lint(const struct policy *p, struct policy_errors *out) {
  size_t n = 0;
  for (size_t i = 0; i < p->ntools; i++) {
    const struct tool *t = p->tools[i];
    for (size_t j = 0; j < t->nrules; j++) {
      if (!t->rules[j].has_condition)
        continue;
      cleanup_free char *path = xasprintf("tools.%s.rules[%zu].if", t->name, j);
      n += lint_condition(t, &t->rules[j], &t->rules[j].condition, path, out);
    }
  }
  return n;
}

char *policy_describe_anomalies(const struct policy *p) {
  const struct anomaly_limits *l = &p->anomalies;
  struct json_buf b = {0};
  for (int k = 0; k < ANOMALY_KINDS; k++) {
    if (l->of[k].limit <= 0)
      continue;
    char one[160];
    if (k == ANOMALY_DENIALS_IN_WINDOW)
      snprintf(one, sizeof one, "%s%s %lld of %lld calls (%s)", b.len ? ", " : "",
               anomaly_kind_name((enum anomaly_kind)k), l->of[k].limit, l->of[k].calls,
               anomaly_action_name(l->of[k].action));
    else
      snprintf(one, sizeof one, "%s%s %lld (%s)", b.len ? ", " : "",
               anomaly_kind_name((enum anomaly_kind)k), l->of[k].limit,
               anomaly_action_name(l->of[k].action));
    json_buf_raw(&b, one, strlen(one));
  }
  if (b.len == 0)
    return NULL;
  bool stops = false;
  for (int k = 0; k < ANOMALY_KINDS; k++)
    stops |= l->of[k].limit > 0 && l->of[k].action == ANOMALY_STOP;
  if (stops) {
    char grace[64];
    snprintf(grace, sizeof grace, "; stop grace %lld ms", l->stop_grace_ms);
    json_buf_raw(&b, grace, strlen(grace));
  }
  if (l->alert_hook) {
    json_buf_raw(&b, "; alert hook ", strlen("; alert hook "));
    json_buf_raw(&b, l->alert_hook[0], strlen(l->alert_hook[0]));
  }
  return b.s;
}
