/* SHA-256 through libcrypto (base/digest.h). */
#include "base/digest.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct digest {
  EVP_MD_CTX *ctx;
};

/* SHA-256 fetched once: EVP_sha256() handed to EVP_DigestInit_ex makes
 * OpenSSL 3 fetch the algorithm implicitly on every message (1.6 us
 * against 0.8 us per 450-byte audit record, docs/performance.md finding
 * 1).  Never freed: it lives as long as the process, and a forked child
 * inherits it.  Should the explicit fetch fail, EVP_sha256() is tried, and
 * digest_init reports it if that fails too. */
static EVP_MD *sha256_fetched;
static void fetch_sha256(void) { sha256_fetched = EVP_MD_fetch(NULL, "SHA256", NULL); }
static const EVP_MD *sha256_md(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, fetch_sha256);
  return sha256_fetched ? sha256_fetched : EVP_sha256();
}

void digest_warm_up(void) { (void)sha256_md(); }

struct digest *digest_new(void) {
  struct digest *d = malloc(sizeof *d);
  if (d == NULL)
    abort();
  d->ctx = EVP_MD_CTX_new();
  if (d->ctx == NULL)
    abort(); /* only an allocation can fail here */
  return d;
}

void digest_free(struct digest *d) {
  if (d == NULL)
    return;
  EVP_MD_CTX_free(d->ctx);
  free(d);
}

void digest_freep(struct digest **d) { digest_free(*d); }

int digest_init(struct digest *d, tg_error **err) {
  if (EVP_DigestInit_ex(d->ctx, sha256_md(), NULL) != 1)
    return tg_error_set(err, 0, "SHA-256 is not available from libcrypto");
  return 0;
}

int digest_update(struct digest *d, const void *data, size_t len, tg_error **err) {
  if (EVP_DigestUpdate(d->ctx, data, len) != 1)
    return tg_error_set(err, 0, "SHA-256: libcrypto refused the input");
  return 0;
}

int digest_final(struct digest *d, unsigned char out[DIGEST_BYTES], tg_error **err) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(d->ctx, md, &n) != 1 || n != DIGEST_BYTES)
    return tg_error_set(err, 0, "SHA-256: libcrypto could not finish the digest");
  memcpy(out, md, DIGEST_BYTES);
  return 0;
}

int digest_buffer(const void *data, size_t len, unsigned char out[DIGEST_BYTES], tg_error **err) {
  cleanup_digest struct digest *d = digest_new();
  if (digest_init(d, err) < 0 || digest_update(d, data, len, err) < 0 || digest_final(d, out, err) < 0)
    return -1;
  return 0;
}

int digest_buffer_hex(const void *data, size_t len, char out[DIGEST_HEX_SIZE], tg_error **err) {
  unsigned char md[DIGEST_BYTES];
  if (digest_buffer(data, len, md, err) < 0)
    return -1;
  digest_hex(md, out);
  return 0;
}

int digest_buffer_text(const void *data, size_t len, char out[DIGEST_TEXT_SIZE], tg_error **err) {
  memcpy(out, DIGEST_TEXT_PREFIX, sizeof DIGEST_TEXT_PREFIX - 1);
  return digest_buffer_hex(data, len, out + sizeof DIGEST_TEXT_PREFIX - 1, err);
}

int digest_fd(int fd, size_t max_bytes, unsigned char out[DIGEST_BYTES], tg_error **err) {
  cleanup_digest struct digest *d = digest_new();
  if (digest_init(d, err) < 0)
    return -1;
  unsigned char buf[16384];
  size_t total = 0;
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return tg_error_set(err, errno, "SHA-256: read");
    if (n == 0)
      break;
    /* Bounded: a file growing under us (or a huge one) is refused, not
     * digested for as long as it takes. */
    if ((size_t)n > max_bytes - total)
      return tg_error_set(err, EFBIG, "SHA-256: the input holds more than %zu bytes", max_bytes);
    total += (size_t)n;
    if (digest_update(d, buf, (size_t)n, err) < 0)
      return -1;
  }
  return digest_final(d, out, err);
}

void digest_hex(const unsigned char d[DIGEST_BYTES], char out[DIGEST_HEX_SIZE]) {
  /* By table, not snprintf: 32 snprintf calls per audit record showed in
   * the sidecar's profile (vfprintf, ~2 % of its CPU per call). */
  static const char hex[] = "0123456789abcdef";
  for (size_t i = 0; i < DIGEST_BYTES; i++) {
    out[2 * i] = hex[d[i] >> 4];
    out[2 * i + 1] = hex[d[i] & 0xf];
  }
  out[DIGEST_HEX_LEN] = '\0';
}

bool digest_hex_is_valid(const char *s, size_t len) {
  if (len != DIGEST_HEX_LEN)
    return false;
  for (size_t i = 0; i < len; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return false;
  return true;
}

bool digest_hex_equal(const char *a, const char *b) {
  return CRYPTO_memcmp(a, b, DIGEST_HEX_LEN) == 0;
}
