/* The http backend's checks with hostile input: numeric spellings of
 * loopback and metadata addresses, userinfo and backslash tricks,
 * percent-encoded and non-ASCII hosts, dot segments against a prefix, CR/LF
 * in headers, the address classes, the allow list, the policy's http
 * backend and the scrubbing of secrets. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "governance/egress_check.h"
#include "governance/egress_config.h"
#include "governance/policy.h"
#include "governance/policy_lint.h"
#include "governance/tools.h"
#include "base/util.h"

static void refused(const char *url, const char *want) {
  struct egress_url u;
  char *why = NULL;
  bool ok = egress_url_parse(url, false, &u, &why);
  cr_assert(!ok, "%s was accepted", url);
  cr_assert_not_null(why);
  cr_assert(strstr(why, want) != NULL, "%s: [%s] does not say [%s]", url, why, want);
  free(why);
}

static char *normalised(const char *url) {
  struct egress_url u;
  char *why = NULL;
  cr_assert(egress_url_parse(url, false, &u, &why), "%s: %s", url, why ? why : "");
  char *s = egress_url_format(&u, false);
  egress_url_clear(&u);
  return s;
}

Test(egress_url, numeric_spellings_of_loopback_are_refused) {
  static const char *const urls[] = {
      "http://2130706433/", "http://0x7f.1/", "http://0177.0.0.1/", "http://127.1/",
      "http://0x7f000001/", "http://127.0.1/", "http://017700000001/", "http://127.000.000.001/",
      "http://0x7F.0.0.1/", "http://127.0.0.01/",
  };
  for (size_t i = 0; i < sizeof urls / sizeof *urls; i++)
    refused(urls[i], "127.0.0.1 spelled another way");
  refused("http://0251.0376.0251.0376/", "169.254.169.254 spelled another way");
  refused("http://2852039166/", "169.254.169.254 spelled another way");
  refused("http://1.2.3.256/", "neither a host name nor an IPv4 address");
  refused("http://1.2.3.4.5/", "neither a host name nor an IPv4 address");
  refused("http://0x/", "0.0.0.0 spelled another way");
}

Test(egress_url, tricks_are_refused) {
  refused("http://allowed.example@evil.example/", "userinfo");
  refused("http://user:pw@127.0.0.1/", "userinfo");
  refused("http://127.0.0.1\\@evil/", "backslash");
  refused("http://evil\\.example/", "backslash");
  refused("http://127.0.0.1/a#frag", "fragment");
  refused("http://%31%32%37.0.0.1/", "percent-encoded host");
  refused("http://ex%61mple.com/", "percent-encoded host");
  refused("http://b\xc3\xbc" "cher.example/", "xn--");
  refused("http://example.com./", "trailing dot");
  refused("http://.example.com/", "leading or trailing dot");
  refused("http://a..b/", "empty label");
  refused("ftp://example.com/", "only http and https");
  refused("file:///etc/passwd", "only http and https");
  refused("gopher://127.0.0.1:25/", "only http and https");
  refused("example.com/x", "absolute URL");
  refused("http:///x", "no host");
  refused("http://example.com:0/", "port");
  refused("http://example.com:65536/", "port");
  refused("http://example.com:/", "port");
  refused("http://example.com:+80/", "port");
  refused("http://example.com:80a/", "port");
  refused("http://[fe80::1%25eth0]/", "zone");
  refused("http://[::1/", "[address]");
  refused("http://[not:an:address]/", "not an IPv6 address");
  refused("http://[::1]x/", "only :port");
  refused("http://*.example.com/", "wildcard");
  refused("http://exa mple.com/", "0x20");
}

Test(egress_url, path_and_query_bytes) {
  refused("http://h/v1/../admin", "\"..\" segment");
  refused("http://h/v1/%2e%2e/admin", "\"..\" segment");
  refused("http://h/v1/%2E./admin", "\"..\" segment");
  refused("http://h/v1/.%2e", "\"..\" segment");
  refused("http://h/v1/./x", "\"..\" segment");
  refused("http://h/v1/%2fadmin", "0x2f");
  refused("http://h/v1/%5cadmin", "0x5c");
  refused("http://h/v1/a\r\nX-Injected: 1", "control byte 0x0d");
  refused("http://h/v1/a\nb", "control byte 0x0a");
  refused("http://h/v1/a%0d%0aX: 1", "0x0d");
  refused("http://h/v1/?q=%0a", "0x0a");
  refused("http://h/v1/?q=a b", "0x20");
  refused("http://h/v1/%zz", "two hex digits");
  refused("http://h/v1/%4", "two hex digits");
  refused("http://h/v1/\xc3\xa9", "0xc3");
  refused("http://h/v1/<script>", "0x3c");
  /* Dots inside a segment are plain names. */
  cleanup_free char *a = normalised("http://h/v1/..a/.b/a.../x.y");
  cr_assert_str_eq(a, "http://h/v1/..a/.b/a.../x.y");
}

Test(egress_url, normalised_spelling) {
  static const struct { const char *in, *out; } cases[] = {
      {"HTTP://Example.COM/A", "http://example.com/A"},
      {"http://example.com:80/", "http://example.com/"},
      {"https://example.com:443", "https://example.com/"},
      {"https://example.com:8443/x?a=1&b=%20", "https://example.com:8443/x?a=1&b=%20"},
      {"http://[::FFFF:127.0.0.1]:8080/", "http://[::ffff:127.0.0.1]:8080/"},
      {"http://[0:0:0:0:0:0:0:1]/", "http://[::1]/"},
      {"http://127.0.0.1:8080/p/", "http://127.0.0.1:8080/p/"},
      {"http://xn--bcher-kva.example/", "http://xn--bcher-kva.example/"},
      {"http://h/?", "http://h/?"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    cleanup_free char *s = normalised(cases[i].in);
    cr_assert_str_eq(s, cases[i].out, "%s", cases[i].in);
  }
  struct egress_url u;
  char *why = NULL;
  cr_assert(egress_url_parse("http://h/p?secret=1", false, &u, &why));
  cleanup_free char *red = egress_url_format(&u, true);
  cr_assert_str_eq(red, "http://h/p?[redacted]");
  egress_url_clear(&u);
}

static enum egress_addr_class cls(const char *text) {
  unsigned char a[16];
  int fam = strchr(text, ':') ? AF_INET6 : AF_INET;
  cr_assert_eq(inet_pton(fam, text, a), 1, "%s", text);
  return egress_addr_classify(fam, a);
}

Test(egress_addr, classes) {
  static const struct { const char *a; enum egress_addr_class c; } cases[] = {
      {"127.0.0.1", EGRESS_ADDR_LOOPBACK},       {"127.255.0.9", EGRESS_ADDR_LOOPBACK},
      {"::1", EGRESS_ADDR_LOOPBACK},             {"::ffff:127.0.0.1", EGRESS_ADDR_LOOPBACK},
      {"::127.0.0.1", EGRESS_ADDR_LOOPBACK},     {"64:ff9b::7f00:1", EGRESS_ADDR_LOOPBACK},
      {"169.254.169.254", EGRESS_ADDR_LINK_LOCAL}, {"::ffff:169.254.169.254", EGRESS_ADDR_LINK_LOCAL},
      {"fe80::1", EGRESS_ADDR_LINK_LOCAL},       {"febf::1", EGRESS_ADDR_LINK_LOCAL},
      {"0.0.0.0", EGRESS_ADDR_UNSPECIFIED},      {"0.1.2.3", EGRESS_ADDR_UNSPECIFIED},
      {"::", EGRESS_ADDR_UNSPECIFIED},           {"224.0.0.1", EGRESS_ADDR_MULTICAST},
      {"239.255.255.250", EGRESS_ADDR_MULTICAST}, {"255.255.255.255", EGRESS_ADDR_MULTICAST},
      {"ff02::1", EGRESS_ADDR_MULTICAST},        {"10.0.0.1", EGRESS_ADDR_PRIVATE},
      {"10.255.255.255", EGRESS_ADDR_PRIVATE},   {"172.16.0.1", EGRESS_ADDR_PRIVATE},
      {"172.31.255.255", EGRESS_ADDR_PRIVATE},   {"192.168.1.1", EGRESS_ADDR_PRIVATE},
      {"100.64.0.1", EGRESS_ADDR_PRIVATE},       {"100.127.255.255", EGRESS_ADDR_PRIVATE},
      {"fd00::1", EGRESS_ADDR_PRIVATE},          {"fc00::1", EGRESS_ADDR_PRIVATE},
      {"::ffff:10.1.2.3", EGRESS_ADDR_PRIVATE},  {"240.0.0.1", EGRESS_ADDR_RESERVED},
      {"192.0.2.1", EGRESS_ADDR_RESERVED},       {"198.18.0.1", EGRESS_ADDR_RESERVED},
      {"2001:db8::1", EGRESS_ADDR_RESERVED},     {"8.8.8.8", EGRESS_ADDR_PUBLIC},
      {"172.32.0.1", EGRESS_ADDR_PUBLIC},        {"172.15.255.255", EGRESS_ADDR_PUBLIC},
      {"100.128.0.1", EGRESS_ADDR_PUBLIC},       {"169.253.255.255", EGRESS_ADDR_PUBLIC},
      {"2606:4700::1111", EGRESS_ADDR_PUBLIC},   {"::ffff:8.8.8.8", EGRESS_ADDR_PUBLIC},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    cr_assert_eq(cls(cases[i].a), cases[i].c, "%s: %s", cases[i].a,
                 egress_addr_class_name(cls(cases[i].a)));
}

/* An allow list from JSON through the policy's own parser. */
static struct egress_config *config(const char *json, size_t *problems) {
  struct json_parse_options o = {.track_positions = true};
  cleanup_json json_t *v = json_parse(json, strlen(json), &o, NULL);
  cr_assert_not_null(v, "%s", json);
  struct policy_errors errs = {.file = "t"};
  struct egress_config *c = egress_config_parse(v, "backend", &errs);
  *problems = errs.len;
  policy_errors_free(&errs);
  return c;
}

static long match(const struct egress_config *c, const char *method, const char *url) {
  struct egress_url u;
  char *why = NULL;
  cr_assert(egress_url_parse(url, false, &u, &why), "%s: %s", url, why ? why : "");
  long e = egress_allow_match(c->allow, c->nallow, method, &u, &why);
  if (e < 0)
    cr_assert_not_null(why);
  free(why);
  egress_url_clear(&u);
  return e;
}

Test(egress_allow, prefix_method_port_scheme_host) {
  size_t n;
  struct egress_config *c = config(
      "{\"type\": \"http\", \"allow\": ["
      "{\"url\": \"http://127.0.0.1:8080/prefix/\", \"methods\": [\"GET\"]},"
      "{\"url\": \"https://api.example.com/v1\", \"methods\": [\"GET\", \"POST\"]},"
      "{\"url\": \"https://*.cdn.example/\", \"methods\": [\"GET\"]}]}", &n);
  cr_assert_eq(n, 0);
  cr_assert_eq(match(c, "GET", "http://127.0.0.1:8080/prefix/a"), 0);
  cr_assert_eq(match(c, "GET", "http://127.0.0.1:8080/prefix/"), 0);
  cr_assert_eq(match(c, "GET", "http://127.0.0.1:8080/prefix"), -1); /* the entry ends in '/' */
  cr_assert_eq(match(c, "GET", "http://127.0.0.1:8080/other"), -1);
  cr_assert_eq(match(c, "GET", "http://127.0.0.1:8080/prefixed"), -1);
  cr_assert_eq(match(c, "POST", "http://127.0.0.1:8080/prefix/a"), -1);
  cr_assert_eq(match(c, "GET", "http://127.0.0.1:8081/prefix/a"), -1);
  cr_assert_eq(match(c, "GET", "https://127.0.0.1:8080/prefix/a"), -1);
  cr_assert_eq(match(c, "GET", "http://localhost:8080/prefix/a"), -1);
  cr_assert_eq(match(c, "GET", "http://[::ffff:127.0.0.1]:8080/prefix/a"), -1);
  cr_assert_eq(match(c, "POST", "https://api.example.com/v1"), 1);
  cr_assert_eq(match(c, "POST", "https://api.example.com:443/v1/x"), 1);
  cr_assert_eq(match(c, "GET", "https://api.example.com/v1-admin"), -1);
  cr_assert_eq(match(c, "GET", "https://API.example.com/v1/x"), 1);
  cr_assert_eq(match(c, "GET", "https://api.example.com.evil/v1/x"), -1);
  cr_assert_eq(match(c, "GET", "https://a.cdn.example/x"), 2);
  cr_assert_eq(match(c, "GET", "https://a.b.cdn.example/x"), 2);
  cr_assert_eq(match(c, "GET", "https://cdn.example/x"), -1);
  cr_assert_eq(match(c, "GET", "https://evilcdn.example/x"), -1);
  egress_config_free(c);
}

Test(egress_allow, literal_address_exemption) {
  size_t n;
  struct egress_config *c = config(
      "{\"type\": \"http\", \"allow\": [{\"url\": \"http://127.0.0.1:8080/\", \"methods\": [\"GET\"]},"
      "{\"url\": \"http://localhost:8080/\", \"methods\": [\"GET\"]}]}", &n);
  cr_assert_eq(n, 0);
  unsigned char lo[4] = {127, 0, 0, 1}, md[4] = {169, 254, 169, 254}, pub[4] = {8, 8, 8, 8};
  char *why = NULL;
  cr_assert(egress_addr_permitted(&c->allow[0], "127.0.0.1", AF_INET, lo, &why));
  cr_assert(!egress_addr_permitted(&c->allow[0], "127.0.0.1", AF_INET, md, &why));
  cr_assert(strstr(why, "link-local") != NULL, "%s", why);
  free(why);
  /* A name that resolves to loopback is refused even when allowed by name. */
  cr_assert(!egress_addr_permitted(&c->allow[1], "localhost", AF_INET, lo, &why));
  cr_assert(strstr(why, "localhost resolves to 127.0.0.1") != NULL, "%s", why);
  free(why);
  cr_assert(egress_addr_permitted(&c->allow[1], "localhost", AF_INET, pub, &why));
  unsigned char mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
  cr_assert(!egress_addr_permitted(&c->allow[0], "x", AF_INET6, mapped, &why));
  free(why);
  egress_config_free(c);
}

Test(egress_header, rules) {
  char *why = NULL;
  cr_assert(egress_header_ok("X-Trace", "a\tb c", 5, &why));
  static const char *const bad[] = {"X-A\r\nEvil", "X A", "", "X:A", "X\nA"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    cr_assert(!egress_header_ok(bad[i], "v", 1, &why), "[%s]", bad[i]);
    free(why);
  }
  static const char *const framing[] = {"Host", "content-length", "Transfer-Encoding", "Connection",
                                        "UPGRADE", "te", "Trailer", "Expect", "Proxy-Authorization",
                                        "proxy-connection", "Keep-Alive"};
  for (size_t i = 0; i < sizeof framing / sizeof *framing; i++) {
    cr_assert(!egress_header_ok(framing[i], "v", 1, &why), "%s", framing[i]);
    free(why);
  }
  cr_assert(!egress_header_ok("X-A", "a\r\nX-Evil: 1", 12, &why));
  cr_assert(strstr(why, "0x0d") != NULL, "%s", why);
  free(why);
  cr_assert(!egress_header_ok("X-A", "a\nb", 3, &why));
  free(why);
  cr_assert(!egress_header_ok("X-A", "a\0b", 3, &why));
  free(why);
  cr_assert(egress_method_ok("GET") && egress_method_ok("PROPFIND"));
  cr_assert(!egress_method_ok("get") && !egress_method_ok("GET ") && !egress_method_ok("") &&
            !egress_method_ok("G\r\nET"));
}

Test(egress_config, problems) {
  static const char *const bad[] = {
      "{\"type\": \"http\"}",
      "{\"type\": \"http\", \"allow\": []}",
      "{\"type\": \"http\", \"allow\": [{\"url\": \"http://h/?q=1\", \"methods\": [\"GET\"]}]}",
      "{\"type\": \"http\", \"allow\": [{\"url\": \"http://h/\"}]}",
      "{\"type\": \"http\", \"allow\": [{\"url\": \"http://h/\", \"methods\": [\"get\"]}]}",
      "{\"type\": \"http\", \"allow\": [{\"url\": \"http://2130706433/\", \"methods\": [\"GET\"]}]}",
      "{\"type\": \"http\", \"allow\": [{\"url\": \"http://h/\", \"methods\": [\"GET\"], \"x\": 1}]}",
      "{\"type\": \"http\", \"allow\": [{\"url\": \"http://h/\", \"methods\": [\"GET\"]}], \"inject_headers\": {\"A\": \"${env:}\"}}",
      "{\"type\": \"http\", \"allow\": [{\"url\": \"http://h/\", \"methods\": [\"GET\"]}], \"inject_headers\": {\"A\": \"${env:X\"}}",
      "{\"type\": \"http\", \"allow\": [{\"url\": \"http://h/\", \"methods\": [\"GET\"]}], \"inject_headers\": {\"A\": \"${file:rel}\"}}",
      "{\"type\": \"http\", \"allow\": [{\"url\": \"http://h/\", \"methods\": [\"GET\"]}], \"inject_headers\": {\"A\": \"${home}\"}}",
      "{\"type\": \"http\", \"allow\": [{\"url\": \"http://h/\", \"methods\": [\"GET\"]}], \"inject_headers\": {\"Host\": \"x\"}}",
      "{\"type\": \"http\", \"allow\": [{\"url\": \"http://h/\", \"methods\": [\"GET\"]}], \"inject_headers\": {\"A\": \"x\\r\\nB: y\"}}",
      "{\"type\": \"http\", \"allow\": [{\"url\": \"http://h/\", \"methods\": [\"GET\"]}], \"max_response_bytes\": 99999999}",
      "{\"type\": \"http\", \"allow\": [{\"url\": \"http://h/\", \"methods\": [\"GET\"]}], \"max_redirects\": 11}",
      "{\"type\": \"http\", \"allow\": [{\"url\": \"http://h/\", \"methods\": [\"GET\"]}], \"redact_query\": 1}",
      "{\"type\": \"http\", \"allow\": [{\"url\": \"http://h/\", \"methods\": [\"GET\"]}], \"proxy\": \"x\"}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    size_t n;
    struct egress_config *c = config(bad[i], &n);
    cr_assert_gt(n, 0, "accepted: %s", bad[i]);
    egress_config_free(c);
  }
  size_t n;
  struct egress_config *c = config(
      "{\"type\": \"http\", \"allow\": [{\"url\": \"http://h/\", \"methods\": [\"GET\"]}],"
      " \"inject_headers\": {\"Authorization\": \"Bearer ${env:EGRESS_TEST_TOKEN}\"}}", &n);
  cr_assert_eq(n, 0);
  cr_assert_eq(c->max_response_bytes, EGRESS_DEFAULT_RESPONSE_BYTES);
  cr_assert_eq(c->max_request_bytes, EGRESS_DEFAULT_REQUEST_BYTES);
  cr_assert_eq(c->max_redirects, EGRESS_DEFAULT_REDIRECTS);
  cr_assert(egress_is_injected(c, "authorization"));
  struct egress_secrets s = {0};
  char *why = NULL;
  unsetenv("EGRESS_TEST_TOKEN");
  cr_assert_null(egress_inject_value(&c->inject[0], &s, &why));
  cr_assert(strstr(why, "EGRESS_TEST_TOKEN") != NULL, "%s", why);
  free(why);
  setenv("EGRESS_TEST_TOKEN", "s3cret-value", 1);
  cleanup_free char *v = egress_inject_value(&c->inject[0], &s, &why);
  cr_assert_str_eq(v, "Bearer s3cret-value");
  const char text[] = "echo: s3cret-value and Bearer s3cret-value, sec";
  size_t len;
  cleanup_free char *clean = egress_scrub(text, sizeof text - 1, &s, &len);
  cr_assert_str_eq(clean, "echo: [redacted] and [redacted], sec");
  cr_assert_eq(len, strlen(clean));
  setenv("EGRESS_TEST_TOKEN", "x\r\nEvil: 1", 1);
  cr_assert_null(egress_inject_value(&c->inject[0], &s, &why));
  cr_assert(strstr(why, "Evil") == NULL, "%s", why);
  free(why);
  egress_secrets_free(&s);
  egress_config_free(c);
}

Test(egress_policy, http_tool_in_a_policy) {
  const char *text =
      "{\"version\": 1, \"tools\": {\"fetch\": {\"backend\": {\"type\": \"http\", \"allow\": "
      "[{\"url\": \"http://127.0.0.1:8080/p/\", \"methods\": [\"GET\"]}]},"
      " \"rules\": [{\"if\": {\"arg\": \"path\", \"op\": \"prefix\", \"value\": \"/p/ok\"}, \"effect\": \"allow\"}]}}}";
  struct policy *p = NULL;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(policy_parse("/x/policy.json", text, strlen(text), &p, &err), 0, "%s",
               err ? err->msg : "");
  const struct tool *t = policy_find(p, "fetch");
  cr_assert_eq(t->backend.type, BACKEND_HTTP);
  cr_assert_not_null(t->args);
  /* The request's parts are typed and normalised by the gate: no
   * "prefix also matches .." warning for them. */
  struct policy_errors w = {.file = "t"};
  cr_assert_eq(policy_lint(p, &w), 0, "%s", w.len ? w.msgs[0] : "");
  policy_errors_free(&w);
  policy_free(p);
  const char *with_args =
      "{\"version\": 1, \"tools\": {\"fetch\": {\"backend\": {\"type\": \"http\", \"allow\": "
      "[{\"url\": \"http://h/\", \"methods\": [\"GET\"]}]}, \"args\": {\"type\": \"object\"},"
      " \"rules\": [{\"effect\": \"allow\"}]}}}";
  cleanup_error tg_error *err2 = NULL;
  cr_assert_eq(policy_parse("/x/policy.json", with_args, strlen(with_args), &p, &err2), -1);
  cr_assert(strstr(err2->msg, "arguments are fixed") != NULL, "%s", err2->msg);
}

/* Issue 38.6: one canonical form of the path and query, so that a rule on
 * "/admin/" cannot be passed by another spelling of the same path. */
Test(egress_url, canonical_form) {
  static const struct { const char *in, *out; } cases[] = {
      {"http://h/%61dmin/secret", "http://h/admin/secret"},
      {"http://h/adm%69n/", "http://h/admin/"},
      {"http://h/%41DMIN", "http://h/ADMIN"}, /* paths keep their case */
      {"http://h/a%7e%2D%5f%2e", "http://h/a~-_."},
      {"http://h/x%3a%40%2b%3D%21%24%26%27%28%29%2a%2c", "http://h/x:@+=!$&'()*,"},
      {"http://h/caf%c3%a9", "http://h/caf%C3%A9"},
      {"http://h/a%20b%3f%23%5b%25", "http://h/a%20b%3F%23%5B%25"},
      {"http://h/100%25/%25zz", "http://h/100%25/%25zz"},
      {"http://h/q?a=%2f%61%3d%3b&b=%7E", "http://h/q?a=%2Fa%3D%3B&b=~"},
      {"http://h/q?x=%2561", "http://h/q?x=%2561"}, /* a query is not a path */
      {"http://h/v1/", "http://h/v1/"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    cleanup_free char *s = normalised(cases[i].in);
    cr_assert_str_eq(s, cases[i].out, "%s", cases[i].in);
    cleanup_free char *again = normalised(s);
    cr_assert_str_eq(again, s, "the canonical form of %s is not stable", cases[i].in);
  }
}

Test(egress_url, ambiguous_paths_are_refused) {
  refused("http://h/%2561dmin/secret", "double encoding");
  refused("http://h/v1/%252e%252e/admin", "double encoding");
  refused("http://h/%25%36%31dmin/", "double encoding"); /* "%2561" only once decoded */
  refused("http://h/.%256%656", "double encoding");
  refused("http://h/v1/..;/admin", "';'");
  refused("http://h/admin;x/secret", "';'");
  refused("http://h/admin%3bx/secret", "';'");
  refused("http://h/admin%3B/secret", "';'");
  refused("http://h/v1/%2e%2e/admin", "\"..\" segment");
  refused("http://h/v1/%2E%2e/admin", "\"..\" segment");
  refused("http://h/v1/%2e/admin", "\"..\" segment");
  refused("http://h//admin/secret", "empty segment");
  refused("http://h/v1//admin", "empty segment");
  refused("http://h/v1/%2F/admin", "0x2f");
  refused("http://h/v1\\admin", "backslash");
  refused("http://h/v1/%5Cadmin", "0x5c");
  refused("http://h/v1/%c0%ae%c0%ae/admin", "not UTF-8");
  refused("http://h/v1/%ff", "not UTF-8");
  refused("http://h/v1/%e2%82", "not UTF-8");
  refused("http://h/v1/%00", "0x00");
  refused("http://h/v1/?q=%7f", "0x7f");
}

Test(egress_allow, canonical_paths_meet_the_allow_list_and_the_ceiling) {
  size_t n;
  struct egress_config *c = config(
      "{\"type\": \"http\", \"allow\": [{\"url\": \"http://h/%61pi/\", \"methods\": [\"GET\"]}]}", &n);
  cr_assert_eq(n, 0);
  cr_assert_str_eq(c->allow[0].url.path, "/api/");
  cr_assert_eq(match(c, "GET", "http://h/ap%69/x"), 0);
  cr_assert_eq(match(c, "GET", "http://h/api/x"), 0);
  cr_assert_eq(match(c, "GET", "http://h/API/x"), -1);
  egress_config_free(c);
  c = config("{\"type\": \"http\", \"allow\": [{\"url\": \"http://h/a;b/\", \"methods\": [\"GET\"]}]}", &n);
  cr_assert_eq(n, 1, "an allow entry with a ';' is a policy error");
  egress_config_free(c);
  struct egress_url p, ceil;
  char *why = NULL;
  cr_assert(egress_url_parse("http://h/%61dmin/x/", true, &p, &why));
  cr_assert(egress_url_parse("http://h/admin/", true, &ceil, &why));
  cr_assert(egress_url_within(&p, &ceil), "the same path spelled twice is within");
  egress_url_clear(&p);
  cr_assert(egress_url_parse("http://h/other/", true, &p, &why));
  cr_assert(!egress_url_within(&p, &ceil));
  egress_url_clear(&p);
  egress_url_clear(&ceil);
}

/* What the rules see and what the audit log records is the canonical
 * form, never the program's spelling. */
Test(egress_policy, rules_and_audit_see_the_canonical_url) {
  const char *text =
      "{\"version\": 1, \"tools\": {\"fetch\": {\"backend\": {\"type\": \"http\", \"allow\": "
      "[{\"url\": \"http://127.0.0.1:8080/p/\", \"methods\": [\"GET\"]}]},"
      " \"rules\": [{\"effect\": \"allow\"}]}}}";
  struct policy *p = NULL;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(policy_parse("/x/policy.json", text, strlen(text), &p, &err), 0, "%s",
               err ? err->msg : "");
  const struct tool *t = policy_find(p, "fetch");
  const char *args_text = "{\"method\": \"GET\", \"url\": \"http://127.0.0.1:8080/p/%61dmin/x?k=%76%2f\"}";
  cleanup_json json_t *args = json_parse(args_text, strlen(args_text), NULL, NULL);
  json_t *view = NULL, *audit = NULL;
  char *why = NULL;
  cr_assert_null(tool_http_prepare(t, args, &view, &audit, &why), "%s", why ? why : "");
  cr_assert_str_eq(json_string_value(json_object_get(view, "path")), "/p/admin/x");
  cr_assert_str_eq(json_string_value(json_object_get(view, "query")), "k=v%2F");
  cr_assert_str_eq(json_string_value(json_object_get(view, "url")),
                   "http://127.0.0.1:8080/p/admin/x?k=v%2F");
  cr_assert_str_eq(json_string_value(json_object_get(audit, "url")),
                   "http://127.0.0.1:8080/p/admin/x?k=v%2F");
  json_free(view);
  json_free(audit);
  policy_free(p);
}

static struct egress_secrets two_secrets(const char *a, const char *b) {
  struct egress_secrets s = {.v = xcalloc(2, sizeof(char *)), .n = 2};
  s.v[0] = xstrdup(a);
  s.v[1] = xstrdup(b);
  return s;
}

Test(egress_scrub, overlapping_secrets_leave_nothing) {
  struct egress_secrets s = two_secrets("abcdefgh", "efghijkl");
  size_t len;
  cleanup_free char *clean = egress_scrub("xxabcdefghijklyy efghijkl abcd", 30, &s, &len);
  cr_assert_str_eq(clean, "xx[redacted]yy [redacted] abcd");
  egress_secrets_free(&s);
}

/* Does text hold any 8-byte piece of secret? */
static bool holds_piece(const char *text, const char *secret) {
  for (size_t i = 0; i + 8 <= strlen(secret); i++) {
    char piece[9];
    memcpy(piece, secret + i, 8);
    piece[8] = '\0';
    if (strstr(text, piece))
      return true;
  }
  return false;
}

/* Issue 38.7: a secret at every offset around the cut never leaves a
 * piece of itself in the message. */
Test(egress_scrub, the_cut_never_splits_a_secret) {
  const char *token = "tok-0123456789abcdef0123456789abcdef";
  cleanup_free char *header = xasprintf("Bearer %s", token);
  struct egress_secrets s = two_secrets(token, header);
  for (size_t pad = EGRESS_MESSAGE_MAX - 60; pad <= EGRESS_MESSAGE_MAX + 4; pad++) {
    cleanup_free char *padding = xmalloc(pad + 1);
    memset(padding, 'p', pad);
    padding[pad] = '\0';
    cleanup_free char *msg = xasprintf("the redirect is refused: x; it pointed to http://h/%s/%s/tail",
                                       padding, header);
    cleanup_free char *m = egress_scrub_message(msg, &s);
    cr_assert_leq(strlen(m), EGRESS_MESSAGE_MAX + 3);
    cr_assert(!holds_piece(m, token), "pad %zu: %s", pad, m + EGRESS_MESSAGE_MAX - 60);
  }
  cleanup_free char *shorter = egress_scrub_message("short Bearer tok-0123456789abcdef0123456789abcdef", &s);
  cr_assert_str_eq(shorter, "short [redacted]");
  egress_secrets_free(&s);
}
