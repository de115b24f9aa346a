/* The http backend's pure checks (egress_check.h).  Every URL, the
 * program's and each redirect's, goes through egress_url_parse: one
 * strict spelling, so that what the allow list matched is what curl
 * sends.  Parsers disagree on odd spellings (numeric hosts, backslashes,
 * userinfo, encoded dots); the defence is to refuse them all rather than
 * guess which reading the other side takes. */
#include "governance/egress_check.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "base/utf8.h"
#include "base/util.h"

static bool fail(char **why, char *msg) {
  *why = msg;
  return false;
}

void egress_url_clear(struct egress_url *u) {
  free(u->scheme);
  free(u->host);
  free(u->path);
  free(u->query);
  memset(u, 0, sizeof *u);
}

static int hexval(int c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* One IPv4 part as inet_aton and WHATWG read it: 0x hex, leading-0 octal,
 * else decimal.  false when it is not a number in any of them. */
static bool ipv4_part(const char *s, size_t n, unsigned long long *v) {
  int base = 10;
  if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s += 2;
    n -= 2;
  } else if (n >= 2 && s[0] == '0') {
    base = 8;
    s++;
    n--;
  }
  if (n == 0) {
    *v = 0;
    return base == 16; /* "0x" is 0 to WHATWG */
  }
  if (n > 20)
    return false;
  unsigned long long x = 0;
  for (size_t i = 0; i < n; i++) {
    int d = hexval((unsigned char)s[i]);
    if (d < 0 || d >= base)
      return false;
    x = x * base + d;
  }
  *v = x;
  return true;
}

/* Is the last label of host a number (in any base)?  Then the whole host
 * is an IPv4 address to every URL parser that follows WHATWG, however it
 * is spelled. */
static bool looks_numeric(const char *host) {
  const char *last = strrchr(host, '.');
  last = last ? last + 1 : host;
  unsigned long long v;
  return *last && ipv4_part(last, strlen(last), &v);
}

/* host (lowercase, no dot at the end) whose last label is numeric: its
 * address, and whether it was written as the plain dotted quad. */
static bool ipv4_parse(const char *host, unsigned char addr[4], bool *canonical) {
  unsigned long long parts[4];
  size_t np = 0;
  const char *p = host;
  for (;;) {
    const char *dot = strchr(p, '.');
    size_t n = dot ? (size_t)(dot - p) : strlen(p);
    if (np == 4 || !ipv4_part(p, n, &parts[np]))
      return false;
    np++;
    if (!dot)
      break;
    p = dot + 1;
  }
  for (size_t i = 0; i + 1 < np; i++)
    if (parts[i] > 255)
      return false;
  unsigned long long last = parts[np - 1];
  if (last >= (1ULL << (8 * (5 - np))))
    return false;
  uint32_t v = 0;
  for (size_t i = 0; i + 1 < np; i++)
    v |= (uint32_t)parts[i] << (8 * (3 - i));
  v |= (uint32_t)last;
  for (int i = 0; i < 4; i++)
    addr[i] = (unsigned char)(v >> (8 * (3 - i)));
  char text[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, addr, text, sizeof text);
  *canonical = strcmp(text, host) == 0;
  return true;
}

/* The host part (between "//" and the port or path), into u. */
static bool parse_host(const char *s, size_t n, bool allow_wildcard, struct egress_url *u,
                       char **why) {
  if (n == 0)
    return fail(why, xstrdup("the URL has no host"));
  if (s[0] == '[') {
    if (s[n - 1] != ']' || n < 3 || n - 2 >= INET6_ADDRSTRLEN)
      return fail(why, xstrdup("an IPv6 host must be written [address]"));
    char text[INET6_ADDRSTRLEN];
    memcpy(text, s + 1, n - 2);
    text[n - 2] = '\0';
    if (strchr(text, '%'))
      return fail(why, xstrdup("an IPv6 zone (%...) is not allowed in a URL host"));
    if (inet_pton(AF_INET6, text, u->addr) != 1)
      return fail(why, xasprintf("[%s] is not an IPv6 address", text));
    u->family = AF_INET6;
    inet_ntop(AF_INET6, u->addr, text, sizeof text);
    u->host = xstrdup(text);
    return true;
  }
  char *host = xstrndup(s, n);
  for (char *c = host; *c; c++) {
    unsigned char ch = (unsigned char)*c;
    if (ch == '%') {
      free(host);
      return fail(why, xstrdup("a percent-encoded host is not allowed: write the host plainly"));
    }
    if (ch >= 0x80) {
      free(host);
      return fail(why, xstrdup("a non-ASCII host is not allowed: write an internationalised name in its xn-- (punycode) form"));
    }
    *c = (char)tolower(ch);
  }
  if (allow_wildcard && strncmp(host, "*.", 2) == 0) {
    u->wildcard = true;
    memmove(host, host + 2, strlen(host + 2) + 1);
  }
  size_t len = strlen(host);
  if (len == 0 || len > 253 || host[len - 1] == '.' || host[0] == '.') {
    free(host);
    return fail(why, xstrdup("the host must be a name of at most 253 bytes without a leading or trailing dot"));
  }
  for (const char *label = host; label;) {
    const char *dot = strchr(label, '.');
    size_t ln = dot ? (size_t)(dot - label) : strlen(label);
    if (ln == 0 || ln > 63) {
      free(host);
      return fail(why, xstrdup("every label of the host needs 1 to 63 bytes (no empty label, no \"..\")"));
    }
    for (size_t i = 0; i < ln; i++) {
      char ch = label[i];
      if (!(isalnum((unsigned char)ch) || ch == '-' || ch == '_')) {
        char *m = ch == '*' ? xstrdup("a wildcard is allowed only as the first label of an allow entry (\"*.example.com\")")
                            : xasprintf("the host has the byte 0x%02x, which no host name holds",
                                        (unsigned char)ch);
        free(host);
        return fail(why, m);
      }
    }
    label = dot ? dot + 1 : NULL;
  }
  if (looks_numeric(host)) {
    bool canonical = false;
    if (u->wildcard || !ipv4_parse(host, u->addr, &canonical)) {
      char *m = xasprintf("%s is neither a host name nor an IPv4 address", host);
      free(host);
      return fail(why, m);
    }
    if (!canonical) {
      char text[INET_ADDRSTRLEN];
      inet_ntop(AF_INET, u->addr, text, sizeof text);
      char *m = xasprintf("%s is the IPv4 address %s spelled another way; write it as %s", host,
                          text, text);
      free(host);
      return fail(why, m);
    }
    u->family = AF_INET;
  }
  u->host = host;
  return true;
}

static bool unreserved(unsigned char c) {
  return isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

/* Bytes a path holds plainly besides the unreserved ones and '/': RFC
 * 3986's sub-delims, ':' and '@', but not ';' (path parameters, refused). */
static bool path_plain(unsigned char c) {
  return c != '\0' && strchr("!$&'()*+,=:@", c) != NULL;
}

static bool query_plain(unsigned char c) {
  return c != '\0' && strchr("!$&'()*+,;=:@/?", c) != NULL;
}

/* The byte "%HH" at s[i] encodes, or -1 when two hex digits do not follow. */
static int pct_at(const char *s, size_t i, size_t n) {
  if (n - i < 3)
    return -1;
  int hi = hexval((unsigned char)s[i + 1]), lo = hexval((unsigned char)s[i + 2]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

static const char path_param_msg[] =
    "the path holds a ';' (also as %3B): servers strip \"path parameters\" differently (\"/v1/..;/admin\" reaches /admin on some), so it is refused";

/* An encoded byte of the path or query that is refused, or NULL. */
static char *refused_encoded(int v, bool is_path) {
  const char *what = is_path ? "path" : "query";
  if (v < 0x20 || v == 0x7f)
    return xasprintf("the %s encodes the byte 0x%02x (%%%02X), which is refused", what, v, v);
  if (!is_path)
    return NULL;
  if (v == '/' || v == '\\')
    return xasprintf("the path encodes the byte 0x%02x (%%%02X), which is refused: a server may read it as a separator",
                     v, v);
  if (v == ';')
    return xstrdup(path_param_msg);
  return NULL;
}

/* "%25HH" in the canonical path p[0..n) (checked on the canonical form:
 * "%25%36%31" becomes "%2561" only there): a '%' sent encoded before two
 * hex digits reads as another byte to a server that decodes twice. */
static bool double_encoded(const char *p, size_t n, char **why) {
  for (size_t i = 0; i + 5 <= n; i++)
    if (memcmp(p + i, "%25", 3) == 0 && hexval((unsigned char)p[i + 3]) >= 0 &&
        hexval((unsigned char)p[i + 4]) >= 0)
      return fail(why, xasprintf("the path encodes a '%%' before two hex digits (%%25%c%c, double encoding), which is refused: a server that decodes twice reads another path",
                                 p[i + 3], p[i + 4]));
  return true;
}

/* The percent-encoded bytes of the canonical path p[0..n) decoded must be
 * UTF-8: an overlong form (%C0%AE for '.') or a stray byte is read as
 * another character by some servers. */
static bool decoded_utf8(const char *p, size_t n) {
  cleanup_free char *d = xmalloc(n + 1);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    int v = p[i] == '%' ? pct_at(p, i, n) : -1;
    d[k++] = v >= 0 ? (char)v : p[i];
    if (v >= 0)
      i += 2;
  }
  return utf8_check(d, k) == k;
}

/* The path's segments, canonical: none empty ("//"), none "." or "..". */
static bool check_segments(const char *p, size_t n, char **why) {
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && p[j] != '/')
      j++;
    size_t len = j - i - 1;
    const char *seg = p + i + 1;
    if (len == 0 && j < n)
      return fail(why, xstrdup("the path has an empty segment (\"//\"), which is refused: servers merge it or keep it, so a rule could not know which path is meant"));
    if ((len == 1 && seg[0] == '.') || (len == 2 && seg[0] == '.' && seg[1] == '.'))
      return fail(why, xstrdup("the path has a \".\" or \"..\" segment (also refused as %2e): write the path it means"));
    i = j;
  }
  return true;
}

/* The path or query [s, s+n) in its one canonical spelling (*out, owned),
 * RFC 3986 section 6.2.2 and stricter (docs/egress.md "The canonical
 * URL"): an encoded unreserved byte decoded (in a path also an encoded
 * sub-delim, ':' or '@': servers route on the decoded path, so two
 * spellings would let one pass a rule the other meets), the hex of every
 * other %HH uppercase.  Refused: bytes outside RFC 3986's sets, a '%'
 * without two hex digits, an encoded control; in a path also an encoded
 * '/' or '\', a ';' plain or encoded, "%25HH", an empty, "." or ".."
 * segment however encoded, and encoded bytes that are not UTF-8. */
static bool canon_part(const char *s, size_t n, bool is_path, char **out, char **why) {
  static const char hex[] = "0123456789ABCDEF";
  const char *what = is_path ? "path" : "query";
  cleanup_free char *o = xmalloc(n + 1); /* the canonical form is never longer */
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '%') {
      int v = pct_at(s, i, n);
      if (v < 0)
        return fail(why, xasprintf("the %s has a '%%' that is not followed by two hex digits", what));
      char *bad = refused_encoded(v, is_path);
      if (bad)
        return fail(why, bad);
      i += 2;
      if (unreserved((unsigned char)v) || (is_path && path_plain((unsigned char)v))) {
        o[k++] = (char)v;
      } else {
        o[k++] = '%';
        o[k++] = hex[v >> 4];
        o[k++] = hex[v & 15];
      }
      continue;
    }
    if (unreserved(c) || c == '/' || (is_path ? path_plain(c) : query_plain(c))) {
      o[k++] = (char)c;
      continue;
    }
    if (is_path && c == ';')
      return fail(why, xstrdup(path_param_msg));
    if (c < 0x20 || c == 0x7f)
      return fail(why, xasprintf("the %s has the control byte 0x%02x (CR, LF and other controls are refused)",
                                 what, c));
    return fail(why, xasprintf("the %s has the byte 0x%02x, which a URL must percent-encode", what, c));
  }
  o[k] = '\0';
  if (is_path && (!check_segments(o, k, why) || !double_encoded(o, k, why)))
    return false;
  if (is_path && !decoded_utf8(o, k))
    return fail(why, xstrdup("the path encodes bytes that are not UTF-8 (an overlong form such as %C0%AE, a stray byte), which are refused: servers read them differently"));
  *out = o;
  o = NULL;
  return true;
}

static bool parse_port(const char *s, size_t n, int *port, char **why) {
  if (n == 0 || n > 5)
    return fail(why, xstrdup("the port must be a number from 1 to 65535"));
  int v = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isdigit((unsigned char)s[i]))
      return fail(why, xstrdup("the port must be a number from 1 to 65535"));
    v = v * 10 + (s[i] - '0');
  }
  if (v < 1 || v > 65535)
    return fail(why, xstrdup("the port must be a number from 1 to 65535"));
  *port = v;
  return true;
}

static bool parse_url(const char *url, bool allow_wildcard, struct egress_url *u, char **why) {
  size_t len = strlen(url);
  if (len > EGRESS_URL_MAX)
    return fail(why, xasprintf("the URL is longer than %d bytes", EGRESS_URL_MAX));
  if (strchr(url, '\\'))
    return fail(why, xstrdup("a backslash is not allowed in a URL"));
  if (strchr(url, '#'))
    return fail(why, xstrdup("a fragment (#...) is not allowed: it is never sent; remove it"));
  const char *sep = strstr(url, "://");
  if (sep == NULL)
    return fail(why, xstrdup("not an absolute URL: write http://host/path or https://host/path"));
  size_t sl = (size_t)(sep - url);
  if (sl == 4 && strncasecmp(url, "http", 4) == 0)
    u->scheme = xstrdup("http");
  else if (sl == 5 && strncasecmp(url, "https", 5) == 0)
    u->scheme = xstrdup("https");
  else
    /* Shown whole or not at all: a cut piece of a redirect's text could
     * be part of a secret the scrubbing no longer recognises. */
    return fail(why, sl <= 16 ? xasprintf("the scheme \"%.*s\" is not allowed: only http and https", (int)sl, url)
                              : xstrdup("the scheme is not allowed: only http and https"));
  const char *auth = sep + 3;
  size_t an = strcspn(auth, "/?");
  if (memchr(auth, '@', an))
    return fail(why, xstrdup("userinfo (user@host) is not allowed in a URL: credentials come from inject_headers"));
  const char *colon = NULL;
  if (an > 0 && auth[0] == '[') {
    const char *close = memchr(auth, ']', an);
    if (close == NULL)
      return fail(why, xstrdup("an IPv6 host must be written [address]"));
    if (close + 1 < auth + an) {
      if (close[1] != ':')
        return fail(why, xstrdup("only :port may follow an IPv6 host's ']'"));
      colon = close + 1;
    }
  } else {
    colon = memchr(auth, ':', an);
  }
  size_t hn = colon ? (size_t)(colon - auth) : an;
  if (!parse_host(auth, hn, allow_wildcard, u, why))
    return false;
  u->port = strcmp(u->scheme, "https") == 0 ? 443 : 80;
  if (colon && !parse_port(colon + 1, an - hn - 1, &u->port, why))
    return false;
  const char *rest = auth + an;
  size_t pn = strcspn(rest, "?");
  if (pn == 0)
    u->path = xstrdup("/");
  else if (!canon_part(rest, pn, true, &u->path, why))
    return false;
  if (rest[pn] == '?' && !canon_part(rest + pn + 1, strlen(rest + pn + 1), false, &u->query, why))
    return false;
  return true;
}

bool egress_url_parse(const char *url, bool allow_wildcard, struct egress_url *out, char **why) {
  memset(out, 0, sizeof *out);
  *why = NULL;
  if (parse_url(url, allow_wildcard, out, why))
    return true;
  egress_url_clear(out);
  return false;
}

char *egress_url_format(const struct egress_url *u, bool redact_query) {
  bool v6 = u->family == AF_INET6;
  bool default_port = u->port == (strcmp(u->scheme, "https") == 0 ? 443 : 80);
  char port[16] = "";
  if (!default_port)
    snprintf(port, sizeof port, ":%d", u->port);
  return xasprintf("%s://%s%s%s%s%s%s%s%s", u->scheme, u->wildcard ? "*." : "", v6 ? "[" : "",
                   u->host, v6 ? "]" : "", port, u->path,
                   u->query ? (redact_query ? "?[redacted]" : "?") : "",
                   u->query && !redact_query ? u->query : "");
}

static bool in4(const unsigned char *a, unsigned net, int bits) {
  uint32_t v = ((uint32_t)a[0] << 24) | ((uint32_t)a[1] << 16) | ((uint32_t)a[2] << 8) | a[3];
  uint32_t mask = bits == 0 ? 0 : 0xffffffffu << (32 - bits);
  return (v & mask) == (net & mask);
}

static enum egress_addr_class classify4(const unsigned char *a) {
  if (in4(a, 0x00000000, 8))
    return EGRESS_ADDR_UNSPECIFIED;
  if (in4(a, 0x7f000000, 8))
    return EGRESS_ADDR_LOOPBACK;
  if (in4(a, 0x0a000000, 8) || in4(a, 0xac100000, 12) || in4(a, 0xc0a80000, 16) ||
      in4(a, 0x64400000, 10))
    return EGRESS_ADDR_PRIVATE;
  if (in4(a, 0xa9fe0000, 16))
    return EGRESS_ADDR_LINK_LOCAL;
  if (in4(a, 0xe0000000, 4) || in4(a, 0xffffffff, 32))
    return EGRESS_ADDR_MULTICAST;
  if (in4(a, 0xf0000000, 4) || in4(a, 0xc0000000, 24) || in4(a, 0xc0000200, 24) ||
      in4(a, 0xc6120000, 15) || in4(a, 0xc6336400, 24) || in4(a, 0xcb007100, 24))
    return EGRESS_ADDR_RESERVED;
  return EGRESS_ADDR_PUBLIC;
}

enum egress_addr_class egress_addr_classify(int family, const unsigned char *a) {
  if (family == AF_INET)
    return classify4(a);
  static const unsigned char zero[16] = {0};
  static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  static const unsigned char nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
  if (memcmp(a, zero, 16) == 0)
    return EGRESS_ADDR_UNSPECIFIED;
  if (memcmp(a, zero, 15) == 0 && a[15] == 1)
    return EGRESS_ADDR_LOOPBACK;
  /* An IPv6 address that carries an IPv4 one reaches that IPv4 host
   * (mapped on a dual-stack socket, compatible, NAT64). */
  if (memcmp(a, mapped, 12) == 0 || memcmp(a, zero, 12) == 0 || memcmp(a, nat64, 12) == 0)
    return classify4(a + 12);
  if (a[0] == 0xff)
    return EGRESS_ADDR_MULTICAST;
  if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
    return EGRESS_ADDR_LINK_LOCAL;
  if ((a[0] & 0xfe) == 0xfc || (a[0] == 0xfe && (a[1] & 0xc0) == 0xc0))
    return EGRESS_ADDR_PRIVATE;
  if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0x0d && a[3] == 0xb8)
    return EGRESS_ADDR_RESERVED; /* 2001:db8::/32, documentation */
  return EGRESS_ADDR_PUBLIC;
}

const char *egress_addr_class_name(enum egress_addr_class c) {
  switch (c) {
  case EGRESS_ADDR_PUBLIC: return "public";
  case EGRESS_ADDR_LOOPBACK: return "loopback";
  case EGRESS_ADDR_PRIVATE: return "private";
  case EGRESS_ADDR_LINK_LOCAL: return "link-local (cloud metadata lives here)";
  case EGRESS_ADDR_MULTICAST: return "multicast or broadcast";
  case EGRESS_ADDR_UNSPECIFIED: return "unspecified";
  case EGRESS_ADDR_RESERVED: return "reserved";
  }
  return "unknown";
}

bool egress_addr_permitted(const struct egress_allow *entry, const char *host, int family,
                           const unsigned char *addr, char **why) {
  enum egress_addr_class c = egress_addr_classify(family, addr);
  if (c == EGRESS_ADDR_PUBLIC)
    return true;
  /* Named literally by the entry that admitted the request: the policy's
   * writer meant this very address (a local service, a test server). */
  size_t alen = family == AF_INET ? 4 : 16;
  if (entry && entry->url.family == family && memcmp(entry->url.addr, addr, alen) == 0)
    return true;
  char text[INET6_ADDRSTRLEN] = "";
  inet_ntop(family, addr, text, sizeof text);
  if (strcmp(host, text) != 0)
    return fail(why, xasprintf("%s resolves to %s, a %s address, which is refused unless an allow entry names that address literally",
                               host, text, egress_addr_class_name(c)));
  return fail(why, xasprintf("%s is a %s address, which is refused unless an allow entry names it literally",
                             text, egress_addr_class_name(c)));
}

static bool host_matches(const struct egress_url *e, const struct egress_url *u) {
  if (!e->wildcard)
    return strcmp(e->host, u->host) == 0;
  size_t hl = strlen(u->host), el = strlen(e->host);
  return u->family == 0 && hl > el + 1 && u->host[hl - el - 1] == '.' &&
         strcmp(u->host + hl - el, e->host) == 0;
}

static bool path_matches(const char *prefix, const char *path) {
  size_t n = strlen(prefix);
  if (strncmp(prefix, path, n) != 0)
    return false;
  /* "/v1" admits "/v1" and "/v1/...", not "/v1-admin". */
  return prefix[n - 1] == '/' || path[n] == '\0' || path[n] == '/';
}

long egress_allow_match(const struct egress_allow *allow, size_t n, const char *method,
                        const struct egress_url *u, char **why) {
  long url_only = -1;
  for (size_t i = 0; i < n; i++) {
    const struct egress_url *e = &allow[i].url;
    if (strcmp(e->scheme, u->scheme) != 0 || e->port != u->port || !host_matches(e, u) ||
        !path_matches(e->path, u->path))
      continue;
    for (char **m = allow[i].methods; *m; m++)
      if (strcmp(*m, method) == 0)
        return (long)i;
    if (url_only < 0)
      url_only = (long)i;
  }
  cleanup_free char *shown = egress_url_format(u, true);
  if (url_only >= 0) {
    char list[256] = "";
    for (char **m = allow[url_only].methods; *m; m++) {
      if (list[0])
        strncat(list, ", ", sizeof list - strlen(list) - 1);
      strncat(list, *m, sizeof list - strlen(list) - 1);
    }
    *why = xasprintf("%s is not allowed for %s (allowed: %s)", method, shown, list);
  } else {
    *why = xasprintf("%s %s is not in the tool's allow list", method, shown);
  }
  return -1;
}

bool egress_url_within(const struct egress_url *p, const struct egress_url *c) {
  if (strcmp(p->scheme, c->scheme) != 0 || p->port != c->port || !path_matches(c->path, p->path))
    return false;
  if (!p->wildcard)
    return host_matches(c, p);
  /* "*.a.example.com" admits infinitely many names: never within one
   * name, within "*.a.example.com" and "*.example.com" (host_matches
   * reads p's host as a name ending in ".example.com"). */
  return c->wildcard && (strcmp(p->host, c->host) == 0 || host_matches(c, p));
}

bool egress_method_ok(const char *method) {
  size_t n = strlen(method);
  if (n == 0 || n > 16)
    return false;
  for (size_t i = 0; i < n; i++)
    if (method[i] < 'A' || method[i] > 'Z')
      return false;
  return true;
}

bool egress_header_ok(const char *name, const char *value, size_t value_len, char **why) {
  size_t n = strlen(name);
  if (n == 0 || n > 256)
    return fail(why, xstrdup("a header name must have 1 to 256 bytes"));
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)name[i];
    if (!(isalnum(c) || strchr("!#$%&'*+-.^_`|~", c)))
      return fail(why, xasprintf("the header name \"%.64s\" has the byte 0x%02x, which a header name cannot hold (CR and LF included)",
                                 name, c));
  }
  static const char *const framing[] = {"host", "content-length", "transfer-encoding",
                                        "connection", "upgrade", "te", "trailer",
                                        "keep-alive", "expect", NULL};
  for (const char *const *f = framing; *f; f++)
    if (strcasecmp(name, *f) == 0)
      return fail(why, xasprintf("the header %s frames or routes the request and is set by tollgate, never by the program",
                                 name));
  if (strncasecmp(name, "proxy-", 6) == 0)
    return fail(why, xasprintf("the header %s is refused: requests go to the server directly", name));
  if (value_len > 8192)
    return fail(why, xasprintf("the value of the header %s is longer than 8192 bytes", name));
  for (size_t i = 0; i < value_len; i++) {
    unsigned char c = (unsigned char)value[i];
    if ((c < 0x20 && c != '\t') || c == 0x7f)
      return fail(why, xasprintf("the value of the header %s has the control byte 0x%02x (CR, LF and NUL are refused)",
                                 name, c));
  }
  return true;
}
