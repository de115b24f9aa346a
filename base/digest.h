/* SHA-256, tollgate's one digest: a streaming context, one-shot digests of
 * a buffer and of a descriptor, lowercase hex, and a constant-time
 * comparison of hex digests.  Every layer computes SHA-256 through this
 * module and nowhere else, so the algorithm is fetched from libcrypto
 * once per process and every libcrypto return is checked in one place.
 * (HMAC stays with its users: audit.c and checkpoint_seal.c.) */
#ifndef TOLLGATE_DIGEST_H
#define TOLLGATE_DIGEST_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

#define DIGEST_BYTES 32                  /* a SHA-256 digest */
#define DIGEST_HEX_LEN (2 * DIGEST_BYTES) /* its hex, without the NUL */
#define DIGEST_HEX_SIZE (DIGEST_HEX_LEN + 1)
#define DIGEST_TEXT_PREFIX "sha256:"       /* a digest named with its algorithm */
#define DIGEST_TEXT_SIZE (sizeof DIGEST_TEXT_PREFIX - 1 + DIGEST_HEX_SIZE)

/* A streaming SHA-256 context (opaque). */
struct digest;

/* A new context, owned (digest_free); call digest_init before feeding it.
 * Aborts when libcrypto cannot allocate one, as xmalloc does. */
struct digest *digest_new(void);

/* Free d.  Safe on NULL. */
void digest_free(struct digest *d);
void digest_freep(struct digest **d);
#define cleanup_digest __attribute__((cleanup(digest_freep)))

/* Begin a new message in d, dropping any unfinished one; a context is
 * reused by calling this again after digest_final.  0, or -1 with *err. */
int digest_init(struct digest *d, tg_error **err);

/* Feed len bytes of data (len may be 0).  0, or -1 with *err. */
int digest_update(struct digest *d, const void *data, size_t len, tg_error **err);

/* Finish the message: out gets its 32 bytes.  d needs digest_init before
 * it is fed again.  0, or -1 with *err. */
int digest_final(struct digest *d, unsigned char out[DIGEST_BYTES], tg_error **err);

/* SHA-256 of data[0..len) into out.  0, or -1 with *err. */
int digest_buffer(const void *data, size_t len, unsigned char out[DIGEST_BYTES], tg_error **err);

/* The same as lowercase hex, NUL-terminated, into out. */
int digest_buffer_hex(const void *data, size_t len, char out[DIGEST_HEX_SIZE], tg_error **err);

/* The same as "sha256:<hex>", NUL-terminated, into out: how the effective
 * config's mark and a checkpoint's seal name a config's digest. */
int digest_buffer_text(const void *data, size_t len, char out[DIGEST_TEXT_SIZE], tg_error **err);

/* SHA-256 of what fd reads from its current offset to end of file, at
 * most max_bytes: more than that fails with EFBIG rather than digesting a
 * prefix.  A read that would block fails (EAGAIN) instead of waiting.
 * This never sees a path, so it follows no link by itself: opening the
 * file safely (O_NOFOLLOW, fstat for a regular file, as
 * read_file_untrusted does) is the caller's concern.  fd stays open and
 * its offset is left at the end of what was read.  0, or -1 with *err. */
int digest_fd(int fd, size_t max_bytes, unsigned char out[DIGEST_BYTES], tg_error **err);

/* d as 64 lowercase hex digits and a NUL into out.  A caller wanting a
 * shorter name takes a prefix of it. */
void digest_hex(const unsigned char d[DIGEST_BYTES], char out[DIGEST_HEX_SIZE]);

/* Whether s[0..len) is exactly 64 lowercase hex digits (the spelling
 * digest_hex writes, the audit chain stores and the policy's
 * source_sha256 requires).  s needs no NUL. */
bool digest_hex_is_valid(const char *s, size_t len);

/* Whether the first 64 bytes of a and b are equal, in time that does not
 * depend on where they differ: for comparing a computed MAC or digest
 * with one read from untrusted input, where an early-exit memcmp would
 * let whoever supplies b learn the secret digest byte by byte from
 * timing.  Both must hold at least 64 bytes; neither needs a NUL. */
bool digest_hex_equal(const char *a, const char *b);

/* Fetch SHA-256 from libcrypto now (the first fetch initialises the
 * whole library, ~1.5 ms): a thread calls this to pay it early.  Later
 * digests, and children forked after it, reuse the fetched algorithm. */
void digest_warm_up(void);

#endif
