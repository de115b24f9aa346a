/* The http backend as a policy writes it (docs/egress.md):
 *
 *   {"type": "http",
 *    "allow": [{"url": "https://api.example.com/v1/", "methods": ["GET"]}],
 *    "inject_headers": {"Authorization": "Bearer ${env:BILLING_TOKEN}"},
 *    "redact_query": true, "max_request_bytes": 65536,
 *    "max_response_bytes": 262144, "max_redirects": 5}
 */
#ifndef TOLLGATE_EGRESS_CONFIG_H
#define TOLLGATE_EGRESS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "governance/egress_check.h"
#include "governance/policy_errors.h"
#include "base/json.h"

#define EGRESS_DEFAULT_REQUEST_BYTES (64u << 10)
#define EGRESS_DEFAULT_RESPONSE_BYTES (256u << 10)
/* The child's result (the body base64-encoded) must fit the 1 MiB a
 * sandboxed tool may print. */
#define EGRESS_MAX_RESPONSE_BYTES (512u << 10)
#define EGRESS_DEFAULT_REDIRECTS 5
#define EGRESS_MAX_REDIRECTS 10

/* A header added on the host after the policy decided: name and a
 * template of literal text and ${env:NAME} / ${file:/path} references. */
struct egress_inject {
  char *name;
  char *value_template;
};

struct egress_config {
  struct egress_allow *allow;
  size_t nallow;
  struct egress_inject *inject;
  size_t ninject;
  bool redact_query; /* the audit log shows "?[redacted]" for a query */
  long long max_request_bytes;
  long long max_response_bytes;
  int max_redirects;
};

/* Parse the backend object v (its "type" already read) at path.  Every
 * problem goes to errs; returns the config (owned: egress_config_free),
 * even a partial one when there were problems. */
struct egress_config *egress_config_parse(const json_t *v, const char *path,
                                          struct policy_errors *errs);
void egress_config_free(struct egress_config *c);

/* The fixed argument schema of every http tool (owned): method, url,
 * headers, body or body_base64. */
json_t *egress_args_schema(void);

/* Is name (any case) one of the headers the host injects? */
bool egress_is_injected(const struct egress_config *c, const char *name);

/* The secrets read for one call: each value an ${env:...} or ${file:...}
 * gave and each whole injected header value, to be scrubbed from
 * whatever goes back to the program or into the log. */
struct egress_secrets {
  char **v;
  size_t n;
};
void egress_secrets_free(struct egress_secrets *s);

/* The value of an injected header, read now from the host's environment
 * or file (owned; it and the pieces it was made of are added to s), or
 * NULL with *why (owned), which never holds the secret. */
char *egress_inject_value(const struct egress_inject *h, struct egress_secrets *s, char **why);

/* Secrets shorter than this are not scrubbed (they would match by chance). */
#define EGRESS_SECRET_MIN 4
/* The longest message an http call's failure carries (bytes, before "..."). */
#define EGRESS_MESSAGE_MAX 1024

/* buf[0..len) with every occurrence of every secret of s (4 bytes or
 * longer) replaced by "[redacted]", overlapping ones as one run (owned,
 * NUL-terminated, *outlen its length). */
char *egress_scrub(const char *buf, size_t len, const struct egress_secrets *s, size_t *outlen);

/* A failure message for the program and the audit log (owned): msg
 * scrubbed as above, then cut to EGRESS_MESSAGE_MAX bytes on a UTF-8
 * boundary with "..." appended.  Scrubbing comes first so that the cut
 * can never leave part of a secret.  Text that reaches msg already cut
 * elsewhere must not carry response bytes (tollgate-http sends curl's
 * own text only for errors before the request left). */
char *egress_scrub_message(const char *msg, const struct egress_secrets *s);

#endif
