/* base64 (base/base64.h): round trips of every length around a quad, the
 * padding taken off, and the spellings that are refused. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/util.h"

Test(base64, round_trips) {
  unsigned char bytes[256];
  for (int i = 0; i < 256; i++)
    bytes[i] = (unsigned char)(255 - i);
  for (size_t n = 0; n <= 9; n++) {
    cleanup_free char *enc = base64_encode(bytes, n);
    cr_assert_eq(strlen(enc), 4 * ((n + 2) / 3));
    size_t m = 99;
    cleanup_free unsigned char *dec = base64_decode(enc, &m);
    cr_assert_not_null(dec, "%zu", n);
    cr_assert_eq(m, n);
    cr_assert(memcmp(dec, bytes, n) == 0);
  }
  cleanup_free char *enc = base64_encode("hello body", 10);
  cr_assert_str_eq(enc, "aGVsbG8gYm9keQ==");
}

Test(base64, refused) {
  static const char *const bad[] = {"a", "abc", "ab=c", "a===", "ab c", " YQ==", "YQ== ", "YQ==\n",
                                    "Y!==", "YQ=\n"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    size_t n;
    unsigned char *d = base64_decode(bad[i], &n);
    cr_assert_null(d, "[%s] was accepted", bad[i]);
  }
}
