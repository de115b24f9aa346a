/* The http backend (docs/egress.md): the program's request is checked here,
 * in tollgate, and made by build/tollgate-http, a libcurl program run
 * through sandbox_run as the tools' uid, once per hop.
 *
 * Before the rules: the URL (one strict spelling), the method, the
 * headers (no CR/LF, none that frames the request, none the host
 * injects), the body's size, the allow list, and an address literal's
 * class.  At run time: the name is resolved once here and every address
 * it has must be allowed; the child is pinned to the first; credentials
 * are added after the policy decided; a redirect is checked again like a
 * new request, never followed by curl; whatever comes back has the
 * secrets scrubbed out. */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "governance/egress_config.h"
#include "governance/gate.h"
#include "governance/tools.h"
#include "base/base64.h"
#include "base/util.h"

/* The program's request, checked (an http_request owns every field). */
struct http_request {
  const struct egress_config *cfg;
  char *method;
  struct egress_url url;
  long entry; /* the allow entry that admits it */
  const json_t *headers; /* borrowed: the program's headers object, or NULL */
  unsigned char *body;
  size_t body_len;
  bool has_body;
};

static void request_clear(struct http_request *q) {
  free(q->method);
  egress_url_clear(&q->url);
  free(q->body);
  memset(q, 0, sizeof *q);
}

/* Check a request; GATE_BAD_REQUEST for one that is malformed,
 * GATE_DENIED for one the backend's allow list or address rules refuse,
 * NULL when it may go on to the rules.  *why is owned. */
static const char *check_request(const struct tool *t, const json_t *args,
                                 struct http_request *q, char **why) {
  const struct egress_config *cfg = t->backend.http;
  memset(q, 0, sizeof *q);
  q->cfg = cfg;
  const char *method = json_string_value(json_object_get(args, "method"));
  const char *url = json_string_value(json_object_get(args, "url"));
  if (method == NULL || url == NULL || !egress_method_ok(method)) {
    *why = xstrdup("an http call needs \"method\" (uppercase, e.g. \"GET\") and \"url\"");
    return GATE_BAD_REQUEST;
  }
  q->method = xstrdup(method);
  if (!egress_url_parse(url, false, &q->url, why))
    return GATE_BAD_REQUEST;
  q->headers = json_object_get(args, "headers");
  for (size_t i = 0; q->headers && i < q->headers->u.object.len; i++) {
    const char *name = q->headers->u.object.keys[i];
    const json_t *v = q->headers->u.object.values[i];
    if (!json_is(v, JSON_STRING)) {
      *why = xasprintf("the header %.64s must have a string value", name);
      return GATE_BAD_REQUEST;
    }
    if (!egress_header_ok(name, json_string_value(v), v->u.string.len, why))
      return GATE_BAD_REQUEST;
    /* The program may not choose a credential the host injects, nor
     * learn by trying whether its own value is accepted. */
    if (egress_is_injected(cfg, name)) {
      *why = xasprintf("the header %s is set by the host (inject_headers), never by the program", name);
      return GATE_BAD_REQUEST;
    }
  }
  const json_t *body = json_object_get(args, "body"), *b64 = json_object_get(args, "body_base64");
  if (body && b64) {
    *why = xstrdup("give \"body\" or \"body_base64\", not both");
    return GATE_BAD_REQUEST;
  }
  if (body) {
    q->body_len = body->u.string.len;
    q->body = (unsigned char *)xstrndup(json_string_value(body), q->body_len);
    q->has_body = true;
  } else if (b64) {
    q->body = base64_decode(json_string_value(b64), &q->body_len);
    if (q->body == NULL) {
      *why = xstrdup("\"body_base64\" is not padded base64");
      return GATE_BAD_REQUEST;
    }
    q->has_body = true;
  }
  if (q->has_body && (long long)q->body_len > cfg->max_request_bytes) {
    *why = xasprintf("the request body has %zu bytes, more than max_request_bytes (%lld)",
                     q->body_len, cfg->max_request_bytes);
    return GATE_BAD_REQUEST;
  }
  q->entry = egress_allow_match(cfg->allow, cfg->nallow, q->method, &q->url, why);
  if (q->entry < 0)
    return GATE_DENIED;
  /* An address literal is refused now, before any rule or approval. */
  if (q->url.family && !egress_addr_permitted(&cfg->allow[q->entry], q->url.host, q->url.family,
                                              q->url.addr, why))
    return GATE_DENIED;
  return NULL;
}

/* The args the audit log shows: method, the URL (query redacted when the
 * backend says so), the program's own headers and the body's size, never
 * the body.  Made for refused calls too, from what could be parsed. */
static json_t *audit_args(const json_t *args, const struct http_request *q) {
  json_t *a = json_new_object();
  const char *method = json_string_value(json_object_get(args, "method"));
  const char *url = json_string_value(json_object_get(args, "url"));
  json_object_set(a, "method", method ? json_new_string(method) : json_new_null());
  if (q->url.scheme) {
    cleanup_free char *shown = egress_url_format(&q->url, q->cfg->redact_query);
    json_object_set(a, "url", json_new_string(shown));
  } else if (url) {
    const char *query = strchr(url, '?');
    cleanup_free char *shown = query && q->cfg->redact_query
                                   ? xasprintf("%.*s?[redacted]", (int)(query - url), url)
                                   : xstrdup(url);
    json_object_set(a, "url", json_new_string(shown));
  }
  const json_t *headers = json_object_get(args, "headers");
  if (headers)
    json_object_set(a, "headers", json_copy(headers));
  const json_t *body = json_object_get(args, "body"), *b64 = json_object_get(args, "body_base64");
  if (body || b64)
    json_object_set(a, "body_bytes", json_new_integer(q->has_body ? (long long)q->body_len
                                                      : (long long)(body ? body : b64)->u.string.len));
  return a;
}

const char *tool_http_prepare(const struct tool *t, const json_t *args, json_t **view,
                              json_t **audit, char **why) {
  *view = NULL;
  struct http_request q;
  const char *code = check_request(t, args, &q, why);
  *audit = audit_args(args, &q);
  if (code != NULL) {
    request_clear(&q);
    return code;
  }
  cleanup_free char *url = egress_url_format(&q.url, false);
  json_t *v = json_copy(args);
  json_object_set(v, "url", json_new_string(url));
  json_object_set(v, "scheme", json_new_string(q.url.scheme));
  json_object_set(v, "host", json_new_string(q.url.host));
  json_object_set(v, "port", json_new_integer(q.url.port));
  json_object_set(v, "path", json_new_string(q.url.path));
  if (q.url.query)
    json_object_set(v, "query", json_new_string(q.url.query));
  request_clear(&q);
  *view = v;
  return NULL;
}

/* --- running it -------------------------------------------------------- */

static char *fetcher_path(void) {
  cleanup_free char *dir = executable_dir();
  if (dir == NULL)
    return NULL;
  /* installed: lib/tollgate/; built: beside tollgate; unit tests: build/tests/ */
  const char *rel[] = {"../lib/tollgate/tollgate-http", "tollgate-http", "../tollgate-http",
                       "../../tollgate-http"};
  for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
    cleanup_free char *p = xasprintf("%s/%s", dir, rel[i]);
    if (access(p, X_OK) == 0)
      return realpath(p, NULL);
  }
  return NULL;
}

/* Resolve the URL's host once and check every address it has: a name
 * whose answers include a refused address is refused whole (an attacker's
 * DNS would otherwise alternate).  The first address is the one used. */
static bool resolve_pinned(const struct egress_allow *entry, const struct egress_url *u,
                           char text[INET6_ADDRSTRLEN], char **why) {
  if (u->family) {
    if (!egress_addr_permitted(entry, u->host, u->family, u->addr, why))
      return false;
    inet_ntop(u->family, u->addr, text, INET6_ADDRSTRLEN);
    return true;
  }
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
  struct addrinfo *res = NULL;
  int r = getaddrinfo(u->host, NULL, &hints, &res);
  if (r != 0 || res == NULL) {
    *why = xasprintf("cannot resolve %s (%s)", u->host, gai_strerror(r));
    return false;
  }
  bool ok = true;
  text[0] = '\0';
  for (struct addrinfo *ai = res; ai && ok; ai = ai->ai_next) {
    const unsigned char *addr = ai->ai_family == AF_INET
                                    ? (const unsigned char *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr
                                    : (const unsigned char *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;
    if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
      continue;
    ok = egress_addr_permitted(entry, u->host, ai->ai_family, addr, why);
    if (ok && text[0] == '\0')
      inet_ntop(ai->ai_family, addr, text, INET6_ADDRSTRLEN);
  }
  freeaddrinfo(res);
  if (ok && text[0] == '\0') {
    *why = xasprintf("%s has no IPv4 or IPv6 address", u->host);
    ok = false;
  }
  return ok;
}

/* One hop's request to the child (owned JSON text). */
static char *hop_input(const struct http_request *q, const char *address, bool with_credentials,
                       struct egress_secrets *secrets, long long left_ms, char **why) {
  json_t *in = json_new_object();
  cleanup_free char *url = egress_url_format(&q->url, false);
  json_object_set(in, "method", json_new_string(q->method));
  json_object_set(in, "url", json_new_string(url));
  json_object_set(in, "host", json_new_string(q->url.family ? "" : q->url.host));
  json_object_set(in, "port", json_new_integer(q->url.port));
  json_object_set(in, "address", json_new_string(address));
  json_object_set(in, "max_response_bytes", json_new_integer(q->cfg->max_response_bytes));
  json_object_set(in, "timeout_ms", json_new_integer(left_ms));
  json_t *hs = json_new_array();
  for (size_t i = 0; q->headers && i < q->headers->u.object.len; i++) {
    cleanup_free char *line = xasprintf("%s: %s", q->headers->u.object.keys[i],
                                        json_string_value(q->headers->u.object.values[i]));
    json_array_append(hs, json_new_string(line));
  }
  /* Credentials are added here, after the policy decided, and only
   * toward the origin the program asked for. */
  for (size_t i = 0; with_credentials && i < q->cfg->ninject; i++) {
    cleanup_free char *value = egress_inject_value(&q->cfg->inject[i], secrets, why);
    if (value == NULL) {
      json_free(hs);
      json_free(in);
      return NULL;
    }
    cleanup_free char *line = xasprintf("%s: %s", q->cfg->inject[i].name, value);
    json_array_append(hs, json_new_string(line));
  }
  json_object_set(in, "headers", hs);
  if (q->has_body) {
    cleanup_free char *b64 = base64_encode(q->body, q->body_len);
    json_object_set(in, "body_base64", json_new_string(b64));
  }
  char *text = json_dump(in, false, NULL);
  json_free(in);
  if (text == NULL)
    *why = xstrdup("the request could not be encoded for tollgate-http");
  return text;
}

/* The URL a Location header names, made absolute against the current
 * one (owned).  It is then parsed as strictly as the program's own. */
static char *resolve_location(const struct egress_url *base, const char *loc) {
  if (strncasecmp(loc, "http://", 7) == 0 || strncasecmp(loc, "https://", 8) == 0)
    return xstrdup(loc);
  struct egress_url origin = *base;
  origin.path = "";
  origin.query = NULL;
  cleanup_free char *o = egress_url_format(&origin, false);
  if (strncmp(loc, "//", 2) == 0)
    return xasprintf("%s:%s", base->scheme, loc);
  if (loc[0] == '/')
    return xasprintf("%s%s", o, loc);
  const char *slash = strrchr(base->path, '/');
  return xasprintf("%s%.*s/%s", o, (int)(slash - base->path), base->path, loc);
}

static bool is_redirect(long long status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

/* What the program gets: status, headers (names lowercase, repeats
 * joined, the injected ones dropped), the body as text when it is UTF-8
 * without NUL, else as base64; secrets scrubbed everywhere. */
static json_t *build_result(const json_t *out, const struct http_request *q,
                            const struct egress_secrets *s, int hops) {
  json_t *res = json_new_object();
  long long status = 0;
  json_integer_value(json_object_get(out, "status"), &status);
  json_object_set(res, "status", json_new_integer(status));
  json_t *hs = json_new_object();
  const json_t *list = json_object_get(out, "headers");
  for (size_t i = 0; i < json_array_len(list); i++) {
    const json_t *pair = json_array_get(list, i);
    const char *name = json_string_value(json_array_get(pair, 0));
    const char *value = json_string_value(json_array_get(pair, 1));
    if (name == NULL || value == NULL || egress_is_injected(q->cfg, name))
      continue;
    cleanup_free char *lower = xstrdup(name);
    for (char *c = lower; *c; c++)
      *c = (char)(*c >= 'A' && *c <= 'Z' ? *c + 32 : *c);
    size_t n;
    cleanup_free char *clean = egress_scrub(value, strlen(value), s, &n);
    const char *before = json_string_value(json_object_get(hs, lower));
    if (before) {
      cleanup_free char *joined = xasprintf("%s, %s", before, clean);
      json_object_set(hs, lower, json_new_string(joined));
    } else {
      json_object_set(hs, lower, json_new_string(clean));
    }
  }
  json_object_set(res, "headers", hs);
  size_t blen = 0, clen = 0;
  const char *b64 = json_string_value(json_object_get(out, "body_base64"));
  cleanup_free unsigned char *body = base64_decode(b64 ? b64 : "", &blen);
  cleanup_free char *clean = egress_scrub(body ? (const char *)body : "", body ? blen : 0, s, &clen);
  if (json_utf8_check(clean, clen) == clen && memchr(clean, '\0', clen) == NULL) {
    json_object_set(res, "body", json_new_stringn(clean, clen));
  } else {
    cleanup_free char *enc = base64_encode(clean, clen);
    json_object_set(res, "body_base64", json_new_string(enc));
  }
  cleanup_free char *url = egress_url_format(&q->url, false);
  size_t ulen;
  cleanup_free char *curl = egress_scrub(url, strlen(url), s, &ulen);
  json_object_set(res, "url", json_new_string(curl));
  json_object_set(res, "redirects", json_new_integer(hops));
  return res;
}

/* The state of one call across its hops. */
struct http_run {
  const struct tool *t;
  struct http_request q;
  char *origin;       /* scheme://host:port of the program's URL: credentials go there only */
  char *fetcher;
  struct egress_secrets secrets;
  unsigned long long deadline;
  long long sent, received, status;
  int hops;
};

/* Every failure message goes through here: it may hold response bytes (a
 * redirect's Location, a host name), so it is scrubbed whole and only
 * then cut (egress_scrub_message). */
static void run_fail(struct http_run *h, struct tool_result *r, const char *code, char *msg) {
  r->code = code;
  r->message = egress_scrub_message(msg, &h->secrets);
  free(msg);
}

static char *origin_of(const struct egress_url *u) {
  return xasprintf("%s://%s:%d", u->scheme, u->host, u->port);
}

/* One hop: resolve and pin, run the child, read what it said.  Returns
 * its output (owned) or NULL with *r set. */
static json_t *run_hop(struct http_run *h, struct tool_result *r) {
  char *why = NULL;
  char address[INET6_ADDRSTRLEN];
  if (!resolve_pinned(&h->q.cfg->allow[h->q.entry], &h->q.url, address, &why)) {
    run_fail(h, r, GATE_TOOL_FAILED, xasprintf("refused: %s", why));
    free(why);
    return NULL;
  }
  unsigned long long now = monotonic_ns();
  long long left = now >= h->deadline ? 0 : (long long)((h->deadline - now) / 1000000ULL);
  if (left < 1) {
    run_fail(h, r, GATE_TOOL_TIMEOUT, xasprintf("%s did not finish within %d ms", h->t->name, h->t->timeout_ms));
    return NULL;
  }
  cleanup_free char *origin = origin_of(&h->q.url);
  cleanup_free char *input = hop_input(&h->q, address, strcmp(origin, h->origin) == 0,
                                       &h->secrets, left, &why);
  if (input == NULL) {
    run_fail(h, r, GATE_TOOL_FAILED, why);
    return NULL;
  }
  char *argv[] = {h->fetcher, NULL};
  struct sandbox_output o;
  cleanup_error tg_error *err = NULL;
  /* A second of grace: curl's own timeout answers first, with its reason. */
  if (sandbox_run(argv, NULL, input, strlen(input), (int)left + 1000, NULL, &o, &err) < 0) {
    run_fail(h, r, GATE_TOOL_FAILED, xstrdup(err->msg));
    return NULL;
  }
  json_t *out = o.outlen ? json_parse(o.out, o.outlen, NULL, NULL) : NULL;
  const char *kind = json_string_value(json_object_get(out, "error"));
  if (o.timed_out || (kind && strcmp(kind, "timeout") == 0)) {
    run_fail(h, r, GATE_TOOL_TIMEOUT, xasprintf("%s did not finish within %d ms", h->t->name, h->t->timeout_ms));
  } else if (out == NULL || !WIFEXITED(o.status) || (WEXITSTATUS(o.status) != 0 && kind == NULL)) {
    run_fail(h, r, GATE_TOOL_FAILED, xasprintf("tollgate-http failed (status %d)%s%s", o.status,
                                               o.err_tail[0] ? ": " : "", o.err_tail));
  } else if (kind) {
    const char *m = json_string_value(json_object_get(out, "message"));
    run_fail(h, r, GATE_TOOL_FAILED, xstrdup(m ? m : kind));
  } else {
    long long n = 0;
    if (json_integer_value(json_object_get(out, "bytes_sent"), &n))
      h->sent += n;
    if (json_integer_value(json_object_get(out, "bytes_received"), &n))
      h->received += n;
    json_integer_value(json_object_get(out, "status"), &h->status);
    sandbox_output_clear(&o);
    return out;
  }
  json_free(out);
  sandbox_output_clear(&o);
  return NULL;
}

/* A 3xx with a Location: check the next hop like a new request.  true
 * when h->q now holds it; false with *r set when it is refused. */
static bool follow(struct http_run *h, const json_t *out, struct tool_result *r) {
  const char *loc = NULL;
  const json_t *list = json_object_get(out, "headers");
  for (size_t i = 0; i < json_array_len(list); i++) {
    const json_t *pair = json_array_get(list, i);
    if (strcasecmp(json_string_value(json_array_get(pair, 0)) ?: "", "location") == 0)
      loc = json_string_value(json_array_get(pair, 1));
  }
  if (++h->hops > h->q.cfg->max_redirects) {
    run_fail(h, r, GATE_TOOL_FAILED, xasprintf("more than %d redirects (max_redirects)", h->q.cfg->max_redirects));
    return false;
  }
  cleanup_free char *next_url = resolve_location(&h->q.url, loc);
  struct egress_url next;
  char *why = NULL;
  if (!egress_url_parse(next_url, false, &next, &why)) {
    /* The reason first: a long Location is what run_fail cuts. */
    run_fail(h, r, GATE_TOOL_FAILED, xasprintf("the redirect is refused: %s; it pointed to %s", why, next_url));
    free(why);
    return false;
  }
  /* 303, and 301/302 after anything but GET/HEAD, continue as a GET
   * without the body (what browsers and curl do); 307/308 repeat. */
  if ((h->status == 303 && strcmp(h->q.method, "HEAD") != 0) ||
      ((h->status == 301 || h->status == 302) && strcmp(h->q.method, "GET") != 0 &&
       strcmp(h->q.method, "HEAD") != 0)) {
    free(h->q.method);
    h->q.method = xstrdup("GET");
    free(h->q.body);
    h->q.body = NULL;
    h->q.body_len = 0;
    h->q.has_body = false;
  }
  long entry = egress_allow_match(h->q.cfg->allow, h->q.cfg->nallow, h->q.method, &next, &why);
  if (entry < 0) {
    egress_url_clear(&next);
    run_fail(h, r, GATE_TOOL_FAILED, xasprintf("the redirect is refused: %s", why));
    free(why);
    return false;
  }
  egress_url_clear(&h->q.url);
  h->q.url = next;
  h->q.entry = entry;
  return true;
}

static bool has_location(const json_t *out) {
  const json_t *list = json_object_get(out, "headers");
  for (size_t i = 0; i < json_array_len(list); i++)
    if (strcasecmp(json_string_value(json_array_get(json_array_get(list, i), 0)) ?: "", "location") == 0)
      return true;
  return false;
}

void tool_http_run(const struct tool *t, const json_t *view, const char *call_id,
                   struct tool_result *r) {
  (void)call_id;
  memset(r, 0, sizeof *r);
  unsigned long long t0 = monotonic_ns();
  struct http_run h = {.t = t, .deadline = t0 + (unsigned long long)t->timeout_ms * 1000000ULL};
  char *why = NULL;
  const char *code = check_request(t, view, &h.q, &why);
  cleanup_free char *first = h.q.url.scheme ? egress_url_format(&h.q.url, t->backend.http->redact_query) : NULL;
  cleanup_free char *method = xstrdup(h.q.method ? h.q.method : "");
  if (code != NULL) {
    run_fail(&h, r, GATE_TOOL_FAILED, why);
  } else if ((h.fetcher = fetcher_path()) == NULL) {
    run_fail(&h, r, GATE_TOOL_FAILED, xstrdup("tollgate-http, the http backend's request maker, is not installed beside tollgate (run make, or make install)"));
  } else {
    h.origin = origin_of(&h.q.url);
    for (;;) {
      json_t *out = run_hop(&h, r);
      if (out == NULL)
        break;
      if (is_redirect(h.status) && has_location(out)) {
        bool go = follow(&h, out, r);
        json_free(out);
        if (go)
          continue;
        break;
      }
      r->result = build_result(out, &h.q, &h.secrets, h.hops);
      json_free(out);
      break;
    }
  }
  /* The audit record's part (docs/audit.md): never a header value. */
  json_t *a = json_new_object();
  json_object_set(a, "method", json_new_string(method));
  json_object_set(a, "url", first ? json_new_string(first) : json_new_null());
  json_object_set(a, "status", h.status ? json_new_integer(h.status) : json_new_null());
  json_object_set(a, "bytes_sent", json_new_integer(h.sent));
  json_object_set(a, "bytes_received", json_new_integer(h.received));
  json_object_set(a, "redirects", json_new_integer(h.hops));
  json_object_set(a, "duration_ms", json_new_integer((long long)((monotonic_ns() - t0) / 1000000ULL)));
  r->audit = json_new_object();
  json_object_set(r->audit, "http", a);
  request_clear(&h.q);
  egress_secrets_free(&h.secrets);
  free(h.origin);
  free(h.fetcher);
}
