/* Policy ceilings and backends (governance/ceiling_backend.c): a tenant
 * policy that keeps a ceiling's tool name and rules but swaps the program,
 * the socket, the MCP server, widens an http allow list, injects another
 * host secret, raises a bound or drops redact_query is not within; the
 * same backend is.  A property test over random http allow lists checks
 * the allow-list containment against egress_allow_match itself: within
 * means every request the policy's list admits, the ceiling's admits
 * (with the same address rule); a witness names an entry whose own URL
 * the ceiling refuses. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "governance/ceiling.h"
#include "governance/egress_check.h"
#include "governance/egress_config.h"
#include "governance/policy.h"
#include "base/util.h"
#include "tests/unit/rng_util.h"

static struct policy *parse_at(const char *path, const char *text) {
  struct policy *p = NULL;
  cleanup_error tg_error *err = NULL;
  int r = policy_parse(path, text, strlen(text), &p, &err);
  cr_assert_eq(r, 0, "%s\n%s", err ? err->msg : "", text);
  return p;
}

static struct ceiling_result check_at(const char *ppath, const char *policy, const char *cpath,
                                      const char *ceiling) {
  struct policy *p = parse_at(ppath, policy), *c = parse_at(cpath, ceiling);
  struct ceiling_result r;
  ceiling_check(p, c, &r);
  policy_free(p);
  policy_free(c);
  return r;
}

static struct ceiling_result check(const char *policy, const char *ceiling) {
  return check_at("/tmp/policy.json", policy, "/tmp/ceiling.json", ceiling);
}

/* Not within, with exactly one witness, which contains want. */
static void one_witness(const char *policy, const char *ceiling, const char *want) {
  struct ceiling_result r = check(policy, ceiling);
  cr_assert_eq(r.verdict, CEILING_NOT_WITHIN, "within, but it should not be:\npolicy %s\nceiling %s",
               policy, ceiling);
  cr_assert_eq(r.nwitnesses, 1, "%zu witnesses, the first: %s\npolicy %s", r.nwitnesses,
               r.witnesses[0].what, policy);
  cr_assert(strstr(r.witnesses[0].what, want), "witness: %s\nwanted: %s", r.witnesses[0].what, want);
  ceiling_result_free(&r);
}

static void within(const char *policy, const char *ceiling) {
  struct ceiling_result r = check(policy, ceiling);
  cr_assert_eq(r.verdict, CEILING_WITHIN, "not within: %s\npolicy %s\nceiling %s",
               r.nwitnesses ? r.witnesses[0].what : r.nundecided ? r.undecided[0] : "",
               policy, ceiling);
  ceiling_result_free(&r);
}

#define ONE_TOOL(backend, rest)                                                                     \
  "{\"version\": 1, \"tools\": {\"t\": {\"backend\": " backend ", \"rules\": [{\"effect\": "       \
  "\"allow\"}]}}" rest "}"

Test(ceiling_backend, exec_argv_and_type_swaps) {
  const char *ceiling = ONE_TOOL("{\"type\": \"exec\", \"argv\": [\"/bin/true\", \"refund\"]}", "");
  within(ceiling, ceiling);
  one_witness(ONE_TOOL("{\"type\": \"exec\", \"argv\": [\"/bin/sh\", \"-c\", \"cat /etc/shadow\"]}", ""),
              ceiling,
              "tools.t.backend.argv: [\"/bin/sh\",\"-c\",\"cat /etc/shadow\"] in the policy, "
              "[\"/bin/true\",\"refund\"] in the ceiling");
  /* One argument more, one fewer: another program run all the same. */
  one_witness(ONE_TOOL("{\"type\": \"exec\", \"argv\": [\"/bin/true\", \"refund\", \"--all\"]}", ""),
              ceiling, "tools.t.backend.argv:");
  one_witness(ONE_TOOL("{\"type\": \"exec\", \"argv\": [\"/bin/true\"]}", ""), ceiling,
              "tools.t.backend.argv: [\"/bin/true\"] in the policy");
  one_witness(ONE_TOOL("{\"type\": \"builtin\", \"name\": \"echo\"}", ""), ceiling,
              "tools.t.backend: builtin \"echo\" in the policy, exec [\"/bin/true\",\"refund\"] in "
              "the ceiling");
  one_witness(ceiling, ONE_TOOL("{\"type\": \"socket\", \"path\": \"/run/refund.sock\"}", ""),
              "tools.t.backend: exec [\"/bin/true\",\"refund\"] in the policy, socket "
              "\"/run/refund.sock\" in the ceiling");
  /* Compared after resolution: the ceiling's relative "true" in /bin is
   * the policy's absolute /bin/true. */
  struct ceiling_result r = check_at(
      "/tmp/policy.json", ONE_TOOL("{\"type\": \"exec\", \"argv\": [\"/bin/true\"]}", ""),
      "/bin/ceiling.json", ONE_TOOL("{\"type\": \"exec\", \"argv\": [\"true\"]}", ""));
  cr_assert_eq(r.verdict, CEILING_WITHIN, "%s", r.nwitnesses ? r.witnesses[0].what : "");
  ceiling_result_free(&r);
}

Test(ceiling_backend, socket_path) {
  const char *ceiling = ONE_TOOL("{\"type\": \"socket\", \"path\": \"/run/refund.sock\"}", "");
  within(ceiling, ceiling);
  one_witness(ONE_TOOL("{\"type\": \"socket\", \"path\": \"/run/containerd/containerd.sock\"}", ""),
              ceiling,
              "tools.t.backend.path: \"/run/containerd/containerd.sock\" in the policy, "
              "\"/run/refund.sock\" in the ceiling");
}

#define MCP_TOOL(server, remote) "{\"type\": \"mcp\", \"server\": \"" server "\", \"tool\": \"" remote "\"}"

Test(ceiling_backend, mcp_servers_and_tools) {
  const char *ceiling =
      ONE_TOOL(MCP_TOOL("files", "read"), ", \"mcp_servers\": {\"files\": {\"argv\": [\"/bin/cat\"]}}");
  within(ceiling, ceiling);
  /* A shorter startup timeout only fails sooner. */
  within(ONE_TOOL(MCP_TOOL("files", "read"),
                  ", \"mcp_servers\": {\"files\": {\"argv\": [\"/bin/cat\"], \"timeout\": 2}}"),
         ceiling);
  one_witness(ONE_TOOL(MCP_TOOL("files", "read"),
                       ", \"mcp_servers\": {\"files\": {\"argv\": [\"/bin/sh\", \"-c\", \"id\"]}}"),
              ceiling,
              "mcp_servers.files.argv: [\"/bin/sh\",\"-c\",\"id\"] in the policy, [\"/bin/cat\"] in "
              "the ceiling");
  one_witness(ONE_TOOL(MCP_TOOL("files", "read"),
                       ", \"mcp_servers\": {\"files\": {\"argv\": [\"/bin/cat\"], \"timeout\": 60}}"),
              ceiling, "mcp_servers.files.timeout: 60 s in the policy, at most 10 s in the ceiling");
  one_witness(ONE_TOOL(MCP_TOOL("files", "write"),
                       ", \"mcp_servers\": {\"files\": {\"argv\": [\"/bin/cat\"]}}"),
              ceiling, "tools.t.backend.tool: \"write\" in the policy, \"read\" in the ceiling");
  /* A server no tool names is started all the same. */
  one_witness(ONE_TOOL(MCP_TOOL("files", "read"),
                       ", \"mcp_servers\": {\"files\": {\"argv\": [\"/bin/cat\"]},"
                       " \"miner\": {\"argv\": [\"/bin/sh\"]}}"),
              ceiling, "mcp_servers.miner: [\"/bin/sh\"] in the policy, not in the ceiling");
  struct ceiling_result r = check(
      ONE_TOOL(MCP_TOOL("other", "read"), ", \"mcp_servers\": {\"other\": {\"argv\": [\"/bin/cat\"]}}"),
      ceiling);
  cr_assert_eq(r.verdict, CEILING_NOT_WITHIN);
  cr_assert_eq(r.nwitnesses, 2);
  cr_assert(strstr(r.witnesses[0].what, "mcp_servers.other: [\"/bin/cat\"] in the policy, not in the ceiling"),
            "%s", r.witnesses[0].what);
  cr_assert(strstr(r.witnesses[1].what, "tools.t.backend.server: \"other\" in the policy, \"files\" in the ceiling"),
            "%s", r.witnesses[1].what);
  ceiling_result_free(&r);
}

/* A policy with one http tool "t": allow list, further backend keys (each
 * with a leading comma, or ""), and the tool's timeout. */
static char *http_policy(const char *allow, const char *backend, int timeout) {
  return xasprintf("{\"version\": 1, \"tools\": {\"t\": {\"backend\": {\"type\": \"http\", "
                   "\"allow\": %s%s}, \"timeout\": %d, \"rules\": [{\"effect\": \"allow\"}]}}}",
                   allow, backend, timeout);
}

static const char ceiling_allow[] =
    "[{\"url\": \"https://api.example.com/v1/\", \"methods\": [\"GET\"]},"
    " {\"url\": \"https://api.example.com/v1/\", \"methods\": [\"POST\"]},"
    " {\"url\": \"https://*.example.com/pub\", \"methods\": [\"GET\", \"HEAD\"]},"
    " {\"url\": \"http://10.0.0.5:8080/\", \"methods\": [\"GET\"]}]";

Test(ceiling_backend, http_allow_lists) {
  cleanup_free char *ceiling = http_policy(ceiling_allow, "", 30);
  within(ceiling, ceiling);
  /* Narrower at a segment boundary, a name under the wildcard, a deeper
   * wildcard, the named private address, two methods from two entries. */
  cleanup_free char *narrow = http_policy(
      "[{\"url\": \"https://api.example.com/v1/invoices\", \"methods\": [\"GET\", \"POST\"]},"
      " {\"url\": \"https://docs.example.com/pub/guide\", \"methods\": [\"HEAD\"]},"
      " {\"url\": \"https://*.cdn.example.com/pub\", \"methods\": [\"GET\"]},"
      " {\"url\": \"HTTP://10.0.0.5:8080/status\", \"methods\": [\"GET\"]}]",
      "", 30);
  within(narrow, ceiling);
  static const struct {
    const char *entry, *want;
  } wider[] = {
      {"{\"url\": \"https://api.example.com/v1/\", \"methods\": [\"GET\", \"DELETE\"]}",
       "tools.t.backend.allow[0]: DELETE https://api.example.com/v1/ in the policy, within no "
       "allow entry of the ceiling (GET https://api.example.com/v1/; POST "
       "https://api.example.com/v1/; GET,HEAD https://*.example.com/pub; GET "
       "http://10.0.0.5:8080/)"},
      /* "/v1" admits "/v1" itself, which "/v1/" does not. */
      {"{\"url\": \"https://api.example.com/v1\", \"methods\": [\"GET\"]}",
       "allow[0]: GET https://api.example.com/v1 in the policy"},
      {"{\"url\": \"https://api.example.com/\", \"methods\": [\"GET\"]}", "allow[0]: GET https://api.example.com/ in"},
      {"{\"url\": \"https://docs.example.com/pub-admin\", \"methods\": [\"GET\"]}", "allow[0]: GET https://docs.example.com/pub-admin in"},
      {"{\"url\": \"https://evil.test/v1/\", \"methods\": [\"GET\"]}", "allow[0]: GET https://evil.test/v1/ in"},
      {"{\"url\": \"https://api.example.com:8443/v1/\", \"methods\": [\"GET\"]}", "allow[0]: GET https://api.example.com:8443/v1/ in"},
      {"{\"url\": \"http://api.example.com/v1/\", \"methods\": [\"GET\"]}", "allow[0]: GET http://api.example.com/v1/ in"},
      {"{\"url\": \"https://*.api.example.com/v1/\", \"methods\": [\"GET\"]}", "allow[0]: GET https://*.api.example.com/v1/ in"},
      {"{\"url\": \"https://example.com/pub\", \"methods\": [\"GET\"]}", "allow[0]: GET https://example.com/pub in"},
      {"{\"url\": \"https://*.com/pub\", \"methods\": [\"GET\"]}", "allow[0]: GET https://*.com/pub in"},
      /* Non-public addresses: only the one the ceiling names. */
      {"{\"url\": \"http://10.0.0.6:8080/\", \"methods\": [\"GET\"]}", "allow[0]: GET http://10.0.0.6:8080/ in"},
      {"{\"url\": \"http://169.254.169.254/\", \"methods\": [\"GET\"]}", "allow[0]: GET http://169.254.169.254/ in"},
      {"{\"url\": \"https://[::1]/pub\", \"methods\": [\"GET\"]}", "allow[0]: GET https://[::1]/pub in"},
  };
  for (size_t i = 0; i < sizeof wider / sizeof wider[0]; i++) {
    cleanup_free char *allow = xasprintf("[%s]", wider[i].entry);
    cleanup_free char *p = http_policy(allow, "", 30);
    one_witness(p, ceiling, wider[i].want);
  }
}

static const char ceiling_backend_keys[] =
    ", \"inject_headers\": {\"Authorization\": \"Bearer ${env:BILLING_TOKEN}\"},"
    " \"redact_query\": true, \"max_request_bytes\": 1000, \"max_response_bytes\": 100000,"
    " \"max_redirects\": 2";

Test(ceiling_backend, http_credentials_and_bounds) {
  static const char allow[] = "[{\"url\": \"https://api.example.com/v1/\", \"methods\": [\"GET\"]}]";
  cleanup_free char *ceiling = http_policy(allow, ceiling_backend_keys, 10);
  within(ceiling, ceiling);
  /* Header names are case-insensitive; lower bounds are narrower. */
  cleanup_free char *tighter = http_policy(
      allow,
      ", \"inject_headers\": {\"authorization\": \"Bearer ${env:BILLING_TOKEN}\"},"
      " \"redact_query\": true, \"max_request_bytes\": 10, \"max_response_bytes\": 100,"
      " \"max_redirects\": 0",
      5);
  within(tighter, ceiling);
  static const struct {
    const char *keys;
    int timeout;
    const char *want;
  } weaker[] = {
      /* Another host secret to the same origin. */
      {", \"inject_headers\": {\"Authorization\": \"Bearer ${env:AWS_SECRET_ACCESS_KEY}\"},"
       " \"redact_query\": true, \"max_request_bytes\": 1000, \"max_response_bytes\": 100000,"
       " \"max_redirects\": 2",
       10,
       "tools.t.backend.inject_headers.Authorization: \"Bearer ${env:AWS_SECRET_ACCESS_KEY}\" in "
       "the policy, another value in the ceiling"},
      {ceiling_backend_keys, 30, "tools.t.timeout: 30 s in the policy, at most 10 s in the ceiling"},
      {", \"inject_headers\": {\"Authorization\": \"Bearer ${env:BILLING_TOKEN}\","
       " \"X-Key\": \"${file:/etc/tollgate/host.key}\"},"
       " \"redact_query\": true, \"max_request_bytes\": 1000, \"max_response_bytes\": 100000,"
       " \"max_redirects\": 2",
       10,
       "tools.t.backend.inject_headers.X-Key: \"${file:/etc/tollgate/host.key}\" in the policy, "
       "not in the ceiling"},
      {", \"redact_query\": true, \"max_request_bytes\": 1000, \"max_response_bytes\": 100000,"
       " \"max_redirects\": 2",
       10, "tools.t.backend.inject_headers.Authorization: not in the policy, injected by the ceiling"},
      {", \"inject_headers\": {\"Authorization\": \"Bearer ${env:BILLING_TOKEN}\"},"
       " \"max_request_bytes\": 1000, \"max_response_bytes\": 100000, \"max_redirects\": 2",
       10, "tools.t.backend.redact_query: false in the policy, true in the ceiling"},
      {", \"inject_headers\": {\"Authorization\": \"Bearer ${env:BILLING_TOKEN}\"},"
       " \"redact_query\": true, \"max_request_bytes\": 1000, \"max_response_bytes\": 524288,"
       " \"max_redirects\": 2",
       10, "tools.t.backend.max_response_bytes: 524288 in the policy, at most 100000 in the ceiling"},
      /* Left out: the default, 64 KiB. */
      {", \"inject_headers\": {\"Authorization\": \"Bearer ${env:BILLING_TOKEN}\"},"
       " \"redact_query\": true, \"max_response_bytes\": 100000, \"max_redirects\": 2",
       10, "tools.t.backend.max_request_bytes: 65536 in the policy, at most 1000 in the ceiling"},
      {", \"inject_headers\": {\"Authorization\": \"Bearer ${env:BILLING_TOKEN}\"},"
       " \"redact_query\": true, \"max_request_bytes\": 1000, \"max_response_bytes\": 100000,"
       " \"max_redirects\": 10",
       10, "tools.t.backend.max_redirects: 10 in the policy, at most 2 in the ceiling"},
  };
  for (size_t i = 0; i < sizeof weaker / sizeof weaker[0]; i++) {
    cleanup_free char *p = http_policy(allow, weaker[i].keys, weaker[i].timeout);
    one_witness(p, ceiling, weaker[i].want);
  }
  /* The ceiling's template is never printed: it may be a literal secret. */
  cleanup_free char *literal = http_policy(allow, ", \"inject_headers\": {\"Authorization\": \"Bearer s3cr3t-host-token\"}", 10);
  cleanup_free char *other = http_policy(allow, ", \"inject_headers\": {\"Authorization\": \"Bearer mine\"}", 10);
  struct ceiling_result r = check(other, literal);
  cr_assert_eq(r.verdict, CEILING_NOT_WITHIN);
  for (size_t i = 0; i < r.nwitnesses; i++)
    cr_assert(strstr(r.witnesses[i].what, "s3cr3t") == NULL, "%s", r.witnesses[i].what);
  ceiling_result_free(&r);
}

/* ---- the property test of allow-list containment ---- */

static const char *const schemes[] = {"https", "http"};
static const char *const entry_hosts[] = {"api.example.com", "*.example.com", "a.example.com",
                                          "*.a.example.com", "example.com", "10.0.0.1",
                                          "[::1]"};
static const char *const request_hosts[] = {"api.example.com", "a.example.com", "b.a.example.com",
                                            "example.com", "zz.example.com", "10.0.0.1",
                                            "[::1]", "10.0.0.2"};
static const char *const ports[] = {"", ":8443"};
static const char *const entry_paths[] = {"/", "/v1", "/v1/", "/v1/x", "/v1/x/", "/v1-admin"};
static const char *const request_paths[] = {"/", "/v1", "/v1/", "/v1/x", "/v1/x/y", "/v1/xy",
                                            "/v1-admin", "/v2"};
static const char *const methods[] = {"GET", "POST", "PUT"};

struct entry {
  const char *scheme, *port, *m1, *m2;
  char host[64], path[32];
};

static struct entry random_entry(void) {
  struct entry e = {schemes[pick(2)], ports[pick(2)], methods[pick(3)], pick(2) ? "GET" : NULL,
                    "", ""};
  snprintf(e.host, sizeof e.host, "%s", entry_hosts[pick(7)]);
  snprintf(e.path, sizeof e.path, "%s", entry_paths[pick(6)]);
  return e;
}

/* Often within: one of the ceiling's entries, narrowed (or not) in one
 * part, or changed in one part to another of the pool. */
static struct entry mutate(const struct entry *c) {
  struct entry e = *c;
  if (pick(2))
    e.m2 = NULL;
  switch (pick(6)) {
  case 0: break;
  case 1: /* a deeper path */
    snprintf(e.path, sizeof e.path, "%.24s%sx", c->path, c->path[strlen(c->path) - 1] == '/' ? "" : "/");
    break;
  case 2: /* a name, or a deeper wildcard, under a wildcard */
    if (c->host[0] == '*')
      snprintf(e.host, sizeof e.host, "%sa%.48s", pick(2) ? "*." : "", c->host + 1);
    break;
  case 3: snprintf(e.path, sizeof e.path, "%s", entry_paths[pick(6)]); break;
  case 4: snprintf(e.host, sizeof e.host, "%s", entry_hosts[pick(7)]); break;
  default: e.scheme = schemes[pick(2)]; e.port = ports[pick(2)]; e.m1 = methods[pick(3)]; break;
  }
  return e;
}

static char *allow_text(const struct entry *v, size_t n) {
  struct json_buf b = {0};
  json_buf_lit(&b, "[");
  for (size_t i = 0; i < n; i++) {
    cleanup_free char *e = xasprintf("%s{\"url\": \"%s://%s%s%s\", \"methods\": [\"%s\"%s%s%s]}",
                                     i ? ", " : "", v[i].scheme, v[i].host, v[i].port, v[i].path,
                                     v[i].m1, v[i].m2 ? ", \"" : "", v[i].m2 ? v[i].m2 : "",
                                     v[i].m2 ? "\"" : "");
    json_buf_raw(&b, e, strlen(e));
  }
  json_buf_lit(&b, "]");
  return b.s;
}

/* Would the list admit method on url, address rule included? */
static bool admits(const struct egress_config *c, const char *method, const struct egress_url *u) {
  cleanup_free char *why = NULL;
  long i = egress_allow_match(c->allow, c->nallow, method, u, &why);
  if (i < 0)
    return false;
  if (u->family == 0)
    return true; /* a name: its address is checked at resolution, alike */
  char *w2 = NULL;
  bool ok = egress_addr_permitted(&c->allow[i], u->host, u->family, u->addr, &w2);
  free(w2);
  return ok;
}

Test(ceiling_backend, property_random_allow_lists) {
  size_t nwithin = 0, nnot = 0;
  for (size_t round = 0; round < 2000; round++) {
    rng_state = (20261205 + round) * 0x9E3779B97F4A7C15ULL + 1;
    struct entry ce[3], pe[3];
    size_t nc = 1 + pick(3), np = 1 + pick(3);
    for (size_t i = 0; i < nc; i++)
      ce[i] = random_entry();
    for (size_t i = 0; i < np; i++)
      pe[i] = pick(4) ? mutate(&ce[pick(nc)]) : random_entry();
    cleanup_free char *ca = allow_text(ce, nc), *pa = allow_text(pe, np);
    cleanup_free char *ctext = http_policy(ca, "", 30), *ptext = http_policy(pa, "", 30);
    struct policy *p = parse_at("/tmp/policy.json", ptext), *c = parse_at("/tmp/ceiling.json", ctext);
    const struct egress_config *pc = policy_find(p, "t")->backend.http;
    const struct egress_config *cc = policy_find(c, "t")->backend.http;
    struct ceiling_result r;
    ceiling_check(p, c, &r);
    if (r.verdict == CEILING_WITHIN) {
      nwithin++;
      /* Every request: each host, port, path and method of the pools. */
      for (size_t h = 0; h < 8; h++)
        for (size_t s = 0; s < 2; s++)
          for (size_t po = 0; po < 2; po++)
            for (size_t pa_ = 0; pa_ < 8; pa_++) {
              cleanup_free char *url = xasprintf("%s://%s%s%s", schemes[s], request_hosts[h],
                                                 ports[po], request_paths[pa_]);
              struct egress_url u;
              char *why = NULL;
              cr_assert(egress_url_parse(url, false, &u, &why), "%s: %s", url, why);
              for (size_t m = 0; m < 3; m++)
                cr_assert(!admits(pc, methods[m], &u) || admits(cc, methods[m], &u),
                          "said within, but %s %s: the policy admits it, the ceiling not\n"
                          "policy %s\nceiling %s",
                          methods[m], url, pa, ca);
              egress_url_clear(&u);
            }
    } else {
      nnot++;
      /* Each witness names an entry and its methods: the entry's own URL
       * (a wildcard's host with a fresh label) is a request the policy
       * admits and the ceiling refuses, for one of them at least. */
      cr_assert_gt(r.nwitnesses, 0);
      for (size_t i = 0; i < r.nwitnesses; i++) {
        size_t k;
        cr_assert_eq(sscanf(r.witnesses[i].what, "tools.t.backend.allow[%zu]", &k), 1, "%s",
                     r.witnesses[i].what);
        const struct egress_allow *e = &pc->allow[k];
        struct egress_url u = e->url;
        cleanup_free char *host = e->url.wildcard ? xasprintf("qq.%s", e->url.host) : NULL;
        if (host) {
          u.host = host;
          u.wildcard = false;
        }
        bool shown = false;
        for (char **m = e->methods; *m && !shown; m++)
          shown = admits(pc, *m, &u) && !admits(cc, *m, &u);
        cr_assert(shown, "witness %s is not one\npolicy %s\nceiling %s", r.witnesses[i].what, pa, ca);
      }
    }
    ceiling_result_free(&r);
    policy_free(p);
    policy_free(c);
  }
  cr_log_info("allow-list property: %zu within, %zu not within", nwithin, nnot);
  cr_assert_gt(nwithin, 100, "only %zu within", nwithin);
  cr_assert_gt(nnot, 100, "only %zu not within", nnot);
}
