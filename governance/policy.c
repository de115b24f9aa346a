/* Policy parsing and checking.  Every problem is collected with its line,
 * column and field path, so one `tollgate policy check` run shows them all. */
#include "governance/policy.h"
#include "governance/policy_parse.h"
#include "governance/egress_config.h"
#include "governance/tool_identity.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/digest.h"
#include "base/util.h"

#define POLICY_MAX_BYTES (4u << 20)
#define DEFAULT_TOOL_TIMEOUT_MS 30000
#define MAX_TIMEOUT_S 3600.0

bool tool_name_is_valid(const char *name) {
  size_t n = strlen(name);
  if (n == 0 || n > 64)
    return false;
  if (!((name[0] >= 'A' && name[0] <= 'Z') || (name[0] >= 'a' && name[0] <= 'z') ||
        name[0] == '_'))
    return false;
  for (size_t i = 1; i < n; i++) {
    char c = name[i];
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
          c == '_' || c == '.' || c == '-'))
      return false;
  }
  return true;
}

static uint64_t hash_name(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s; s++) {
    h ^= (unsigned char)*s;
    h *= 1099511628211ull;
  }
  return h;
}

const struct tool *policy_find(const struct policy *p, const char *name) {
  if (p == NULL || p->table_size == 0)
    return NULL;
  size_t mask = p->table_size - 1;
  for (size_t i = hash_name(name) & mask;; i = (i + 1) & mask) {
    const struct tool *t = p->table[i];
    if (t == NULL)
      return NULL;
    if (strcmp(t->name, name) == 0)
      return t;
  }
}

static void build_table(struct policy *p) {
  size_t size = 16;
  while (size < p->ntools * 2)
    size *= 2;
  p->table = xcalloc(size, sizeof *p->table);
  p->table_size = size;
  for (size_t i = 0; i < p->ntools; i++) {
    size_t j = hash_name(p->tools[i]->name) & (size - 1);
    while (p->table[j] != NULL)
      j = (j + 1) & (size - 1);
    p->table[j] = p->tools[i];
  }
}

static void free_argv(char **argv) {
  if (argv == NULL)
    return;
  for (char **a = argv; *a; a++)
    free(*a);
  free(argv);
}

static void tool_free(struct tool *t) {
  if (t == NULL)
    return;
  free(t->name);
  free(t->description);
  free(t->source_sha256);
  json_free(t->args_source);
  schema_free(t->args);
  rules_free(t->rules, t->nrules);
  free(t->backend.name);
  free_argv(t->backend.argv);
  free(t->backend.path);
  free(t->backend.server);
  free(t->backend.remote);
  egress_config_free(t->backend.http);
  free(t);
}

void policy_free(struct policy *p) {
  if (p == NULL)
    return;
  for (size_t i = 0; i < p->ntools; i++)
    tool_free(p->tools[i]);
  free(p->tools);
  free(p->table);
  free_argv(p->approval_hook);
  free_argv(p->anomalies.alert_hook);
  for (size_t i = 0; i < p->nmcp; i++) {
    free(p->mcp[i].name);
    free_argv(p->mcp[i].argv);
  }
  free(p->mcp);
  free(p->path);
  free(p->dir);
  free(p);
}

/* Check obj's keys against the allowed list; unknown keys are errors so a
 * typo ("rule" for "rules") never silently weakens a policy. */
static void check_keys(struct policy_ctx *c, const json_t *obj, const char *path,
                       const char *const *allowed) {
  for (size_t i = 0; i < obj->u.object.len; i++) {
    const char *k = obj->u.object.keys[i];
    bool ok = false;
    for (const char *const *a = allowed; *a && !ok; a++)
      ok = strcmp(*a, k) == 0;
    if (!ok) {
      char list[512] = "";
      for (const char *const *a = allowed; *a; a++) {
        if (list[0])
          strncat(list, ", ", sizeof list - strlen(list) - 1);
        strncat(list, *a, sizeof list - strlen(list) - 1);
      }
      cleanup_free char *kp = *path ? xasprintf("%s.%s", path, k) : xstrdup(k);
      policy_error_add(&c->errs, obj->u.object.values[i], kp,
                       "unknown key \"%s\"; allowed here: %s", k, list);
    }
  }
}

static bool get_seconds(struct policy_ctx *c, const json_t *v, const char *path, int *ms) {
  if (!json_is(v, JSON_NUMBER) || !(v->u.number.value > 0) ||
      v->u.number.value > MAX_TIMEOUT_S) {
    policy_error_add(&c->errs, v, path, "must be a number of seconds greater than 0 and at most %g",
                     MAX_TIMEOUT_S);
    return false;
  }
  *ms = (int)ceil(v->u.number.value * 1000.0);
  return true;
}

static bool get_count(struct policy_ctx *c, const json_t *v, const char *path, long long *out) {
  long long n;
  if (!json_integer_value(v, &n) || n < 0) {
    policy_error_add(&c->errs, v, path, "must be a whole number, 0 or more");
    return false;
  }
  *out = n;
  return true;
}

/* A relative program path resolves against the policy's directory. */
static char *resolve_program(struct policy_ctx *c, const char *prog) {
  if (prog[0] == '/')
    return xstrdup(prog);
  return xasprintf("%s/%s", c->p->dir, prog);
}

/* Tools, hooks and MCP servers run as the tools' uid/gid (see tools.h).  When
 * tollgate runs as root, a program that uid cannot reach fails only at the
 * first call, deep inside a container run; say so at policy check time.
 * Every directory on the way needs search permission and the file read
 * and execute permission for "other" (or for that uid as owner or group). */
static const char *unreachable_by_nobody(const char *path) {
  if (geteuid() != 0)
    return NULL;
  char buf[PATH_MAX];
  if (realpath(path, buf) == NULL)
    return NULL; /* access() reports a missing file */
  for (char *slash = buf;;) {
    char *next = strchr(slash + 1, '/');
    bool last = next == NULL;
    if (!last)
      *next = '\0';
    struct stat st;
    if (stat(buf[0] ? buf : "/", &st) < 0)
      return NULL;
    mode_t need = last ? 05 : 01; /* r-x for the file, --x for directories */
    mode_t have = st.st_uid == sandbox_uid() ? (st.st_mode >> 6) & 07
                : st.st_gid == sandbox_gid() ? (st.st_mode >> 3) & 07
                                     : st.st_mode & 07;
    if ((have & need) != need)
      return last ? "the program is not readable and executable by the tools' uid (tool_uid), which runs it (chmod o+rx)"
                  : "a directory on its path is not searchable by the tools' uid (tool_uid), which runs it (chmod o+x)";
    if (last)
      return NULL;
    *next = '/';
    slash = next;
  }
}

/* Parse an argv array (or, when allow_string, a single program string). */
static char **parse_argv(struct policy_ctx *c, const json_t *v, const char *path,
                         bool allow_string) {
  if (allow_string && json_is(v, JSON_STRING) && json_string_value(v)[0]) {
    char **argv = xcalloc(2, sizeof *argv);
    argv[0] = resolve_program(c, json_string_value(v));
    const char *why;
    if (access(argv[0], X_OK) != 0)
      policy_error_add(&c->errs, v, path, "%s is not an executable file (%s); fix the path (relative paths start at the policy's directory)",
                       argv[0], strerror(errno));
    else if ((why = unreachable_by_nobody(argv[0])) != NULL)
      policy_error_add(&c->errs, v, path, "%s: %s", argv[0], why);
    return argv;
  }
  if (!json_is(v, JSON_ARRAY) || json_array_len(v) == 0) {
    policy_error_add(&c->errs, v, path, "must be a non-empty array of strings: the program and its arguments");
    return NULL;
  }
  size_t n = json_array_len(v);
  char **argv = xcalloc(n + 1, sizeof *argv);
  for (size_t i = 0; i < n; i++) {
    const json_t *a = json_array_get(v, i);
    if (!json_is(a, JSON_STRING) || strlen(json_string_value(a)) != a->u.string.len ||
        (i == 0 && a->u.string.len == 0)) {
      cleanup_free char *ip = xasprintf("%s[%zu]", path, i);
      policy_error_add(&c->errs, a, ip, "must be a string without NUL bytes%s",
                       i == 0 ? " naming the program" : "");
      argv[i] = xstrdup("");
      continue;
    }
    argv[i] = i == 0 ? resolve_program(c, json_string_value(a)) : xstrdup(json_string_value(a));
  }
  const char *why;
  if (argv[0][0] && access(argv[0], X_OK) != 0) {
    cleanup_free char *ip = xasprintf("%s[0]", path);
    policy_error_add(&c->errs, json_array_get(v, 0), ip,
                     "%s is not an executable file (%s); fix the path (relative paths start at the policy's directory)",
                     argv[0], strerror(errno));
  } else if (argv[0][0] && (why = unreachable_by_nobody(argv[0])) != NULL) {
    cleanup_free char *ip = xasprintf("%s[0]", path);
    policy_error_add(&c->errs, json_array_get(v, 0), ip, "%s: %s", argv[0], why);
  }
  return argv;
}

static void parse_backend(struct policy_ctx *c, struct tool *t, const json_t *v, const char *path) {
  if (!json_is(v, JSON_OBJECT)) {
    policy_error_add(&c->errs, v, path,
                     "must be an object such as {\"type\": \"builtin\", \"name\": \"echo\"} or {\"type\": \"exec\", \"argv\": [...]}");
    return;
  }
  const json_t *type = json_object_get(v, "type");
  const char *ts = json_string_value(type);
  cleanup_free char *tp = xasprintf("%s.type", path);
  if (type == NULL) {
    policy_error_add(&c->errs, v, tp, "missing: one of builtin, exec, socket, mcp, http");
    return;
  }
  if (ts && strcmp(ts, "builtin") == 0) {
    static const char *const keys[] = {"type", "name", NULL};
    check_keys(c, v, path, keys);
    t->backend.type = BACKEND_BUILTIN;
    const json_t *name = json_object_get(v, "name");
    cleanup_free char *np = xasprintf("%s.name", path);
    const char *ns = json_string_value(name);
    if (name == NULL)
      policy_error_add(&c->errs, v, np, "missing: the builtin's name (\"echo\")");
    else if (ns == NULL || strcmp(ns, "echo") != 0)
      policy_error_add(&c->errs, name, np, "unknown builtin%s%s%s; the builtins are: echo",
                       ns ? " \"" : "", ns ? ns : "", ns ? "\"" : "");
    else
      t->backend.name = xstrdup(ns);
  } else if (ts && strcmp(ts, "exec") == 0) {
    static const char *const keys[] = {"type", "argv", NULL};
    check_keys(c, v, path, keys);
    t->backend.type = BACKEND_EXEC;
    const json_t *argv = json_object_get(v, "argv");
    cleanup_free char *ap = xasprintf("%s.argv", path);
    if (argv == NULL)
      policy_error_add(&c->errs, v, ap, "missing: the program and its arguments, e.g. [\"tools/refund.py\"]");
    else
      t->backend.argv = parse_argv(c, argv, ap, false);
  } else if (ts && strcmp(ts, "socket") == 0) {
    static const char *const keys[] = {"type", "path", NULL};
    check_keys(c, v, path, keys);
    t->backend.type = BACKEND_SOCKET;
    const json_t *sp = json_object_get(v, "path");
    cleanup_free char *pp = xasprintf("%s.path", path);
    const char *s = json_string_value(sp);
    if (sp == NULL)
      policy_error_add(&c->errs, v, pp, "missing: the absolute path of the host Unix socket");
    else if (s == NULL || s[0] != '/' || strlen(s) >= 108)
      policy_error_add(&c->errs, sp, pp, "must be an absolute socket path shorter than 108 bytes");
    else
      t->backend.path = xstrdup(s);
  } else if (ts && strcmp(ts, "mcp") == 0) {
    static const char *const keys[] = {"type", "server", "tool", NULL};
    check_keys(c, v, path, keys);
    t->backend.type = BACKEND_MCP;
    const json_t *srv = json_object_get(v, "server");
    cleanup_free char *sp = xasprintf("%s.server", path);
    if (srv == NULL || !json_is(srv, JSON_STRING))
      policy_error_add(&c->errs, srv ? srv : v, sp, "%s: name an entry of the top-level \"mcp_servers\"",
                       srv ? "must be a string" : "missing");
    else
      t->backend.server = xstrdup(json_string_value(srv));
    const json_t *rt = json_object_get(v, "tool");
    if (rt != NULL && !json_is(rt, JSON_STRING)) {
      cleanup_free char *rp = xasprintf("%s.tool", path);
      policy_error_add(&c->errs, rt, rp, "must be the server's name for the tool (a string)");
    }
    t->backend.remote = xstrdup(rt && json_is(rt, JSON_STRING) ? json_string_value(rt) : t->name);
  } else if (ts && strcmp(ts, "http") == 0) {
    t->backend.type = BACKEND_HTTP;
    t->backend.http = egress_config_parse(v, path, &c->errs);
  } else {
    policy_error_add(&c->errs, type, tp, "%s%s%s is not a backend type; use builtin, exec, socket, mcp or http",
                     ts ? "\"" : "", ts ? ts : "a non-string", ts ? "\"" : "");
  }
}

struct tool *policy_parse_tool(struct policy_ctx *c, const char *name, const json_t *v) {
  cleanup_free char *path = xasprintf("tools.%s", name);
  if (!tool_name_is_valid(name))
    policy_error_add(&c->errs, v, path,
                     "invalid tool name \"%s\": use letters, digits, _ . - (at most 64, starting with a letter or _)",
                     name);
  if (!json_is(v, JSON_OBJECT)) {
    policy_error_add(&c->errs, v, path, "a tool must be an object with backend and rules");
    return NULL;
  }
  static const char *const keys[] = {"backend", "description", "args", "timeout", "cost",
                                     "irreversible", "max_calls", "rules", "source_sha256", NULL};
  check_keys(c, v, path, keys);
  struct tool *t = xcalloc(1, sizeof *t);
  t->name = xstrdup(name);
  t->timeout_ms = DEFAULT_TOOL_TIMEOUT_MS;
  t->max_calls = -1;
  const json_t *f;
  cleanup_free char *bp = xasprintf("%s.backend", path);
  if ((f = json_object_get(v, "backend")) != NULL)
    parse_backend(c, t, f, bp);
  else
    policy_error_add(&c->errs, v, bp, "missing: how the tool runs, e.g. {\"type\": \"exec\", \"argv\": [\"tools/x.py\"]}");
  if ((f = json_object_get(v, "description")) != NULL) {
    cleanup_free char *p = xasprintf("%s.description", path);
    if (!json_is(f, JSON_STRING))
      policy_error_add(&c->errs, f, p, "must be a string");
    else
      t->description = xstrdup(json_string_value(f));
  }
  if (t->backend.type == BACKEND_HTTP) {
    /* The arguments of an http tool are the request; the rules see its
     * parts too (docs/egress.md). */
    cleanup_free char *p = xasprintf("%s.args", path);
    if ((f = json_object_get(v, "args")) != NULL)
      policy_error_add(&c->errs, f, p, "an http tool's arguments are fixed (method, url, headers, body or body_base64): remove \"args\" and write rules on them");
    t->args_source = egress_args_schema();
    t->args = schema_compile(t->args_source, p, false, &c->errs);
  } else if ((f = json_object_get(v, "args")) != NULL) {
    cleanup_free char *p = xasprintf("%s.args", path);
    const json_t *type = json_object_get(f, "type");
    if (json_is(f, JSON_OBJECT) && type != NULL &&
        !(json_is(type, JSON_STRING) && strcmp(json_string_value(type), "object") == 0)) {
      cleanup_free char *typ = xasprintf("%s.type", p);
      policy_error_add(&c->errs, type, typ, "arguments are always an object: use \"object\"");
    }
    t->args = schema_compile(f, p, false, &c->errs);
    t->args_source = json_copy(f);
  }
  if ((f = json_object_get(v, "timeout")) != NULL) {
    cleanup_free char *p = xasprintf("%s.timeout", path);
    get_seconds(c, f, p, &t->timeout_ms);
  }
  if ((f = json_object_get(v, "cost")) != NULL) {
    cleanup_free char *p = xasprintf("%s.cost", path);
    if (!json_is(f, JSON_NUMBER) || f->u.number.value < 0 || !isfinite(f->u.number.value))
      policy_error_add(&c->errs, f, p, "must be a number, 0 or more");
    else
      t->cost = f->u.number.value;
  }
  if ((f = json_object_get(v, "irreversible")) != NULL) {
    cleanup_free char *p = xasprintf("%s.irreversible", path);
    if (!json_is(f, JSON_BOOL))
      policy_error_add(&c->errs, f, p, "must be true or false");
    else
      t->irreversible = f->u.boolean;
  }
  if ((f = json_object_get(v, "max_calls")) != NULL) {
    cleanup_free char *p = xasprintf("%s.max_calls", path);
    get_count(c, f, p, &t->max_calls);
  }
  if ((f = json_object_get(v, "source_sha256")) != NULL) {
    cleanup_free char *p = xasprintf("%s.source_sha256", path);
    const char *h = json_is(f, JSON_STRING) ? json_string_value(f) : NULL;
    if (h == NULL || !digest_hex_is_valid(h, strlen(h)))
      policy_error_add(&c->errs, f, p, "must be the SHA-256 of the tool's source: 64 lowercase hex digits");
    else
      t->source_sha256 = xstrdup(h);
  }
  cleanup_free char *rp = xasprintf("%s.rules", path);
  if ((f = json_object_get(v, "rules")) != NULL)
    rules_parse(f, rp, &t->rules, &t->nrules, &c->errs);
  else
    policy_error_add(&c->errs, v, rp,
                     "missing: without rules every call is denied; add e.g. [{\"effect\": \"allow\"}]");
  if (t->description == NULL)
    t->description = xstrdup("");
  return t;
}

static void parse_budgets(struct policy_ctx *c, const json_t *v) {
  if (!json_is(v, JSON_OBJECT)) {
    policy_error_add(&c->errs, v, "budgets", "must be an object, e.g. {\"max_tool_calls\": 50}");
    return;
  }
  static const char *const keys[] = {"max_tool_calls", "max_cost", "max_irreversible",
                                     "repeat_limit", "max_custom_tools", NULL};
  check_keys(c, v, "budgets", keys);
  struct budgets *b = &c->p->budgets;
  const json_t *f;
  if ((f = json_object_get(v, "max_tool_calls")) != NULL)
    get_count(c, f, "budgets.max_tool_calls", &b->max_tool_calls);
  if ((f = json_object_get(v, "max_cost")) != NULL) {
    if (!json_is(f, JSON_NUMBER) || f->u.number.value < 0 || !isfinite(f->u.number.value))
      policy_error_add(&c->errs, f, "budgets.max_cost", "must be a number, 0 or more");
    else
      b->max_cost = f->u.number.value;
  }
  if ((f = json_object_get(v, "max_irreversible")) != NULL)
    get_count(c, f, "budgets.max_irreversible", &b->max_irreversible);
  if ((f = json_object_get(v, "max_custom_tools")) != NULL &&
      get_count(c, f, "budgets.max_custom_tools", &b->max_custom_tools) &&
      b->max_custom_tools >= 0 && policy_custom_tools(c->p) > (size_t)b->max_custom_tools)
    policy_error_add(&c->errs, f, "budgets.max_custom_tools",
                     "%zu tools are agent-written (have a source_sha256), more than %lld: remove "
                     "some or raise the limit",
                     policy_custom_tools(c->p), b->max_custom_tools);
  if ((f = json_object_get(v, "repeat_limit")) != NULL) {
    if (get_count(c, f, "budgets.repeat_limit", &b->repeat_limit) && b->repeat_limit == 0) {
      policy_error_add(&c->errs, f, "budgets.repeat_limit",
                       "0 would deny every call; use 1 or more (or leave it out)");
    }
  }
}

static void parse_approval(struct policy_ctx *c, const json_t *v) {
  if (!json_is(v, JSON_OBJECT)) {
    policy_error_add(&c->errs, v, "approval", "must be an object, e.g. {\"timeout\": 60}");
    return;
  }
  static const char *const keys[] = {"hook", "timeout", "max_pending", NULL};
  check_keys(c, v, "approval", keys);
  const json_t *f;
  if ((f = json_object_get(v, "hook")) != NULL)
    c->p->approval_hook = parse_argv(c, f, "approval.hook", true);
  if ((f = json_object_get(v, "timeout")) != NULL)
    get_seconds(c, f, "approval.timeout", &c->p->approval_timeout_ms);
  if ((f = json_object_get(v, "max_pending")) != NULL) {
    if (get_count(c, f, "approval.max_pending", &c->p->max_pending) && c->p->max_pending == 0)
      policy_error_add(&c->errs, f, "approval.max_pending",
                       "must be at least 1 (to refuse all approvals, use deny rules)");
  }
}

static const char *const anomaly_kinds[ANOMALY_KINDS] = {
    [ANOMALY_DENIALS_IN_A_ROW] = "denials_in_a_row",
    [ANOMALY_CALLS_PER_SECOND] = "calls_per_second",
    [ANOMALY_FAILURES_IN_A_ROW] = "failures_in_a_row",
    [ANOMALY_RESULT_BYTES] = "result_bytes",
    [ANOMALY_DENIALS_IN_WINDOW] = "denials_in_window",
};
static const char *const anomaly_actions[] = {
    [ANOMALY_STOP] = "stop", [ANOMALY_PARK] = "park", [ANOMALY_LOG] = "log"};

const char *anomaly_kind_name(enum anomaly_kind k) { return anomaly_kinds[k]; }
const char *anomaly_action_name(enum anomaly_action a) { return anomaly_actions[a]; }

static bool get_action(struct policy_ctx *c, const json_t *v, const char *path, enum anomaly_action *out) {
  const char *s = json_string_value(v);
  for (size_t i = 0; s && i < sizeof anomaly_actions / sizeof *anomaly_actions; i++)
    if (strcmp(s, anomaly_actions[i]) == 0) {
      *out = (enum anomaly_action)i;
      return true;
    }
  policy_error_add(&c->errs, v, path,
                   "must be \"stop\" (refuse every later call and stop the container), \"park\" "
                   "(later calls wait for approval) or \"log\" (record it only)");
  return false;
}

/* One limit: a whole number, or {"limit": N, "action": A}; shared is the
 * action the limits without their own take. */
static void parse_anomaly_limit(struct policy_ctx *c, enum anomaly_kind k, const json_t *v,
                                enum anomaly_action shared) {
  cleanup_free char *path = xasprintf("anomalies.%s", anomaly_kinds[k]);
  struct anomaly_limit *l = &c->p->anomalies.of[k];
  l->action = shared;
  const json_t *n = v;
  if (json_is(v, JSON_OBJECT)) {
    static const char *const keys[] = {"limit", "action", NULL};
    check_keys(c, v, path, keys);
    const json_t *a = json_object_get(v, "action");
    cleanup_free char *ap = xasprintf("%s.action", path);
    if (a != NULL)
      get_action(c, a, ap, &l->action);
    n = json_object_get(v, "limit");
    if (n == NULL) {
      cleanup_free char *lp = xasprintf("%s.limit", path);
      policy_error_add(&c->errs, v, lp, "missing: add \"limit\": N (a whole number, 1 or more)");
      return;
    }
  }
  long long max = k == ANOMALY_CALLS_PER_SECOND ? ANOMALY_MAX_CALLS_PER_SECOND : LLONG_MAX;
  long long got;
  if (!json_integer_value(n, &got) || got < 1 || got > max) {
    if (k == ANOMALY_CALLS_PER_SECOND)
      policy_error_add(&c->errs, n, path,
                       "must be a whole number from 1 to %lld (or {\"limit\": N, \"action\": "
                       "\"stop\"|\"park\"|\"log\"})",
                       max);
    else
      policy_error_add(&c->errs, n, path,
                       "must be a whole number, 1 or more (or {\"limit\": N, \"action\": "
                       "\"stop\"|\"park\"|\"log\"})");
    return;
  }
  l->limit = got;
}

/* denials_in_window: {"count": C, "calls": N} (and an "action"): C
 * denials among the last N calls, 1 <= C <= N <= ANOMALY_MAX_WINDOW_CALLS. */
static void parse_denial_window(struct policy_ctx *c, const json_t *v, enum anomaly_action shared) {
  static const char *const path = "anomalies.denials_in_window";
  struct anomaly_limit *l = &c->p->anomalies.of[ANOMALY_DENIALS_IN_WINDOW];
  l->action = shared;
  if (!json_is(v, JSON_OBJECT)) {
    policy_error_add(&c->errs, v, path,
                     "must be an object: {\"count\": C, \"calls\": N} (C denials among the last "
                     "N calls), optionally with \"action\"");
    return;
  }
  static const char *const keys[] = {"count", "calls", "action", NULL};
  check_keys(c, v, path, keys);
  const json_t *a = json_object_get(v, "action");
  if (a != NULL)
    get_action(c, a, "anomalies.denials_in_window.action", &l->action);
  const json_t *nv = json_object_get(v, "calls"), *cv = json_object_get(v, "count");
  long long calls = 0, count = 0;
  if (nv == NULL)
    policy_error_add(&c->errs, v, "anomalies.denials_in_window.calls",
                     "missing: add \"calls\": N, how many of the latest calls the window holds "
                     "(1 to %d)", ANOMALY_MAX_WINDOW_CALLS);
  else if (!json_integer_value(nv, &calls) || calls < 1 || calls > ANOMALY_MAX_WINDOW_CALLS)
    policy_error_add(&c->errs, nv, "anomalies.denials_in_window.calls",
                     "must be a whole number from 1 to %d", ANOMALY_MAX_WINDOW_CALLS);
  else
    l->calls = calls;
  if (cv == NULL)
    policy_error_add(&c->errs, v, "anomalies.denials_in_window.count",
                     "missing: add \"count\": C, how many denials within the window flag it");
  else if (!json_integer_value(cv, &count) || count < 1)
    policy_error_add(&c->errs, cv, "anomalies.denials_in_window.count",
                     "must be a whole number, 1 or more");
  else if (l->calls > 0 && count > l->calls)
    policy_error_add(&c->errs, cv, "anomalies.denials_in_window.count",
                     "%lld denials cannot fit among %lld calls: count must be at most calls", count,
                     l->calls);
  else if (l->calls > 0)
    l->limit = count;
  if (l->limit == 0)
    l->calls = 0; /* not set, whatever was valid of it */
}

static void parse_anomalies(struct policy_ctx *c, const json_t *v) {
  if (!json_is(v, JSON_OBJECT)) {
    policy_error_add(&c->errs, v, "anomalies",
                     "must be an object, e.g. {\"denials_in_a_row\": 3, \"action\": \"stop\"}");
    return;
  }
  static const char *const keys[] = {"denials_in_a_row", "calls_per_second", "failures_in_a_row",
                                     "result_bytes", "denials_in_window", "action",
                                     "alert_hook", "stop_grace_ms", NULL};
  check_keys(c, v, "anomalies", keys);
  enum anomaly_action shared = ANOMALY_STOP; /* fail closed when none is named */
  const json_t *f;
  if ((f = json_object_get(v, "action")) != NULL)
    get_action(c, f, "anomalies.action", &shared);
  bool any = false;
  for (int k = 0; k < ANOMALY_KINDS; k++)
    if ((f = json_object_get(v, anomaly_kinds[k])) != NULL) {
      if (k == ANOMALY_DENIALS_IN_WINDOW)
        parse_denial_window(c, f, shared);
      else
        parse_anomaly_limit(c, (enum anomaly_kind)k, f, shared);
      any = true;
    }
  if (!any)
    policy_error_add(&c->errs, v, "anomalies",
                     "sets no limit: add denials_in_a_row, denials_in_window, calls_per_second, "
                     "failures_in_a_row or result_bytes (or leave \"anomalies\" out)");
  if ((f = json_object_get(v, "alert_hook")) != NULL)
    c->p->anomalies.alert_hook = parse_argv(c, f, "anomalies.alert_hook", true);
  long long grace;
  if ((f = json_object_get(v, "stop_grace_ms")) != NULL) {
    /* Bounded: the program goes on for this long after its run was
     * stopped (its calls refused), and a tenant's policy may not make
     * that open-ended (the ceiling bounds it further). */
    if (!json_integer_value(f, &grace) || grace < 0 || grace > ANOMALY_MAX_STOP_GRACE_MS)
      policy_error_add(&c->errs, f, "anomalies.stop_grace_ms",
                       "must be a whole number of milliseconds from 0 to %d (how long a stopped "
                       "program may finish before it is killed; default %d)",
                       ANOMALY_MAX_STOP_GRACE_MS, ANOMALY_DEFAULT_STOP_GRACE_MS);
    else
      c->p->anomalies.stop_grace_ms = grace;
  }
}

static void parse_mcp(struct policy_ctx *c, const json_t *v) {
  if (!json_is(v, JSON_OBJECT)) {
    policy_error_add(&c->errs, v, "mcp_servers", "must be an object mapping server names to {\"argv\": [...]}");
    return;
  }
  c->p->mcp = xcalloc(v->u.object.len, sizeof *c->p->mcp);
  for (size_t i = 0; i < v->u.object.len; i++) {
    const char *name = v->u.object.keys[i];
    const json_t *s = v->u.object.values[i];
    cleanup_free char *path = xasprintf("mcp_servers.%s", name);
    if (!json_is(s, JSON_OBJECT)) {
      policy_error_add(&c->errs, s, path, "must be an object: {\"argv\": [...], \"timeout\": 10}");
      continue;
    }
    static const char *const keys[] = {"argv", "timeout", NULL};
    check_keys(c, s, path, keys);
    struct mcp_server_config *m = &c->p->mcp[c->p->nmcp++];
    m->name = xstrdup(name);
    m->timeout_ms = 10000;
    const json_t *f;
    cleanup_free char *ap = xasprintf("%s.argv", path);
    if ((f = json_object_get(s, "argv")) != NULL)
      m->argv = parse_argv(c, f, ap, false);
    else
      policy_error_add(&c->errs, s, ap, "missing: the server's program and arguments");
    cleanup_free char *tp = xasprintf("%s.timeout", path);
    if ((f = json_object_get(s, "timeout")) != NULL)
      get_seconds(c, f, tp, &m->timeout_ms);
  }
}

int policy_parse(const char *path, const char *buf, size_t len, struct policy **out,
                 tg_error **err) {
  *out = NULL;
  struct json_parse_options opts = {.max_depth = 64, .track_positions = true};
  cleanup_error tg_error *perr = NULL;
  cleanup_json json_t *root = json_parse(buf, len, &opts, &perr);
  if (root == NULL) {
    /* Same shape as every other problem: FILE:LINE:COL: where: what. */
    unsigned line = 0, col = 0;
    const char *at = strstr(perr->msg, "line ");
    const char *what = at ? strstr(at, ": ") : NULL;
    if (at && what && sscanf(at, "line %u, column %u", &line, &col) == 2)
      return tg_error_set(err, 0, "%s:%u:%u: (JSON syntax): %s; fix the JSON syntax", path, line,
                          col, what + 2);
    return tg_error_set(err, 0, "%s: (JSON syntax): %s; fix the JSON syntax", path, perr->msg);
  }
  struct policy_ctx c = {.p = xcalloc(1, sizeof *c.p), .errs = {.file = path}};
  struct policy *p = c.p;
  p->path = xstrdup(path);
  const char *slash = strrchr(path, '/');
  p->dir = slash == NULL ? xstrdup(".") : slash == path ? xstrdup("/") : xstrndup(path, slash - path);
  p->budgets = (struct budgets){.max_tool_calls = 50, .max_cost = -1, .max_irreversible = -1,
                                .repeat_limit = -1, .max_custom_tools = -1};
  p->max_pending = 10;
  p->anomalies.stop_grace_ms = ANOMALY_DEFAULT_STOP_GRACE_MS;
  if (!json_is(root, JSON_OBJECT)) {
    policy_error_add(&c.errs, root, "", "a policy must be a JSON object with \"version\": 1 and \"tools\"");
  } else {
    static const char *const keys[] = {"version", "description", "tools", "budgets",
                                       "approval", "mcp_servers", "anomalies", NULL};
    check_keys(&c, root, "", keys);
    const json_t *f = json_object_get(root, "version");
    long long version;
    if (f == NULL)
      policy_error_add(&c.errs, root, "version", "missing: add \"version\": 1");
    else if (!json_integer_value(f, &version) || version != 1)
      policy_error_add(&c.errs, f, "version", "unsupported version; this tollgate reads \"version\": 1");
    if ((f = json_object_get(root, "description")) != NULL && !json_is(f, JSON_STRING))
      policy_error_add(&c.errs, f, "description", "must be a string");
    if ((f = json_object_get(root, "mcp_servers")) != NULL)
      parse_mcp(&c, f);
    f = json_object_get(root, "tools");
    if (f == NULL) {
      policy_error_add(&c.errs, root, "tools", "missing: add \"tools\": {} (an empty policy denies everything)");
    } else if (!json_is(f, JSON_OBJECT)) {
      policy_error_add(&c.errs, f, "tools", "must be an object mapping tool names to tools");
    } else {
      p->tools = xcalloc(f->u.object.len, sizeof *p->tools);
      for (size_t i = 0; i < f->u.object.len; i++) {
        struct tool *t = policy_parse_tool(&c, f->u.object.keys[i], f->u.object.values[i]);
        if (t == NULL)
          continue;
        t->index = p->ntools;
        p->tools[p->ntools++] = t;
        if (t->backend.type == BACKEND_MCP && t->backend.server) {
          bool known = false;
          for (size_t j = 0; j < p->nmcp && !known; j++)
            known = strcmp(p->mcp[j].name, t->backend.server) == 0;
          if (!known) {
            cleanup_free char *sp = xasprintf("tools.%s.backend.server", t->name);
            policy_error_add(&c.errs, json_get_path(f->u.object.values[i], "backend.server"), sp,
                             "no MCP server named \"%s\"; define it under \"mcp_servers\"",
                             t->backend.server);
          }
        }
      }
    }
    if ((f = json_object_get(root, "budgets")) != NULL)
      parse_budgets(&c, f);
    if ((f = json_object_get(root, "approval")) != NULL)
      parse_approval(&c, f);
    if ((f = json_object_get(root, "anomalies")) != NULL)
      parse_anomalies(&c, f);
  }
  if (c.errs.len > 0) {
    cleanup_free char *all = policy_errors_join(&c.errs);
    size_t n = c.errs.len;
    policy_errors_free(&c.errs);
    policy_free(p);
    return tg_error_set(err, 0, "%s\n%zu problem%s in %s; fix %s and run `tollgate policy check %s`",
                        all, n, n == 1 ? "" : "s", path, n == 1 ? "it" : "them", path);
  }
  build_table(p);
  *out = p;
  return 0;
}

size_t policy_custom_tools(const struct policy *p) {
  size_t n = 0;
  for (size_t i = 0; i < p->ntools; i++)
    n += p->tools[i]->source_sha256 != NULL;
  return n;
}

void policy_insert_tool(struct policy *p, struct tool *t) {
  p->tools = xrealloc(p->tools, (p->ntools + 1) * sizeof *p->tools);
  t->index = p->ntools;
  p->tools[p->ntools++] = t;
  free(p->table);
  build_table(p);
}

void policy_tool_free(struct tool *t) { tool_free(t); }

int policy_load(const char *path, struct policy **out, tg_error **err) {
  cleanup_free char *buf = NULL;
  size_t len = 0;
  if (read_file(path, POLICY_MAX_BYTES, &buf, &len, err) < 0)
    return tg_error_wrap(err, "read policy %s", path);
  return policy_parse(path, buf, len, out, err);
}
