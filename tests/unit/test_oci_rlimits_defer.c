/* oci_rlimits_defer / oci_rlimits_undefer: runc's address-space rlimits
 * moved into the args, for the static client to set after runc's init. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "oci/rlimits_defer.h"
#include "tests/unit/oci_test_util.h"

#define W "/run/tollgate/tollgate-call"

static char *dump(const json_t *v) { return json_dump(v, false, NULL); }

static void assert_json(const json_t *v, const char *want) {
  json_t *w = parse_or_die(want);
  char *got = dump(v), *exp = dump(w);
  cr_assert_str_eq(got, exp);
  free(got);
  free(exp);
  json_free(w);
}

Test(rlimits_defer, moves_as_and_data_into_the_args_and_back) {
  const char *in = "{\"args\": [\"python3\", \"-c\", \"x\"], \"rlimits\": ["
                   "{\"type\": \"RLIMIT_NOFILE\", \"hard\": 1024, \"soft\": 1024},"
                   "{\"type\": \"RLIMIT_AS\", \"hard\": 1073741824, \"soft\": 536870912},"
                   "{\"type\": \"RLIMIT_DATA\", \"hard\": 18446744073709551615, \"soft\": 268435456}]}";
  json_t *p = parse_or_die(in);
  tg_error *err = NULL;
  cr_assert_eq(oci_rlimits_defer(p, W, &err), 0);
  assert_json(p, "{\"args\": [\"" W "\", \"--rlimits\", \"RLIMIT_AS=536870912:1073741824\","
                 "\"RLIMIT_DATA=268435456:unlimited\", \"--\", \"python3\", \"-c\", \"x\"],"
                 "\"rlimits\": [{\"type\": \"RLIMIT_NOFILE\", \"hard\": 1024, \"soft\": 1024}]}");
  cr_assert(oci_rlimits_undefer(p, W));
  assert_json(p, "{\"args\": [\"python3\", \"-c\", \"x\"], \"rlimits\": ["
                 "{\"type\": \"RLIMIT_NOFILE\", \"hard\": 1024, \"soft\": 1024},"
                 "{\"type\": \"RLIMIT_AS\", \"hard\": 1073741824, \"soft\": 536870912},"
                 "{\"type\": \"RLIMIT_DATA\", \"hard\": 18446744073709551615, \"soft\": 268435456}]}");
  json_free(p);
}

Test(rlimits_defer, nothing_to_move_changes_nothing) {
  const char *cases[] = {
      "{\"args\": [\"sh\"], \"rlimits\": [{\"type\": \"RLIMIT_NOFILE\", \"hard\": 1, \"soft\": 1}]}",
      "{\"args\": [\"sh\"]}",
      /* both unlimited: bounds nothing, cannot hurt runc's init */
      "{\"args\": [\"sh\"], \"rlimits\": [{\"type\": \"RLIMIT_AS\", \"hard\": 18446744073709551615, "
      "\"soft\": 18446744073709551615}]}",
      /* not numbers >= 0: runc's own error names them */
      "{\"args\": [\"sh\"], \"rlimits\": [{\"type\": \"RLIMIT_AS\", \"hard\": -1, \"soft\": 5}]}",
      "{\"args\": [\"sh\"], \"rlimits\": [{\"type\": \"RLIMIT_AS\", \"hard\": \"1G\", \"soft\": 5}]}",
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    json_t *p = parse_or_die(cases[i]);
    tg_error *err = NULL;
    cr_assert_eq(oci_rlimits_defer(p, W, &err), 0, "%s", cases[i]);
    assert_json(p, cases[i]);
    cr_assert_not(oci_rlimits_undefer(p, W));
    json_free(p);
  }
}

Test(rlimits_defer, soft_above_hard_is_refused_as_runc_would) {
  json_t *p = parse_or_die("{\"args\": [\"sh\"], \"rlimits\": [{\"type\": \"RLIMIT_AS\", \"hard\": 100, \"soft\": 200}]}");
  tg_error *err = NULL;
  cr_assert_eq(oci_rlimits_defer(p, W, &err), -1);
  cr_assert(strstr(err->msg, "RLIMIT_AS has soft 200 above hard 100: set soft <= hard") != NULL, "%s", err->msg);
  tg_error_free(&err);
  json_free(p);
  p = parse_or_die("{\"args\": [\"sh\"], \"rlimits\": [{\"type\": \"RLIMIT_DATA\", \"hard\": 100, "
                   "\"soft\": 18446744073709551615}]}");
  cr_assert_eq(oci_rlimits_defer(p, W, &err), -1);
  cr_assert(strstr(err->msg, "soft unlimited above hard 100") != NULL, "%s", err->msg);
  tg_error_free(&err);
  json_free(p);
}

Test(rlimits_defer, args_must_be_strings) {
  json_t *p = parse_or_die("{\"args\": [], \"rlimits\": [{\"type\": \"RLIMIT_AS\", \"hard\": 100, \"soft\": 100}]}");
  tg_error *err = NULL;
  cr_assert_eq(oci_rlimits_defer(p, W, &err), -1);
  cr_assert(strstr(err->msg, "process.args must be a non-empty array of strings") != NULL);
  tg_error_free(&err);
  /* nothing half-moved */
  assert_json(p, "{\"args\": [], \"rlimits\": [{\"type\": \"RLIMIT_AS\", \"hard\": 100, \"soft\": 100}]}");
  json_free(p);
}

Test(rlimits_defer, undefer_takes_only_its_own_form) {
  const char *cases[] = {
      "{\"args\": [\"/bin/other\", \"--rlimits\", \"RLIMIT_AS=1:1\", \"--\", \"sh\"]}",
      "{\"args\": [\"" W "\", \"echo\", \"{}\"]}",
      "{\"args\": [\"" W "\", \"--rlimits\", \"RLIMIT_AS=1:1\", \"--\"]}",
      "{\"args\": [\"" W "\", \"--rlimits\", \"RLIMIT_AS=1:1\", \"sh\"]}",
      "{\"args\": [\"" W "\", \"--rlimits\", \"RLIMIT_NOFILE=1:1\", \"--\", \"sh\"]}",
      "{\"args\": [\"" W "\", \"--rlimits\", \"RLIMIT_AS=x:1\", \"--\", \"sh\"]}",
      "{\"args\": [\"" W "\", \"--rlimits\", \"RLIMIT_AS=99999999999999999999:1\", \"--\", \"sh\"]}",
      "{\"args\": [\"" W "\", \"--rlimits\", \"RLIMIT_AS=1\", \"--\", \"sh\"]}",
      "{\"args\": [\"" W "\", \"--rlimits\", 5, \"--\", \"sh\"]}",
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    json_t *p = parse_or_die(cases[i]);
    cr_assert_not(oci_rlimits_undefer(p, W), "%s", cases[i]);
    assert_json(p, cases[i]);
    json_free(p);
  }
}

/* A config whose own args already are the client's form gets wrapped
 * again; one undefer peels one layer, and the client never raises a limit,
 * so an inner "unlimited" cannot undo the outer one. */
Test(rlimits_defer, a_wrapped_config_is_wrapped_again) {
  json_t *p = parse_or_die("{\"args\": [\"" W "\", \"--rlimits\", \"RLIMIT_AS=unlimited:unlimited\", \"--\", \"sh\"],"
                           "\"rlimits\": [{\"type\": \"RLIMIT_AS\", \"hard\": 4096, \"soft\": 4096}]}");
  tg_error *err = NULL;
  cr_assert_eq(oci_rlimits_defer(p, W, &err), 0);
  assert_json(p, "{\"args\": [\"" W "\", \"--rlimits\", \"RLIMIT_AS=4096:4096\", \"--\", \"" W "\", \"--rlimits\","
                 "\"RLIMIT_AS=unlimited:unlimited\", \"--\", \"sh\"], \"rlimits\": []}");
  cr_assert(oci_rlimits_undefer(p, W));
  assert_json(p, "{\"args\": [\"" W "\", \"--rlimits\", \"RLIMIT_AS=unlimited:unlimited\", \"--\", \"sh\"],"
                 "\"rlimits\": [{\"type\": \"RLIMIT_AS\", \"hard\": 4096, \"soft\": 4096}]}");
  json_free(p);
}
