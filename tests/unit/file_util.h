/* A file for a unit test to read: DIR/NAME holds TEXT with MODE, or the
 * test fails.  (The gate, args and anomaly suites each write their policy
 * and tool scripts this way.) */
#ifndef TOLLGATE_TEST_FILE_UTIL_H
#define TOLLGATE_TEST_FILE_UTIL_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <sys/stat.h>

#include "base/util.h"

static inline void write_text_in(const char *dir, const char *name, const char *text, mode_t mode) {
  cleanup_free char *p = xasprintf("%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  cr_assert_not_null(f, "%s", p);
  cr_assert_geq(fputs(text, f), 0, "%s", p);
  cr_assert_eq(fclose(f), 0, "%s", p);
  cr_assert_eq(chmod(p, mode), 0, "%s", p);
}

#endif
