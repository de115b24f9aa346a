/* runsc release detection: parsing, the platform it implies, and the
 * per-binary cache (a changed binary is asked again). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim/lifecycle/runsc_version.h"
#include "base/util.h"

Test(runsc_version, parses_debian_upstream_and_unknown) {
  const struct {
    const char *text;
    unsigned date;
  } cases[] = {
      {"runsc version 0.0~20221219.0\nspec: 1.0.2-dev\n", 20221219},
      {"runsc version 0.0~20240729.0\nspec: 1.0.2-dev\n", 20240729},
      {"runsc version release-20250512.0\nspec: 1.1.0\n", 20250512},
      {"runsc version VERSION_MISSING\nspec: 1.1.0\n", 0},
      {"runsc version 0.0~99999999.0\n", 0}, /* not a date */
      {"runsc version 0.0~2024072.0\n", 0},  /* seven digits */
      {"spec: 20240729\n", 0},               /* not the version line */
      {"", 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct runsc_version v;
    runsc_version_parse(cases[i].text, &v);
    cr_expect_eq(v.date, cases[i].date, "[%s]: %u", cases[i].text, v.date);
    cr_expect_null(strchr(v.text, '\n'), "only the first line is kept");
    runsc_version_free(&v);
  }
}

/* Excerpts of the two releases' `runsc flags`, as Debian ships them. */
static const char flags_20221219[] =
    "  -oci-seccomp\n    \tEnables loading OCI seccomp filters inside the sandbox.\n"
    "  -platform string\n    \tspecifies which platform to use: ptrace (default), kvm. (default \"ptrace\")\n"
    "  -platform_device_path string\n    \tpath to a platform-specific device file\n";
static const char flags_20240729[] =
    "  -directfs\n    \tdirectly access the container filesystems from the sentry. Sentry runs with higher privileges. (default true)\n"
    "  -directfs-fstat\n    \tnot the same flag\n"
    "  -platform string\n    \tspecifies which platform to use: systrap (default), ptrace, kvm. (default \"systrap\")\n";

Test(runsc_version, flags_list_systrap_and_directfs) {
  struct runsc_version v = {0};
  runsc_flags_parse(flags_20221219, &v);
  cr_expect_not(v.systrap);
  cr_expect_not(v.directfs);
  runsc_flags_parse(flags_20240729, &v);
  cr_expect(v.systrap);
  cr_expect(v.directfs);
  runsc_flags_parse(NULL, &v);
  cr_expect_not(v.systrap || v.directfs);
  /* a mention in some other flag's help is not the flag */
  runsc_flags_parse("  -x\n    \tsee -directfs and systrap\n", &v);
  cr_expect_not(v.systrap || v.directfs);
}

Test(runsc_version, platform_auto_explicit_and_refused) {
  struct runsc_version old = {.date = 20221219, .text = "runsc version 0.0~20221219.0"};
  struct runsc_version new = {.date = 20240729, .text = "runsc version 0.0~20240729.0",
                              .systrap = true, .directfs = true};
  struct runsc_version unknown = {.date = 0, .text = ""};
  tg_error *err = NULL;
  cr_assert_str_eq(runsc_platform_for(&old, "auto", &err), "ptrace");
  cr_assert_str_eq(runsc_platform_for(&new, "auto", &err), "ptrace");
  cr_assert_str_eq(runsc_platform_for(&new, NULL, &err), "ptrace");
  cr_assert_str_eq(runsc_platform_for(&new, "systrap", &err), "systrap");
  cr_assert_str_eq(runsc_platform_for(&unknown, "auto", &err), "ptrace");
  /* an explicit choice is the host's: kept as written */
  cr_assert_str_eq(runsc_platform_for(&new, "ptrace", &err), "ptrace");
  cr_assert_str_eq(runsc_platform_for(&old, "kvm", &err), "kvm");
  cr_assert_str_eq(runsc_platform_for(&unknown, "systrap", &err), "systrap");
  cr_assert_null(err);
  cr_assert_null(runsc_platform_for(&old, "systrap", &err));
  cr_assert(strstr(err->msg, "auto"), "%s", err->msg);
  tg_error_free(&err);
}

/* A fake runsc that counts how often it is asked. */
static void write_fake(const char *path, const char *counter, const char *version) {
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fprintf(f,
          "#!/bin/sh\necho x >>%s\n"
          "[ \"$1\" = flags ] && { echo '  -directfs'; exit 0; }\n"
          "echo 'runsc version %s'\n",
          counter, version);
  fclose(f);
  chmod(path, 0755);
}

static int lines_in(const char *path) {
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return 0;
  int n = 0, ch;
  while ((ch = fgetc(f)) != EOF)
    n += ch == '\n';
  fclose(f);
  return n;
}

Test(runsc_version, cached_per_binary_and_asked_again_when_it_changes) {
  char dir[] = "/tmp/tg-unit-rv.XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  cleanup_free char *bin = xasprintf("%s/runsc", dir);
  cleanup_free char *counter = xasprintf("%s/asked", dir);
  cleanup_free char *cache = xasprintf("%s/cache", dir);
  write_fake(bin, counter, "0.0~20221219.0");
  struct runsc_version v;
  for (int i = 0; i < 3; i++) {
    cr_assert_eq(runsc_version_of(bin, cache, &v, NULL), 0);
    cr_assert_eq(v.date, 20221219);
    runsc_version_free(&v);
  }
  cr_assert_eq(lines_in(counter), 2, "asked once (--version, flags), then cached");
  /* An upgrade in place (dpkg writes a new file): asked again. */
  cleanup_free char *tmp = xasprintf("%s/runsc.new", dir);
  write_fake(tmp, counter, "0.0~20240729.0");
  cr_assert_eq(rename(tmp, bin), 0);
  cr_assert_eq(runsc_version_of(bin, cache, &v, NULL), 0);
  cr_assert_eq(v.date, 20240729);
  cr_assert(v.directfs);
  runsc_version_free(&v);
  cr_assert_eq(lines_in(counter), 4);
  /* No cache directory: asked every time, still answered. */
  cr_assert_eq(runsc_version_of(bin, NULL, &v, NULL), 0);
  cr_assert_eq(v.date, 20240729);
  runsc_version_free(&v);
  cr_assert_eq(lines_in(counter), 6);
  /* A missing binary is the one error. */
  tg_error *err = NULL;
  cleanup_free char *gone = xasprintf("%s/none", dir);
  cr_assert_lt(runsc_version_of(gone, cache, &v, &err), 0);
  tg_error_free(&err);
  cleanup_free char *rm = xasprintf("rm -rf %s", dir);
  cr_assert_eq(system(rm), 0);
}

/* A binary that cannot say its version: date 0 (ptrace), and nothing is
 * cached, so a later working answer is not masked. */
Test(runsc_version, a_failing_binary_is_unknown_and_not_cached) {
  char dir[] = "/tmp/tg-unit-rv.XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  cleanup_free char *bin = xasprintf("%s/runsc", dir);
  cleanup_free char *cache = xasprintf("%s/cache", dir);
  FILE *f = fopen(bin, "w");
  fprintf(f, "#!/bin/sh\nexit 3\n");
  fclose(f);
  chmod(bin, 0755);
  struct runsc_version v;
  cr_assert_eq(runsc_version_of(bin, cache, &v, NULL), 0);
  cr_assert_eq(v.date, 0);
  runsc_version_free(&v);
  cleanup_free char *ls = xasprintf("test -z \"$(ls -A %s 2>/dev/null)\"", cache);
  cr_assert_eq(system(ls), 0, "nothing cached");
  cleanup_free char *rm = xasprintf("rm -rf %s", dir);
  cr_assert_eq(system(rm), 0);
}
