/* The runc version floor against the shipped data file. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "shim/lifecycle/runc_floor.h"
#include "base/util.h"

static json_t *shipped_floor(void) {
  char *buf = NULL;
  size_t len = 0;
  tg_error *err = NULL;
  cr_assert_eq(read_file("bundles/backend-floor.json", 65536, &buf, &len, &err), 0, "%s", err ? err->msg : "");
  struct json_parse_options po = {.max_depth = 8};
  json_t *doc = json_parse(buf, len, &po, &err);
  free(buf);
  cr_assert_not_null(doc, "%s", err ? err->msg : "");
  return doc;
}

Test(runc_floor, versions_compare_in_semver_order) {
  cr_expect_eq(runc_version_compare("1.1.5+ds1", "1.2.8"), -1);
  cr_expect_eq(runc_version_compare("1.2.8", "1.2.8"), 0);
  cr_expect_eq(runc_version_compare("1.2.10", "1.2.8"), 1);
  cr_expect_eq(runc_version_compare("1.4.0-rc.2", "1.4.0-rc.3"), -1);
  cr_expect_eq(runc_version_compare("1.4.0-rc.10", "1.4.0-rc.3"), 1);
  cr_expect_eq(runc_version_compare("1.4.0", "1.4.0-rc.3"), 1);
  cr_expect_eq(runc_version_compare("v1.3.3", "1.3.3"), 0);
  cr_expect_eq(runc_version_compare("garbage", "1.0.0"), -1);
}

Test(runc_floor, debian_12_is_below_the_floor) {
  json_t *doc = shipped_floor();
  const json_t *f = json_object_get(doc, "runc");
  const char *cves = json_dump(json_object_get(f, "cves"), false, NULL);
  cr_expect(strstr(cves, "CVE-2025-31133") && strstr(cves, "CVE-2025-52565") && strstr(cves, "CVE-2025-52881"));
  free((char *)cves);
  struct {
    const char *v;
    bool below;
  } t[] = {
      {"1.1.5+ds1", true}, {"1.1.15", true},   {"1.0.0-rc93", true}, {"1.2.7", true},
      {"1.2.8", false},    {"1.2.9", false},   {"1.3.2", true},      {"1.3.3", false},
      {"1.4.0-rc.2", true}, {"1.4.0-rc.3", false}, {"1.4.0", false},  {"1.5.0", false},
      {"2.0.0", false},    {"nonsense", true},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    char *fix = NULL;
    cr_expect_eq(runc_below_floor(t[i].v, f, &fix), t[i].below, "%s", t[i].v);
    cr_expect_str_eq(fix, "1.2.8, 1.3.3, 1.4.0-rc.3");
    free(fix);
  }
  json_free(doc);
}

Test(runc_floor, a_patched_build_is_named_exactly) {
  json_t *f = NULL;
  struct json_parse_options po = {.max_depth = 8};
  const char *text = "{\"fixed\":[\"1.2.8\"],\"patched_builds\":[\"1.1.5+ds1-fixed\"]}";
  f = json_parse(text, strlen(text), &po, NULL);
  cr_assert_not_null(f);
  cr_expect_not(runc_below_floor("1.1.5+ds1-fixed", f, NULL));
  cr_expect(runc_below_floor("1.1.5+ds1", f, NULL));
  json_free(f);
}
