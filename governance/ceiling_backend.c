/* Policy ceilings: the backends (ceiling.h).  The rules say whether a call
 * may be made; the backend says what the host then does for it: which
 * program it runs, which socket it writes to, which MCP server it starts,
 * which origins it reaches with which credentials.  The policy's author is
 * the untrusted tenant, so a policy that kept the ceiling's tool name and
 * rules but chose its own backend would run a program of its choosing on
 * the host (as the tools' uid), or send a host secret to an origin of its
 * choosing.  So a tool's backend is the ceiling's:
 *
 * - builtin, exec, socket and mcp exactly (the same program and
 *   arguments, socket, server and remote name): what a program does with
 *   other arguments cannot be compared, so nothing but equality is
 *   "within";
 * - http within the ceiling's: every (allow entry, method) of the policy
 *   inside one entry of the ceiling, the same injected headers, bounds at
 *   most the ceiling's, redact_query kept.
 *
 * And every MCP server the policy lists is the ceiling's (the gate starts
 * them all, referenced or not). */
#include "governance/ceiling.h"
#include "governance/ceiling_cases.h"
#include "governance/egress_config.h"
#include "governance/policy.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/util.h"

bool ceiling_same_argv(char **a, char **b) {
  size_t i = 0;
  for (; a && b && a[i] && b[i]; i++)
    if (strcmp(a[i], b[i]) != 0)
      return false;
  return (a == NULL || a[i] == NULL) && (b == NULL || b[i] == NULL);
}

/* argv as a JSON array (owned): the way a policy writes it, and every
 * byte visible (a space inside an argument, an empty one). */
static char *argv_text(char **argv) {
  struct json_buf b = {0};
  json_buf_lit(&b, "[");
  for (size_t i = 0; argv && argv[i]; i++) {
    if (i)
      json_buf_lit(&b, ",");
    json_buf_cstr(&b, argv[i]);
  }
  json_buf_lit(&b, "]");
  return b.s;
}

static char *quoted(const char *s) {
  struct json_buf b = {0};
  json_buf_cstr(&b, s);
  return b.s;
}

static const char *type_name(enum backend_type t) {
  switch (t) {
  case BACKEND_BUILTIN: return "builtin";
  case BACKEND_EXEC: return "exec";
  case BACKEND_SOCKET: return "socket";
  case BACKEND_MCP: return "mcp";
  case BACKEND_HTTP: break;
  }
  return "http";
}

/* The backend in a few words: its type and what it names. */
static char *backend_text(const struct backend *b) {
  cleanup_free char *what = NULL;
  switch (b->type) {
  case BACKEND_BUILTIN: what = quoted(b->name); break;
  case BACKEND_EXEC: what = argv_text(b->argv); break;
  case BACKEND_SOCKET: what = quoted(b->path); break;
  case BACKEND_MCP: what = xasprintf("server \"%s\"", b->server ? b->server : ""); break;
  case BACKEND_HTTP: return xstrdup("http");
  }
  return xasprintf("%s %s", type_name(b->type), what);
}

/* One string field that must be equal. */
static void same_string(struct ceiling_result *r, const char *tool, const char *field,
                        const char *p, const char *c) {
  if (strcmp(p ? p : "", c ? c : "") == 0)
    return;
  cleanup_free char *pq = quoted(p), *cq = quoted(c);
  ceiling_add_witness(r, tool, NULL, EFFECT_DENY, EFFECT_DENY,
                      "tools.%s.backend.%s: %s in the policy, %s in the ceiling (a tool's "
                      "backend is the ceiling's, exactly)",
                      tool, field, pq, cq);
}

/* "GET,POST https://api.example.com/v1/" (owned). */
static char *entry_text(const struct egress_allow *a) {
  struct json_buf b = {0};
  for (char **m = a->methods; m && *m; m++) {
    if (b.len)
      json_buf_lit(&b, ",");
    json_buf_raw(&b, *m, strlen(*m));
  }
  cleanup_free char *url = egress_url_format(&a->url, false);
  json_buf_lit(&b, " ");
  json_buf_raw(&b, url, strlen(url));
  return b.s;
}

static bool has_method(const struct egress_allow *a, const char *m) {
  for (char **x = a->methods; x && *x; x++)
    if (strcmp(*x, m) == 0)
      return true;
  return false;
}

/* Each method of each policy entry must sit, with the entry's whole URL
 * set, inside one ceiling entry.  That is exact, not a sufficient test:
 * the entry's own prefix is one of the URLs it admits, and a ceiling
 * entry that admits it admits every continuation of it too
 * (egress_url_within); a wildcard policy entry needs a wildcard. */
static void allow_list(struct ceiling_result *r, const char *tool, const struct egress_config *p,
                       const struct egress_config *c) {
  for (size_t i = 0; i < p->nallow; i++) {
    struct json_buf out = {0};
    for (char **m = p->allow[i].methods; *m; m++) {
      bool within = false;
      for (size_t j = 0; j < c->nallow && !within; j++)
        within = has_method(&c->allow[j], *m) && egress_url_within(&p->allow[i].url, &c->allow[j].url);
      if (!within) {
        if (out.len)
          json_buf_lit(&out, ",");
        json_buf_raw(&out, *m, strlen(*m));
      }
    }
    if (out.len == 0)
      continue;
    cleanup_free char *url = egress_url_format(&p->allow[i].url, false);
    struct json_buf ceil = {0};
    for (size_t j = 0; j < c->nallow; j++) {
      cleanup_free char *e = entry_text(&c->allow[j]);
      if (ceil.len)
        json_buf_lit(&ceil, "; ");
      json_buf_raw(&ceil, e, strlen(e));
    }
    ceiling_add_witness(r, tool, NULL, EFFECT_DENY, EFFECT_DENY,
                        "tools.%s.backend.allow[%zu]: %s %s in the policy, within no allow entry "
                        "of the ceiling (%s)",
                        tool, i, out.s, url, ceil.s ? ceil.s : "none");
    free(out.s);
    free(ceil.s);
  }
}

static const struct egress_inject *find_inject(const struct egress_config *c, const char *name) {
  for (size_t i = 0; i < c->ninject; i++)
    if (strcasecmp(c->inject[i].name, name) == 0)
      return &c->inject[i];
  return NULL;
}

/* The injected headers are the ceiling's, exactly.  Another template
 * would read another host secret (${env:...}, ${file:...}) and send it to
 * an allowed origin; one fewer would let the program send that header
 * itself (an injected name is refused in its request: a header the host
 * fixes, e.g. a tenant's identity, the program cannot choose).  The
 * ceiling's template is never printed: it may hold literal text that is
 * itself a credential. */
static void inject_headers(struct ceiling_result *r, const char *tool,
                           const struct egress_config *p, const struct egress_config *c) {
  for (size_t i = 0; i < p->ninject; i++) {
    const struct egress_inject *ci = find_inject(c, p->inject[i].name);
    if (ci && strcmp(ci->value_template, p->inject[i].value_template) == 0)
      continue;
    cleanup_free char *pv = quoted(p->inject[i].value_template);
    ceiling_add_witness(r, tool, NULL, EFFECT_DENY, EFFECT_DENY,
                        "tools.%s.backend.inject_headers.%s: %s in the policy, %s in the ceiling "
                        "(the host injects the ceiling's headers only, exactly)",
                        tool, p->inject[i].name, pv, ci ? "another value" : "not");
  }
  for (size_t i = 0; i < c->ninject; i++)
    if (find_inject(p, c->inject[i].name) == NULL)
      ceiling_add_witness(r, tool, NULL, EFFECT_DENY, EFFECT_DENY,
                          "tools.%s.backend.inject_headers.%s: not in the policy, injected by the "
                          "ceiling (without it the program could send that header itself)",
                          tool, c->inject[i].name);
}

static void http(struct ceiling_result *r, const char *tool, const struct egress_config *p,
                 const struct egress_config *c) {
  allow_list(r, tool, p, c);
  inject_headers(r, tool, p, c);
  static const char *const fields[] = {"max_request_bytes", "max_response_bytes", "max_redirects"};
  const long long pv[] = {p->max_request_bytes, p->max_response_bytes, p->max_redirects};
  const long long cv[] = {c->max_request_bytes, c->max_response_bytes, c->max_redirects};
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
    cleanup_free char *f = xasprintf("tools.%s.backend.%s", tool, fields[i]);
    ceiling_limit(r, tool, f, pv[i], cv[i]);
  }
  if (c->redact_query && !p->redact_query)
    ceiling_add_witness(r, tool, NULL, EFFECT_DENY, EFFECT_DENY,
                        "tools.%s.backend.redact_query: false in the policy, true in the ceiling "
                        "(the audit log and the approvers would see the query)",
                        tool);
}

void ceiling_check_backend(const struct tool *t, const struct tool *c, struct ceiling_result *r) {
  const struct backend *pb = &t->backend, *cb = &c->backend;
  if (pb->type != cb->type) {
    cleanup_free char *pt = backend_text(pb), *ct = backend_text(cb);
    ceiling_add_witness(r, t->name, NULL, EFFECT_DENY, EFFECT_DENY,
                        "tools.%s.backend: %s in the policy, %s in the ceiling (a tool's backend "
                        "is the ceiling's)",
                        t->name, pt, ct);
    return;
  }
  switch (pb->type) {
  case BACKEND_BUILTIN: same_string(r, t->name, "name", pb->name, cb->name); break;
  case BACKEND_SOCKET: same_string(r, t->name, "path", pb->path, cb->path); break;
  case BACKEND_MCP:
    /* The server's own argv and timeout: ceiling_check_servers. */
    same_string(r, t->name, "server", pb->server, cb->server);
    same_string(r, t->name, "tool", pb->remote, cb->remote);
    break;
  case BACKEND_EXEC:
    if (!ceiling_same_argv(pb->argv, cb->argv)) {
      cleanup_free char *pa = argv_text(pb->argv), *ca = argv_text(cb->argv);
      ceiling_add_witness(r, t->name, NULL, EFFECT_DENY, EFFECT_DENY,
                          "tools.%s.backend.argv: %s in the policy, %s in the ceiling (a tool's "
                          "program and arguments are the ceiling's, exactly, after relative "
                          "paths are resolved)",
                          t->name, pa, ca);
    }
    break;
  case BACKEND_HTTP:
    if (pb->http && cb->http)
      http(r, t->name, pb->http, cb->http);
    break;
  }
}

static const struct mcp_server_config *find_server(const struct policy *c, const char *name) {
  for (size_t i = 0; i < c->nmcp; i++)
    if (strcmp(c->mcp[i].name, name) == 0)
      return &c->mcp[i];
  return NULL;
}

void ceiling_check_servers(const struct policy *p, const struct policy *c,
                           struct ceiling_result *r) {
  for (size_t i = 0; i < p->nmcp; i++) {
    const struct mcp_server_config *s = &p->mcp[i], *cs = find_server(c, s->name);
    cleanup_free char *pa = argv_text(s->argv);
    if (cs == NULL) {
      ceiling_add_witness(r, NULL, NULL, EFFECT_DENY, EFFECT_DENY,
                          "mcp_servers.%s: %s in the policy, not in the ceiling (the gate starts "
                          "every server a policy lists, on the host)",
                          s->name, pa);
      continue;
    }
    if (!ceiling_same_argv(s->argv, cs->argv)) {
      cleanup_free char *ca = argv_text(cs->argv);
      ceiling_add_witness(r, NULL, NULL, EFFECT_DENY, EFFECT_DENY,
                          "mcp_servers.%s.argv: %s in the policy, %s in the ceiling (a server's "
                          "program and arguments are the ceiling's, exactly)",
                          s->name, pa, ca);
    }
    /* The startup timeout is a bound: a shorter one only fails sooner. */
    if (s->timeout_ms > cs->timeout_ms)
      ceiling_add_witness(r, NULL, NULL, EFFECT_DENY, EFFECT_DENY,
                          "mcp_servers.%s.timeout: %g s in the policy, at most %g s in the ceiling",
                          s->name, s->timeout_ms / 1000.0, cs->timeout_ms / 1000.0);
  }
}
