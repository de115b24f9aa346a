/* tollgate-http: one HTTP request, made with libcurl, for the http tool
 * backend (docs/egress.md).  The gate runs it through sandbox_run, as the
 * tools' uid in namespaces of its own, once per request and once per
 * redirect hop.  It lives apart from build/tollgate so that tollgate, exec'd
 * for every runtime call, never loads libcurl and its TLS stack.
 *
 * stdin:  {"method", "url", "host", "port", "address", "headers": ["Name: value", ...],
 *          "body_base64"?, "max_response_bytes", "timeout_ms"}
 * stdout: {"status", "headers": [[name, value], ...], "body_base64",
 *          "bytes_sent", "bytes_received"}  or  {"error": KIND, "message"}
 *          where KIND is too_big, timeout or failed.
 *
 * The gate has already checked everything (allow list, addresses,
 * headers); this program enforces what only the connection can: it
 * connects to the one address the gate checked and nowhere else (the name
 * is pinned with CURLOPT_RESOLVE and every socket's address is compared
 * with it before connect), follows no redirect (the gate checks each hop),
 * speaks http and https only, uses no proxy, and stops reading past the
 * size limit or the time limit. */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/json.h"
#include "base/util.h"

#define INPUT_MAX (40u << 20)
#define HEADERS_MAX (64u << 10)

struct fetch {
  int family;
  unsigned char addr[16];
  int port;
  char *body;
  size_t len, max;
  bool too_big;
  struct json_buf headers; /* [[name, value], ...] being built */
  size_t header_bytes;
  bool headers_too_big;
};

static void emit_error(const char *kind, const char *message) {
  struct json_buf b = {0};
  json_buf_lit(&b, "{\"error\":");
  json_buf_cstr(&b, kind);
  json_buf_lit(&b, ",\"message\":");
  json_buf_cstr(&b, message);
  json_buf_lit(&b, "}\n");
  (void)!write_all(1, b.s, b.len);
  free(b.s);
}

static size_t on_body(char *data, size_t size, size_t n, void *ctx) {
  struct fetch *f = ctx;
  size_t len = size * n;
  if (f->len + len > f->max) {
    f->too_big = true;
    return 0; /* abort: CURLE_WRITE_ERROR */
  }
  f->body = xrealloc(f->body, f->len + len + 1);
  memcpy(f->body + f->len, data, len);
  f->len += len;
  return len;
}

/* Header lines of the final response only: an interim one (100 Continue)
 * starts a new status line, which resets the list. */
static size_t on_header(char *data, size_t size, size_t n, void *ctx) {
  struct fetch *f = ctx;
  size_t len = size * n;
  f->header_bytes += len;
  if (f->header_bytes > HEADERS_MAX) {
    f->headers_too_big = true;
    return 0;
  }
  if (len >= 5 && memcmp(data, "HTTP/", 5) == 0) {
    f->headers.len = 0;
    json_buf_lit(&f->headers, "[");
    return len;
  }
  const char *colon = memchr(data, ':', len);
  if (colon == NULL)
    return len;
  size_t nl = (size_t)(colon - data), vs = nl + 1;
  while (vs < len && (data[vs] == ' ' || data[vs] == '\t'))
    vs++;
  size_t ve = len;
  while (ve > vs && (data[ve - 1] == '\r' || data[ve - 1] == '\n' || data[ve - 1] == ' '))
    ve--;
  if (f->headers.len > 1)
    json_buf_lit(&f->headers, ",");
  json_buf_lit(&f->headers, "[");
  json_buf_string(&f->headers, data, nl);
  json_buf_lit(&f->headers, ",");
  json_buf_string(&f->headers, data + vs, ve - vs);
  json_buf_lit(&f->headers, "]");
  return len;
}

/* The last line of defence for the pinning: curl may only ever open a
 * socket to the address the gate checked. */
static curl_socket_t on_open_socket(void *ctx, curlsocktype purpose, struct curl_sockaddr *a) {
  const struct fetch *f = ctx;
  bool same = false;
  if (purpose == CURLSOCKTYPE_IPCXN && a->family == f->family) {
    if (a->family == AF_INET) {
      const struct sockaddr_in *in = (const struct sockaddr_in *)&a->addr;
      same = memcmp(&in->sin_addr, f->addr, 4) == 0 && ntohs(in->sin_port) == f->port;
    } else if (a->family == AF_INET6) {
      const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&a->addr;
      same = memcmp(&in6->sin6_addr, f->addr, 16) == 0 && ntohs(in6->sin6_port) == f->port;
    }
  }
  if (!same)
    return CURL_SOCKET_BAD;
  return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

static void emit_result(CURL *h, struct fetch *f, size_t sent) {
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  cleanup_free char *b64 = base64_encode(f->body ? f->body : "", f->len);
  struct json_buf b = {0};
  json_buf_raw(&b, "{\"status\":", 10);
  char num[64];
  json_buf_raw(&b, num, (size_t)snprintf(num, sizeof num, "%ld", status));
  json_buf_lit(&b, ",\"headers\":");
  if (f->headers.len == 0)
    json_buf_lit(&b, "[]");
  else {
    json_buf_raw(&b, f->headers.s, f->headers.len);
    json_buf_lit(&b, "]");
  }
  json_buf_lit(&b, ",\"body_base64\":");
  json_buf_cstr(&b, b64);
  json_buf_raw(&b, num, (size_t)snprintf(num, sizeof num, ",\"bytes_sent\":%zu,\"bytes_received\":%zu}\n",
                                         sent, f->len));
  (void)!write_all(1, b.s, b.len);
  free(b.s);
}

/* Did r end the transfer before any request byte left?  Only then is
 * curl's own text (errbuf) passed on: after it, that text may quote what
 * the server answered, and curl cuts it at CURL_ERROR_SIZE, where a piece
 * of an echoed credential would no longer be recognised and scrubbed by
 * the gate.  Later errors get curl's fixed text for the code. */
static bool before_request(CURLcode r) {
  return r == CURLE_COULDNT_RESOLVE_HOST || r == CURLE_COULDNT_CONNECT ||
         r == CURLE_SSL_CONNECT_ERROR || r == CURLE_PEER_FAILED_VERIFICATION ||
         r == CURLE_SSL_CACERT_BADFILE || r == CURLE_SSL_CERTPROBLEM;
}

static int run(const json_t *in) {
  const char *method = json_string_value(json_object_get(in, "method"));
  const char *url = json_string_value(json_object_get(in, "url"));
  const char *host = json_string_value(json_object_get(in, "host"));
  const char *address = json_string_value(json_object_get(in, "address"));
  long long port = 0, max = 0, timeout = 0;
  struct fetch f = {0};
  if (!method || !url || !host || !address ||
      !json_integer_value(json_object_get(in, "port"), &port) ||
      !json_integer_value(json_object_get(in, "max_response_bytes"), &max) ||
      !json_integer_value(json_object_get(in, "timeout_ms"), &timeout) || timeout < 1) {
    emit_error("failed", "tollgate-http: a malformed request from the gate");
    return 1;
  }
  f.family = strchr(address, ':') ? AF_INET6 : AF_INET;
  if (inet_pton(f.family, address, f.addr) != 1) {
    emit_error("failed", "tollgate-http: the pinned address is not an address");
    return 1;
  }
  f.port = (int)port;
  f.max = (size_t)max;
  size_t body_len = 0;
  cleanup_free unsigned char *body = NULL;
  const char *b64 = json_string_value(json_object_get(in, "body_base64"));
  if (b64 && (body = base64_decode(b64, &body_len)) == NULL) {
    emit_error("failed", "tollgate-http: the request body is not base64");
    return 1;
  }
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    emit_error("failed", "libcurl failed to initialise");
    return 1;
  }
  CURL *h = curl_easy_init();
  if (h == NULL) {
    emit_error("failed", "libcurl failed to initialise");
    return 1;
  }
  char errbuf[CURL_ERROR_SIZE] = "";
  /* A name is pinned to the address the gate resolved and checked; an
   * address literal ("host" empty) needs no resolving at all. */
  cleanup_free char *pin = strchr(address, ':') ? xasprintf("%s:%lld:[%s]", host, port, address)
                                                : xasprintf("%s:%lld:%s", host, port, address);
  struct curl_slist *resolve = host[0] ? curl_slist_append(NULL, pin) : NULL;
  struct curl_slist *headers = curl_slist_append(NULL, "Expect:");
  const json_t *hs = json_object_get(in, "headers");
  for (size_t i = 0; i < json_array_len(hs); i++)
    headers = curl_slist_append(headers, json_string_value(json_array_get(hs, i)));
  bool ok = (resolve || !host[0]) && headers;
  /* Every option is checked: one that does not take leaves a weaker
   * request, which is not made. */
  ok = ok && curl_easy_setopt(h, CURLOPT_URL, url) == CURLE_OK;
  ok = ok && curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK;
  ok = ok && curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https") == CURLE_OK;
  ok = ok && curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L) == CURLE_OK;
  ok = ok && curl_easy_setopt(h, CURLOPT_PROXY, "") == CURLE_OK;
  ok = ok && curl_easy_setopt(h, CURLOPT_NOPROXY, "*") == CURLE_OK;
  ok = ok && (!resolve || curl_easy_setopt(h, CURLOPT_RESOLVE, resolve) == CURLE_OK);
  ok = ok && curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, on_open_socket) == CURLE_OK;
  ok = ok && curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, &f) == CURLE_OK;
  ok = ok && curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers) == CURLE_OK;
  ok = ok && curl_easy_setopt(h, CURLOPT_USERAGENT, "tollgate-http") == CURLE_OK;
  ok = ok && curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) == CURLE_OK;
  ok = ok && curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)timeout) == CURLE_OK;
  ok = ok && curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(timeout < 10000 ? timeout : 10000)) == CURLE_OK;
  ok = ok && curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)max) == CURLE_OK;
  ok = ok && curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body) == CURLE_OK;
  ok = ok && curl_easy_setopt(h, CURLOPT_WRITEDATA, &f) == CURLE_OK;
  ok = ok && curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header) == CURLE_OK;
  ok = ok && curl_easy_setopt(h, CURLOPT_HEADERDATA, &f) == CURLE_OK;
  ok = ok && curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf) == CURLE_OK;
  if (strcmp(method, "HEAD") == 0)
    ok = ok && curl_easy_setopt(h, CURLOPT_NOBODY, 1L) == CURLE_OK;
  else if (strcmp(method, "GET") != 0 || body)
    ok = ok && curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method) == CURLE_OK;
  if (body) {
    ok = ok && curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len) == CURLE_OK;
    ok = ok && curl_easy_setopt(h, CURLOPT_POSTFIELDS, body) == CURLE_OK;
  }
  int rc = 0;
  if (!ok) {
    emit_error("failed", "libcurl refused an option tollgate needs (a libcurl older than 7.85?)");
    rc = 1;
  } else {
    CURLcode r = curl_easy_perform(h);
    if (f.too_big || r == CURLE_FILESIZE_EXCEEDED) {
      cleanup_free char *m = xasprintf("the response is larger than max_response_bytes (%lld)", max);
      emit_error("too_big", m);
    } else if (f.headers_too_big) {
      emit_error("failed", "the response headers are larger than 64 KiB");
    } else if (r == CURLE_OPERATION_TIMEDOUT) {
      emit_error("timeout", errbuf[0] ? errbuf : curl_easy_strerror(r));
    } else if (r != CURLE_OK) {
      emit_error("failed", before_request(r) && errbuf[0] ? errbuf : curl_easy_strerror(r));
    } else {
      emit_result(h, &f, body_len);
    }
  }
  curl_slist_free_all(resolve);
  curl_slist_free_all(headers);
  curl_easy_cleanup(h);
  curl_global_cleanup();
  free(f.body);
  free(f.headers.s);
  return rc;
}

int main(void) {
  cleanup_free char *buf = NULL;
  ssize_t n = read_all_bounded(0, INPUT_MAX, &buf);
  if (n < 0) {
    emit_error("failed", "tollgate-http: cannot read the request on stdin");
    return 1;
  }
  cleanup_error tg_error *err = NULL;
  json_t *in = json_parse(buf, (size_t)n, NULL, &err);
  if (in == NULL) {
    emit_error("failed", "tollgate-http: the request on stdin is not JSON");
    return 1;
  }
  int rc = run(in);
  json_free(in);
  return rc;
}
