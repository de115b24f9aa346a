/* Seccomp allowlist validation, intersection and comparison, and the
 * profile rules (loading, strictness order). */
#include "oci/profile.h"
#include "oci/seccomp.h"
#include "oci_test_util.h"

static json_t *ours(void) {
  json_t *sc = NULL;
  tg_error *err = NULL;
  cr_assert_eq(oci_seccomp_load(SECCOMP_DIR "/default.json", &sc, &err), 0, "%s", err ? err->msg : "");
  return sc;
}

static const json_t *rule_for(const json_t *sc, const char *name, size_t nth) {
  const json_t *rules = json_object_get(sc, "syscalls");
  for (size_t i = 0; i < json_array_len(rules); i++)
    if (str_in(json_object_get(json_array_get(rules, i), "names"), name) && nth-- == 0)
      return json_array_get(rules, i);
  return NULL;
}

static void expect_invalid(const char *text, const char *want) {
  json_t *sc = parse_or_die(text);
  tg_error *err = NULL;
  cr_expect_eq(oci_seccomp_validate_allowlist(sc, "test.json", &err), -1, "accepted: %s", text);
  cr_expect(err && strstr(err->msg, want), "error \"%s\" lacks \"%s\"", err ? err->msg : "", want);
  tg_error_free(&err);
  json_free(sc);
}

Test(oci_seccomp, bundled_list_is_valid) {
  json_t *sc = ours();
  cr_expect_str_eq(json_string_value(json_object_get(sc, "defaultAction")), "SCMP_ACT_ERRNO");
  json_free(sc);
}

Test(oci_seccomp, validation_errors_name_the_problem) {
  expect_invalid("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"architectures\":[\"SCMP_ARCH_X86_64\"],\"syscalls\":[{\"names\":[\"read\",\"no_such_call\"],\"action\":\"SCMP_ACT_ALLOW\"}]}",
                 "unknown syscall \"no_such_call\"");
  /* known to libseccomp, but not a native x86_64 call */
  expect_invalid("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"architectures\":[\"SCMP_ARCH_X86_64\"],\"syscalls\":[{\"names\":[\"socketcall\"],\"action\":\"SCMP_ACT_ALLOW\"}]}",
                 "unknown syscall \"socketcall\" for SCMP_ARCH_X86_64");
  expect_invalid("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"architectures\":[\"SCMP_ARCH_X86_64\"],\"syscalls\":[]}", "must deny");
  expect_invalid("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"architectures\":[\"SCMP_ARCH_PDP11\"],\"syscalls\":[]}", "unknown architecture");
  expect_invalid("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"architectures\":[\"SCMP_ARCH_X86_64\"],\"syscalls\":[{\"names\":[\"read\"],\"action\":\"SCMP_ACT_NOTIFY\"}]}", "unsupported action");
  expect_invalid("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"architectures\":[\"SCMP_ARCH_X86_64\"],\"syscalls\":[{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":7,\"op\":\"SCMP_CMP_EQ\",\"value\":1}]}]}", "index");
  expect_invalid("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"architectures\":[\"SCMP_ARCH_X86_64\"],\"syscalls\":[{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":0,\"op\":\"SCMP_CMP_LIKE\",\"value\":1}]}]}", "unknown args op");
  expect_invalid("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"architectures\":[\"SCMP_ARCH_X86_64\"],\"syscalls\":[],\"extra\":1}", "unknown key");
  /* i386 names resolve when the list covers i386 */
  json_t *sc = parse_or_die("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"architectures\":[\"SCMP_ARCH_X86\"],\"syscalls\":[{\"names\":[\"socketcall\",\"_llseek\"],\"action\":\"SCMP_ACT_ALLOW\"}]}");
  tg_error *err = NULL;
  cr_expect_eq(oci_seccomp_validate_allowlist(sc, "i386.json", &err), 0, "%s", err ? err->msg : "");
  json_free(sc);
}

Test(oci_seccomp, no_input_gives_ours) {
  json_t *o = ours(), *out = NULL;
  tg_error *err = NULL;
  cr_assert_eq(oci_seccomp_intersect(o, NULL, &out, &err), 0);
  /* the same, less the comments, which stay out of the container's config */
  cr_expect_null(json_object_get(out, "comment"));
  json_object_del(o, "comment");
  const json_t *rules = json_object_get(o, "syscalls");
  for (size_t i = 0; i < json_array_len(rules); i++) {
    cr_expect_null(json_object_get(json_array_get(json_object_get(out, "syscalls"), i), "comment"));
    json_object_del(json_array_get(rules, i), "comment");
  }
  cr_expect(json_equal(o, out));
  json_free(o);
  json_free(out);
}

Test(oci_seccomp, docker_style_input) {
  /* The shape of Docker's default profile: allowlist, conditional clone
   * with the same mask as ours, clone3 ENOSYS, socket unconditional,
   * and a TRACE rule (treated as a denial). */
  json_t *in = parse_or_die(
      "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"defaultErrnoRet\":1,\"architectures\":[\"SCMP_ARCH_X86_64\",\"SCMP_ARCH_X86\",\"SCMP_ARCH_X32\"],"
      "\"syscalls\":[{\"names\":[\"read\",\"write\",\"socket\",\"ioctl\",\"ptrace\",\"mount\"],\"action\":\"SCMP_ACT_ALLOW\"},"
      "{\"names\":[\"clone\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":0,\"value\":2114060288,\"valueTwo\":0,\"op\":\"SCMP_CMP_MASKED_EQ\"}]},"
      "{\"names\":[\"clone3\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":38},"
      "{\"names\":[\"getpid\"],\"action\":\"SCMP_ACT_TRACE\"}]}");
  json_t *o = ours(), *out = NULL;
  tg_error *err = NULL;
  cr_assert_eq(oci_seccomp_intersect(o, in, &out, &err), 0, "%s", err ? err->msg : "");
  /* read allowed by both */
  const json_t *r = rule_for(out, "read", 0);
  cr_expect(r && json_array_len(json_object_get(r, "args")) == 0);
  /* getpid: TRACE in the input denies it (ENOSYS), and the input's rule
   * is kept */
  const json_t *gp = rule_for(out, "getpid", 0);
  cr_expect(gp && strcmp(json_string_value(json_object_get(gp, "action")), "SCMP_ACT_TRACE") == 0);
  /* ptrace and mount: the input allows, we do not */
  cr_expect_null(rule_for(out, "ptrace", 0));
  cr_expect_null(rule_for(out, "mount", 0));
  /* clone: identical conditions merge into one rule */
  cr_expect_not_null(rule_for(out, "clone", 0));
  cr_expect_null(rule_for(out, "clone", 1));
  /* clone3 answers ENOSYS so libc falls back to clone: our TRACE rule
   * (which runsc honours) wins over the input's ERRNO/38 (which it does
   * not) */
  const json_t *c3 = rule_for(out, "clone3", 0);
  cr_expect(c3 && strcmp(json_string_value(json_object_get(c3, "action")), "SCMP_ACT_TRACE") == 0);
  cr_expect_null(rule_for(out, "clone3", 1));
  /* socket: the input allows any, we allow AF_UNIX/INET/INET6: ours */
  cr_expect_not_null(rule_for(out, "socket", 2));
  cr_expect_null(rule_for(out, "socket", 3));
  /* ioctl keeps our TIOCSTI condition */
  const json_t *io = rule_for(out, "ioctl", 0);
  cr_expect(io && json_array_len(json_object_get(io, "args")) == 1);
  /* architectures: ours (x86_64 only) */
  cr_expect_eq(json_array_len(json_object_get(out, "architectures")), 1);
  char *why = NULL;
  cr_expect(oci_seccomp_subset(out, in, &why), "%s", why ? why : "");
  free(why);
  cr_expect(oci_seccomp_subset(out, o, &why), "%s", why ? why : "");
  free(why);
  json_free(in);
  json_free(o);
  json_free(out);
}

Test(oci_seccomp, conditions_are_combined_exactly_or_denied) {
  /* input: socket only AF_INET with type SOCK_STREAM (arg1), ioctl only
   * with request 0x5401 (TCGETS) on arg1, which clashes with our NE on
   * arg1: that pair cannot be one rule, so ioctl is denied. */
  json_t *in = parse_or_die(
      "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":["
      "{\"names\":[\"socket\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":0,\"value\":2,\"op\":\"SCMP_CMP_EQ\"},{\"index\":1,\"value\":1,\"op\":\"SCMP_CMP_EQ\"}]},"
      "{\"names\":[\"ioctl\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":1,\"value\":21505,\"op\":\"SCMP_CMP_EQ\"}]},"
      "{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\"}]}");
  json_t *o = ours(), *out = NULL;
  tg_error *err = NULL;
  cr_assert_eq(oci_seccomp_intersect(o, in, &out, &err), 0, "%s", err ? err->msg : "");
  const json_t *s = rule_for(out, "socket", 0);
  cr_assert_not_null(s);
  cr_expect_null(rule_for(out, "socket", 1), "only AF_INET survives");
  cr_expect_eq(json_array_len(json_object_get(s, "args")), 2);
  cr_expect_null(rule_for(out, "ioctl", 0));
  cr_expect_null(rule_for(out, "write", 0), "the input never allowed write");
  cr_expect(oci_seccomp_subset(out, in, NULL));
  json_free(in);
  json_free(o);
  json_free(out);
}

Test(oci_seccomp, blocklist_input_and_flags) {
  json_t *in = parse_or_die(
      "{\"defaultAction\":\"SCMP_ACT_LOG\",\"flags\":[\"SECCOMP_FILTER_FLAG_SPEC_ALLOW\",\"SECCOMP_FILTER_FLAG_LOG\"],"
      "\"architectures\":[\"SCMP_ARCH_X86_64\"],"
      "\"syscalls\":[{\"names\":[\"chmod\"],\"action\":\"SCMP_ACT_KILL\"},"
      "{\"names\":[\"fchmod\"],\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{\"index\":1,\"value\":2048,\"op\":\"SCMP_CMP_MASKED_EQ\",\"valueTwo\":2048}]}]}");
  json_t *o = ours(), *out = NULL;
  tg_error *err = NULL;
  cr_assert_eq(oci_seccomp_intersect(o, in, &out, &err), 0, "%s", err ? err->msg : "");
  const json_t *ch = rule_for(out, "chmod", 0);
  cr_expect(ch && strcmp(json_string_value(json_object_get(ch, "action")), "SCMP_ACT_KILL") == 0,
            "the input's own denial is kept");
  cr_expect_null(rule_for(out, "fchmod", 0), "a conditional denial denies the call outright");
  const json_t *flags = json_object_get(out, "flags");
  cr_expect_eq(json_array_len(flags), 1);
  cr_expect(str_in(flags, "SECCOMP_FILTER_FLAG_LOG"));
  cr_expect(oci_seccomp_subset(out, in, NULL));
  json_free(in);
  json_free(o);
  json_free(out);
}

Test(oci_seccomp, subset_detects_looser) {
  json_t *a = parse_or_die("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[\"read\",\"mount\"],\"action\":\"SCMP_ACT_ALLOW\"}]}");
  json_t *b = parse_or_die("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\"}]}");
  char *why = NULL;
  cr_expect_not(oci_seccomp_subset(a, b, &why));
  cr_expect(why && strstr(why, "mount"), "%s", why ? why : "");
  free(why);
  cr_expect(oci_seccomp_subset(b, a, NULL));
  cr_expect(oci_seccomp_subset(a, NULL, NULL), "no filter allows everything");
  cr_expect_not(oci_seccomp_subset(NULL, a, NULL));
  json_t *c = parse_or_die("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":0,\"value\":0,\"op\":\"SCMP_CMP_EQ\"}]}]}");
  cr_expect(oci_seccomp_subset(c, b, NULL), "a condition only narrows");
  cr_expect_not(oci_seccomp_subset(b, c, NULL));
  json_free(a);
  json_free(b);
  json_free(c);
}

Test(oci_seccomp, large_values_stay_exact) {
  json_t *in = parse_or_die("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":2,\"value\":18446744073709551615,\"op\":\"SCMP_CMP_LE\"}]}]}");
  json_t *o = ours(), *out = NULL;
  tg_error *err = NULL;
  cr_assert_eq(oci_seccomp_intersect(o, in, &out, &err), 0);
  const json_t *r = rule_for(out, "read", 0);
  cr_assert_not_null(r);
  const json_t *v = json_object_get(json_array_get(json_object_get(r, "args"), 0), "value");
  cr_expect_str_eq(v->u.number.text, "18446744073709551615");
  json_free(in);
  json_free(o);
  json_free(out);
}

/* ---- profiles ----------------------------------------------------------- */

static void load(const char *name, struct oci_profile *p) {
  tg_error *err = NULL;
  cr_assert_eq(profile_load(PROFILES_DIR, SECCOMP_DIR, name, p, &err), 0, "%s: %s", name, err ? err->msg : "");
}

Test(oci_profile, bundled_profiles_load) {
  const char *names[] = {"hardened", "strict", "relaxed", "passthrough"};
  for (int i = 0; i < 4; i++) {
    struct oci_profile p;
    load(names[i], &p);
    cr_expect_str_eq(p.name, names[i]);
    profile_free(&p);
  }
}

Test(oci_profile, hardened_defaults) {
  struct oci_profile p;
  load("hardened", &p);
  cr_expect_eq(p.caps.n, 0);
  cr_expect(p.no_new_privileges && p.readonly_rootfs && p.network_none && !p.allow_root);
  cr_expect_eq(p.memory_bytes, 512LL << 20);
  cr_expect_eq(p.pids, 256);
  cr_expect_eq(p.cpu_millis, 1000);
  cr_expect_eq(p.uid, 65534);
  cr_expect_eq(p.n_tmpfs, 1);
  cr_expect_eq(p.tmpfs[0].size_bytes, 64LL << 20);
  cr_expect_not_null(p.seccomp);
  profile_free(&p);
}

Test(oci_profile, strictness_order) {
  struct oci_profile strict, hardened, relaxed, pass;
  load("strict", &strict);
  load("hardened", &hardened);
  load("relaxed", &relaxed);
  load("passthrough", &pass);
  struct oci_profile *order[] = {&strict, &hardened, &relaxed, &pass};
  for (int i = 0; i < 4; i++)
    for (int k = 0; k < 4; k++) {
      char *why = NULL;
      bool got = profile_at_least_as_strict(order[i], order[k], &why);
      cr_expect_eq(got, i <= k, "%s vs %s: %s", order[i]->name, order[k]->name, why ? why : "");
      if (!got)
        cr_expect_not_null(why, "a refusal names the looser axis");
      free(why);
    }
  char *why = NULL;
  profile_at_least_as_strict(&relaxed, &hardened, &why);
  cr_expect(why && strstr(why, "keeps capability CAP_CHOWN"), "%s", why ? why : "");
  free(why);
  profile_free(&strict);
  profile_free(&hardened);
  profile_free(&relaxed);
  profile_free(&pass);
}

Test(oci_profile, strictness_number_alone_is_not_enough) {
  /* A profile that claims strictness 99 but allows more memory than
   * hardened is not at least as strict as hardened. */
  json_t *doc = load_fixture("../../../bundles/profiles/hardened.json");
  json_object_set(doc, "name", json_new_string("liar"));
  json_object_set(doc, "strictness", json_new_integer(99));
  json_object_set(doc, "memory_mib", json_new_integer(4096));
  struct oci_profile liar, hardened;
  tg_error *err = NULL;
  cr_assert_eq(profile_from_json(doc, SECCOMP_DIR, "liar.json", &liar, &err), 0, "%s", err ? err->msg : "");
  load("hardened", &hardened);
  char *why = NULL;
  cr_expect_not(profile_at_least_as_strict(&liar, &hardened, &why));
  cr_expect(why && strstr(why, "more memory"), "%s", why ? why : "");
  free(why);
  profile_free(&liar);
  profile_free(&hardened);
  json_free(doc);
}

static void expect_profile_error(const char *key, const char *value_json, const char *want) {
  json_t *doc = load_fixture("../../../bundles/profiles/hardened.json");
  if (value_json)
    json_object_set(doc, key, parse_or_die(value_json));
  else
    json_object_del(doc, key);
  struct oci_profile p;
  tg_error *err = NULL;
  cr_expect_eq(profile_from_json(doc, SECCOMP_DIR, "bad.json", &p, &err), -1, "%s accepted", key);
  cr_expect(err && strstr(err->msg, want), "%s: error \"%s\" lacks \"%s\"", key, err ? err->msg : "", want);
  profile_free(&p);
  tg_error_free(&err);
  json_free(doc);
}

Test(oci_profile, profile_errors) {
  expect_profile_error("colour", "\"blue\"", "unknown key \"colour\"");
  expect_profile_error("capabilities", "[\"CAP_FLY\"]", "unknown capability \"CAP_FLY\"");
  expect_profile_error("devices", "[\"sda\"]", "device \"sda\"");
  expect_profile_error("rlimits", "{\"RLIMIT_WINGS\":1}", "unknown rlimit");
  expect_profile_error("seccomp", "\"../../etc/passwd\"", "file name inside the seccomp directory");
  expect_profile_error("seccomp", "\"missing.json\"", "missing.json");
  expect_profile_error("strictness", "101", "strictness");
  expect_profile_error("network", "\"host\"", "\"network\"");
  expect_profile_error("pids", NULL, "missing key \"pids\"");
  expect_profile_error("user", "{\"allow_root\":false,\"uid\":0,\"gid\":0}", "\"uid\" must be");
  struct oci_profile p;
  tg_error *err = NULL;
  cr_expect_eq(profile_load(PROFILES_DIR, SECCOMP_DIR, "../profiles/hardened", &p, &err), -1);
  cr_expect(err && strstr(err->msg, "not a plain name"));
  tg_error_free(&err);
}

/* ---- issue 15: comparisons on the 32 bits the kernel reads ---------------- */

/* Does sc allow syscall name with argument arg1 (the other args 0)?  An
 * evaluator of our own: rules ORed, comparisons ANDed, 64-bit compares
 * as libseccomp and gVisor make them. */
/* The verdict for a syscall comes from every rule that names it, however
 * it is named: twice in one rule, by the pre-1.0 single "name", across
 * several rules (an allow and a later denial).  And an effective list
 * (ours, already intersected) intersected with ours again is the same
 * list: what a second create from a rewritten config.json computes. */
Test(oci_seccomp, every_rule_naming_a_syscall_counts) {
  json_t *in = parse_or_die("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":["
                            "{\"names\":[\"read\",\"read\",\"write\"],\"action\":\"SCMP_ACT_ALLOW\"},"
                            "{\"name\":\"getpid\",\"action\":\"SCMP_ACT_ALLOW\"},"
                            "{\"names\":[\"close\"],\"action\":\"SCMP_ACT_ALLOW\"},"
                            "{\"names\":[\"write\",\"close\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":1}]}");
  json_t *o = ours(), *out = NULL;
  tg_error *err = NULL;
  cr_assert_eq(oci_seccomp_intersect(o, in, &out, &err), 0, "%s", err ? err->msg : "");
  const json_t *allowed = json_object_get(json_array_get(json_object_get(out, "syscalls"), 0), "names");
  cr_expect(str_in(allowed, "read"));
  cr_expect(str_in(allowed, "getpid"), "the single \"name\" spelling counts");
  cr_expect_not(str_in(allowed, "write"), "a later denial wins");
  cr_expect_not(str_in(allowed, "close"), "a later denial wins");
  cr_expect_not(str_in(allowed, "openat"), "not named by the input");
  size_t n_read = 0;
  for (size_t i = 0; i < json_array_len(allowed); i++)
    n_read += strcmp(json_string_value(json_array_get(allowed, i)), "read") == 0;
  cr_expect_eq(n_read, 1, "a name given twice is one syscall");
  cr_expect(oci_seccomp_subset(out, in, NULL));
  cr_expect(oci_seccomp_subset(in, out, NULL), "both allow read and getpid, nothing else");
  char *why = NULL;
  cr_expect_not(oci_seccomp_subset(o, out, &why));
  cr_expect(why && strstr(why, "is allowed by the first"), "%s", why ? why : "");
  free(why);

  json_t *eff = NULL, *again = NULL;
  cr_assert_eq(oci_seccomp_intersect(o, NULL, &eff, &err), 0);
  cr_assert_eq(oci_seccomp_intersect(o, eff, &again, &err), 0, "%s", err ? err->msg : "");
  char *a = json_dump(eff, false, NULL), *b = json_dump(again, false, NULL);
  cr_expect_str_eq(a, b, "an effective list hardened again is unchanged");
  cr_expect(oci_seccomp_subset(again, eff, NULL) && oci_seccomp_subset(eff, again, NULL));
  free(a);
  free(b);
  json_free(eff);
  json_free(again);
  json_free(in);
  json_free(o);
  json_free(out);
}

static bool allows_arg1(const json_t *sc, const char *name, unsigned long long arg1) {
  const json_t *rules = json_object_get(sc, "syscalls");
  for (size_t i = 0; i < json_array_len(rules); i++) {
    const json_t *r = json_array_get(rules, i);
    if (!str_in(json_object_get(r, "names"), name) ||
        strcmp(json_string_value(json_object_get(r, "action")), "SCMP_ACT_ALLOW") != 0)
      continue;
    bool all = true;
    const json_t *args = json_object_get(r, "args");
    for (size_t k = 0; k < json_array_len(args); k++) {
      const json_t *a = json_array_get(args, k);
      unsigned long long idx = strtoull(json_object_get(a, "index")->u.number.text, NULL, 10);
      unsigned long long v = strtoull(json_object_get(a, "value")->u.number.text, NULL, 10);
      const json_t *v2j = json_object_get(a, "valueTwo");
      unsigned long long v2 = v2j ? strtoull(v2j->u.number.text, NULL, 10) : 0;
      unsigned long long x = idx == 1 ? arg1 : 0;
      const char *op = json_string_value(json_object_get(a, "op"));
      bool ok = strcmp(op, "SCMP_CMP_MASKED_EQ") == 0 ? (x & v) == v2
                : strcmp(op, "SCMP_CMP_EQ") == 0     ? x == v
                : strcmp(op, "SCMP_CMP_NE") == 0     ? x != v
                : strcmp(op, "SCMP_CMP_LT") == 0     ? x < v
                : strcmp(op, "SCMP_CMP_LE") == 0     ? x <= v
                : strcmp(op, "SCMP_CMP_GT") == 0     ? x > v
                                                     : x >= v;
      all &= ok;
    }
    if (all)
      return true;
  }
  return false;
}

Test(oci_seccomp, tiocsti_denied_on_the_low_32_bits) {
  json_t *o = ours();
  const unsigned long long tiocsti[] = {0x5412, 0x100005412ULL, 0xffffffff00005412ULL, 0x8000000000005412ULL};
  for (size_t i = 0; i < sizeof tiocsti / sizeof tiocsti[0]; i++)
    cr_expect_not(allows_arg1(o, "ioctl", tiocsti[i]), "ioctl 0x%llx is TIOCSTI to the kernel", tiocsti[i]);
  const unsigned long long fine[] = {0x5401, 0x5413, 0x5402, 0x541B, 0x4012, 0x5410, 0, 0xffffffffULL, 0x100005413ULL};
  for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++)
    cr_expect(allows_arg1(o, "ioctl", fine[i]), "ioctl 0x%llx is allowed", fine[i]);
  json_free(o);
}

Test(oci_seccomp, allowlist_comparisons_an_upper_bit_defeats_are_refused) {
  struct {
    const char *action, *op, *value;
    bool refused;
  } t[] = {
      {"SCMP_ACT_ALLOW", "SCMP_CMP_NE", "21522", true},
      {"SCMP_ACT_ALLOW", "SCMP_CMP_GT", "5", true},
      {"SCMP_ACT_ALLOW", "SCMP_CMP_GE", "5", true},
      {"SCMP_ACT_ALLOW", "SCMP_CMP_EQ", "2", false},
      {"SCMP_ACT_ALLOW", "SCMP_CMP_LT", "2", false},
      {"SCMP_ACT_ALLOW", "SCMP_CMP_MASKED_EQ", "4294967295", false},
      {"SCMP_ACT_ERRNO", "SCMP_CMP_EQ", "21522", true},
      {"SCMP_ACT_ERRNO", "SCMP_CMP_LE", "3", true},
      {"SCMP_ACT_ERRNO", "SCMP_CMP_MASKED_EQ", "4294967295", false},
      {"SCMP_ACT_ERRNO", "SCMP_CMP_MASKED_EQ", "18446744073709551615", true},
      {"SCMP_ACT_ERRNO", "SCMP_CMP_NE", "3", false},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    char *text = xasprintf("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"architectures\":[\"SCMP_ARCH_X86_64\"],\"syscalls\":["
                           "{\"names\":[\"ioctl\"],\"action\":\"%s\",\"args\":[{\"index\":1,\"value\":%s,\"valueTwo\":0,\"op\":\"%s\"}]}]}",
                           t[i].action, t[i].value, t[i].op);
    json_t *sc = parse_or_die(text);
    tg_error *err = NULL;
    int r = oci_seccomp_validate_allowlist(sc, "test", &err);
    if (t[i].refused)
      cr_expect(r < 0 && strstr(err->msg, "SCMP_CMP_MASKED_EQ with a mask below 2^32"), "%s %s: want refused, got %s",
                t[i].action, t[i].op, err ? err->msg : "accepted");
    else
      cr_expect_eq(r, 0, "%s %s: %s", t[i].action, t[i].op, err ? err->msg : "");
    tg_error_free(&err);
    json_free(sc);
    free(text);
  }
}
