/* SHA-256 (base/digest.h): the NIST vectors (FIPS 180-2 appendix B) one-shot
 * and streamed in uneven chunks, a reused context, the descriptor path
 * with its bound, and the hex helpers. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/digest.h"
#include "base/util.h"

#define EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define ABC "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#define M448 "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
#define M448_HEX "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
#define MILLION_A_HEX "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"

static void hex_of(const char *data, size_t len, char out[DIGEST_HEX_SIZE]) {
  tg_error *e = NULL;
  cr_assert_eq(digest_buffer_hex(data, len, out, &e), 0, "%s", e ? e->msg : "");
}

Test(digest, nist_one_shot) {
  char hex[DIGEST_HEX_SIZE];
  hex_of("", 0, hex);
  cr_assert_str_eq(hex, EMPTY);
  hex_of("abc", 3, hex);
  cr_assert_str_eq(hex, ABC);
  hex_of(M448, strlen(M448), hex);
  cr_assert_str_eq(hex, M448_HEX);
  unsigned char raw[DIGEST_BYTES];
  cr_assert_eq(digest_buffer("abc", 3, raw, NULL), 0);
  cr_assert_eq(raw[0], 0xba);
  cr_assert_eq(raw[31], 0xad);
  char text[DIGEST_TEXT_SIZE];
  cr_assert_eq(digest_buffer_text("abc", 3, text, NULL), 0);
  cr_assert_str_eq(text, "sha256:" ABC);
}

/* A million 'a' fed in chunks of 1, 2, ... 997 bytes, cycling: the
 * chunks straddle the 64-byte block edges at every offset. */
Test(digest, million_a_streamed_unevenly) {
  static char chunk[997];
  memset(chunk, 'a', sizeof chunk);
  cleanup_digest struct digest *d = digest_new();
  tg_error *e = NULL;
  cr_assert_eq(digest_init(d, &e), 0);
  size_t left = 1000000, step = 1;
  while (left > 0) {
    size_t n = step < left ? step : left;
    cr_assert_eq(digest_update(d, chunk, n, &e), 0);
    left -= n;
    step = step % sizeof chunk + 1;
  }
  cr_assert_eq(digest_update(d, chunk, 0, &e), 0); /* an empty update changes nothing */
  unsigned char md[DIGEST_BYTES];
  cr_assert_eq(digest_final(d, md, &e), 0);
  char hex[DIGEST_HEX_SIZE];
  digest_hex(md, hex);
  cr_assert_str_eq(hex, MILLION_A_HEX);

  /* The same context, begun again, digests a new message from scratch. */
  cr_assert_eq(digest_init(d, &e), 0);
  cr_assert_eq(digest_update(d, "a", 1, &e), 0);
  cr_assert_eq(digest_update(d, "bc", 2, &e), 0);
  cr_assert_eq(digest_final(d, md, &e), 0);
  digest_hex(md, hex);
  cr_assert_str_eq(hex, ABC);
  /* Begun again with half a message in it: the half is dropped. */
  cr_assert_eq(digest_update(d, "junk", 4, &e), 0);
  cr_assert_eq(digest_init(d, &e), 0);
  cr_assert_eq(digest_final(d, md, &e), 0);
  digest_hex(md, hex);
  cr_assert_str_eq(hex, EMPTY);
}

/* A temporary file holding len bytes of data, open for reading at 0. */
static int temp_fd(const char *data, size_t len) {
  char path[] = "/tmp/test_digest.XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  unlink(path);
  cr_assert_eq(write_all(fd, data, len), 0);
  cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
  return fd;
}

Test(digest, fd) {
  size_t len = 1000000;
  cleanup_free char *a = xmalloc(len);
  memset(a, 'a', len);
  unsigned char md[DIGEST_BYTES];
  char hex[DIGEST_HEX_SIZE];
  tg_error *e = NULL;

  cleanup_close int fd = temp_fd(a, len);
  cr_assert_eq(digest_fd(fd, len, md, &e), 0, "%s", e ? e->msg : ""); /* exactly the bound */
  digest_hex(md, hex);
  cr_assert_str_eq(hex, MILLION_A_HEX);

  /* Past the bound: refused with EFBIG, never a digest of a prefix. */
  cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
  cr_assert_eq(digest_fd(fd, len - 1, md, &e), -1);
  cr_assert_eq(e->errnum, EFBIG);
  tg_error_free(&e);

  /* From the current offset: the last three bytes of "xyzabc". */
  cleanup_close int fd2 = temp_fd("xyzabc", 6);
  cr_assert_eq(lseek(fd2, 3, SEEK_SET), 3);
  cr_assert_eq(digest_fd(fd2, 16, md, &e), 0);
  digest_hex(md, hex);
  cr_assert_str_eq(hex, ABC);

  cleanup_close int empty = temp_fd("", 0);
  cr_assert_eq(digest_fd(empty, 0, md, &e), 0);
  digest_hex(md, hex);
  cr_assert_str_eq(hex, EMPTY);

  cr_assert_eq(digest_fd(-1, 16, md, &e), -1);
  cr_assert_eq(e->errnum, EBADF);
  tg_error_free(&e);
}

Test(digest, hex_helpers) {
  cr_assert(digest_hex_is_valid(ABC, strlen(ABC)));
  cr_assert(digest_hex_is_valid(ABC "\"}", 64)); /* a span of a line, no NUL after it */
  static const char *const bad[] = {
      "",
      ABC "0",
      "BA7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", /* upper case */
      "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015a",  /* 63 digits */
      "ga7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    cr_assert_not(digest_hex_is_valid(bad[i], strlen(bad[i])), "[%s]", bad[i]);
  char nul[] = ABC;
  nul[10] = '\0';
  cr_assert_not(digest_hex_is_valid(nul, 64));

  cr_assert(digest_hex_equal(ABC, ABC));
  cr_assert_not(digest_hex_equal(ABC, EMPTY));
  char other[] = ABC;
  other[63] = 'c';
  cr_assert_not(digest_hex_equal(ABC, other));
  /* Only the first 64 bytes count: no NUL is needed after them. */
  cr_assert(digest_hex_equal(ABC, ABC "\"}"));
  digest_warm_up(); /* idempotent */
  digest_warm_up();
}
