/* The pure checks of the http backend (docs/egress.md): a strict URL
 * parser, the address classes that are refused (SSRF), the allow list
 * match and the header rules.  No I/O, no DNS: everything here can be
 * unit-tested with hostile input, and the same code checks the program's
 * request and every redirect hop. */
#ifndef TOLLGATE_EGRESS_CHECK_H
#define TOLLGATE_EGRESS_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#define EGRESS_URL_MAX 8192

/* A parsed URL in its one canonical spelling: scheme lowercase, host
 * lowercase (a name), a dotted quad (IPv4) or inet_ntop's text (IPv6,
 * without brackets), the port always set (80/443 by default), the path
 * and query percent-encoding normalised (egress_url_parse).  The allow
 * list, the rules, the ceilings, the audit log and the request sent all
 * use this form, so that what was checked is what is sent.  Every string
 * is owned (egress_url_clear). */
struct egress_url {
  char *scheme; /* "http" or "https" */
  char *host;
  bool wildcard;      /* an allow entry's "*.example.com": host holds "example.com" */
  int family;         /* AF_INET or AF_INET6 for an address literal, else 0 */
  unsigned char addr[16];
  int port;
  char *path;  /* begins with '/' */
  char *query; /* without the '?'; NULL when the URL has none */
};

/* Parse url strictly into its canonical form.  The path and query: an
 * encoded unreserved byte (ALPHA DIGIT - . _ ~) is decoded, in the path
 * also an encoded sub-delim, ':' or '@' (servers route on the decoded
 * path); every other %HH keeps its byte with uppercase hex.  Refused
 * (false, *why an owned message naming the problem and the fix): another
 * scheme, userinfo (user@host), a backslash, a fragment, a
 * percent-encoded, non-ASCII or empty host label, a trailing dot, an IPv4
 * address not written as a plain dotted quad (2130706433, 0x7f.1,
 * 0177.0.0.1, 127.1), an IPv6 zone, a bad port, a byte outside RFC
 * 3986's sets in the path or query (spaces, CR, LF, controls, non-ASCII),
 * a '%' without two hex digits, a percent-encoded control; in the path
 * also an encoded '/' or '\', a ';' (plain or %3B: path parameters),
 * "%25HH" (double encoding), an empty segment ("//"), a "." or ".."
 * segment (also as %2e), and encoded bytes that are not UTF-8 (%C0%AE).
 * Parsing the formatted result again gives the same URL.  allow_wildcard
 * admits a leading "*." label (allow entries only). */
bool egress_url_parse(const char *url, bool allow_wildcard, struct egress_url *out, char **why);
void egress_url_clear(struct egress_url *u);

/* scheme://host[:port]path[?query] (owned); the port only when it is not
 * the scheme's default; with redact_query a query becomes "?[redacted]". */
char *egress_url_format(const struct egress_url *u, bool redact_query);

/* The address classes.  Only EGRESS_ADDR_PUBLIC may be reached unless the
 * allow entry names the literal address. */
enum egress_addr_class {
  EGRESS_ADDR_PUBLIC,
  EGRESS_ADDR_LOOPBACK,    /* 127/8, ::1 */
  EGRESS_ADDR_PRIVATE,     /* 10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7, fec0::/10 */
  EGRESS_ADDR_LINK_LOCAL,  /* 169.254/16 (cloud metadata), fe80::/10 */
  EGRESS_ADDR_MULTICAST,   /* 224/4, ff00::/8, 255.255.255.255 */
  EGRESS_ADDR_UNSPECIFIED, /* 0/8, :: */
  EGRESS_ADDR_RESERVED,    /* 240/4, 192.0.0/24, 198.18/15, 192.0.2/24 and the other documentation nets */
};

/* Classify an address (family AF_INET: 4 bytes, AF_INET6: 16).  An IPv6
 * address that carries an IPv4 one (::ffff:a.b.c.d, ::a.b.c.d,
 * 64:ff9b::a.b.c.d) is classified by the IPv4 address it carries. */
enum egress_addr_class egress_addr_classify(int family, const unsigned char *addr);
const char *egress_addr_class_name(enum egress_addr_class c);

/* One entry of a backend's "allow" list. */
struct egress_allow {
  struct egress_url url; /* no query */
  char **methods;        /* NULL-terminated, uppercase */
};

/* The entry that admits method on u (its index), or -1 with *why (owned)
 * saying what is allowed instead.  Scheme, host and port must be equal
 * (a wildcard entry matches any name ending in ".<host>", never the
 * bare host nor an address); the path must equal the entry's path or
 * continue it at a '/' boundary. */
long egress_allow_match(const struct egress_allow *allow, size_t n, const char *method,
                        const struct egress_url *u, char **why);

/* Does every URL the allow entry URL p admits pass entry URL c too (the
 * policy ceilings' test, governance/ceiling_backend.c)?  Decided with the
 * matching above: the same scheme and port; p's path is c's or continues
 * it at a '/' boundary (then every path p admits, c admits); p's host
 * matches c's as a request's would, and a wildcard p only under a
 * wildcard c with the same or a shorter suffix.  A literal address is
 * thus within only the same literal, so p reaches a non-public address
 * only where c names it too. */
bool egress_url_within(const struct egress_url *p, const struct egress_url *c);

/* May the entry's URL reach this resolved address?  A public address,
 * yes; any other class only when the entry's host is that very address
 * written literally.  false with *why (owned) naming the class. */
bool egress_addr_permitted(const struct egress_allow *entry, const char *host, int family,
                           const unsigned char *addr, char **why);

/* A request header the program may send: a token name (RFC 9110), a
 * value without CR, LF, NUL or other controls (tab is fine), neither too
 * long, and not one that frames or routes the request (Host,
 * Content-Length, Transfer-Encoding, Connection, Upgrade, TE, Trailer,
 * Keep-Alive, Expect, Proxy-*).  false with *why (owned). */
bool egress_header_ok(const char *name, const char *value, size_t value_len, char **why);

/* A method: 1 to 16 uppercase letters. */
bool egress_method_ok(const char *method);

#endif
