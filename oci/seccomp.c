/* Seccomp allowlist validation, intersection and comparison.
 * See oci/seccomp.h for the verdict model. */
#include "oci/seccomp.h"

#include <errno.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>

#include "oci/namelist.h"
#include "base/util.h"

/* ---- vocabulary -------------------------------------------------------- */

static const struct {
  const char *name;
  uint32_t token;
} arches[] = {
    {"SCMP_ARCH_X86", SCMP_ARCH_X86},         {"SCMP_ARCH_X86_64", SCMP_ARCH_X86_64},
    {"SCMP_ARCH_X32", SCMP_ARCH_X32},         {"SCMP_ARCH_ARM", SCMP_ARCH_ARM},
    {"SCMP_ARCH_AARCH64", SCMP_ARCH_AARCH64}, {"SCMP_ARCH_PPC64LE", SCMP_ARCH_PPC64LE},
    {"SCMP_ARCH_S390X", SCMP_ARCH_S390X},     {"SCMP_ARCH_RISCV64", SCMP_ARCH_RISCV64},
};

static bool arch_token(const char *name, uint32_t *token) {
  for (size_t i = 0; i < sizeof arches / sizeof arches[0]; i++)
    if (strcmp(arches[i].name, name) == 0) {
      *token = arches[i].token;
      return true;
    }
  return false;
}

/* The architecture the filter always covers whether listed or not. */
static const char *native_arch_name(void) {
  uint32_t native = seccomp_arch_native();
  for (size_t i = 0; i < sizeof arches / sizeof arches[0]; i++)
    if (arches[i].token == native)
      return arches[i].name;
  return "SCMP_ARCH_NATIVE";
}

static const char *const allow_actions[] = {"SCMP_ACT_ALLOW", "SCMP_ACT_LOG"};
/* Denials.  TRACE counts as one: with no tracer attached the call fails
 * with ENOSYS (Linux and gVisor alike), and a tracer cannot be attached
 * from inside the container, where ptrace is denied; only host root could
 * attach one.  The allowlist uses it for clone3 because runsc ignores
 * errnoRet (gVisor issue 14688), so ERRNO/38 would reach glibc as EPERM.
 * NOTIFY hands the decision to an agent process that may allow the call:
 * it is neither, and an allowlist may not use it. */
static const char *const deny_actions[] = {"SCMP_ACT_ERRNO", "SCMP_ACT_KILL", "SCMP_ACT_KILL_PROCESS",
                                           "SCMP_ACT_KILL_THREAD", "SCMP_ACT_TRAP", "SCMP_ACT_TRACE"};
static const char *const ops[] = {"SCMP_CMP_NE", "SCMP_CMP_LT", "SCMP_CMP_LE", "SCMP_CMP_EQ",
                                  "SCMP_CMP_GE", "SCMP_CMP_GT", "SCMP_CMP_MASKED_EQ"};

#define IN(list, s) in_list(list, sizeof list / sizeof list[0], s)
static bool in_list(const char *const *list, size_t n, const char *s) {
  for (size_t i = 0; s && i < n; i++)
    if (strcmp(list[i], s) == 0)
      return true;
  return false;
}

static bool action_allows(const char *a) { return IN(allow_actions, a); }
static bool action_is_known_denial(const char *a) { return IN(deny_actions, a); }

/* ---- conditions -------------------------------------------------------- */

struct cond {
  unsigned long long index, value, value2;
  const char *op;
};

struct rule {
  struct cond *c;
  size_t n;
};

/* Numbers are read from their text: a 64-bit mask does not survive a
 * trip through double. */
static bool json_u64(const json_t *v, unsigned long long *out) {
  if (!json_is(v, JSON_NUMBER) || v->u.number.text == NULL)
    return false;
  const char *t = v->u.number.text;
  if (*t == '-')
    return false;
  char *end;
  errno = 0;
  *out = strtoull(t, &end, 10);
  return errno == 0 && *end == '\0' && end != t;
}

static int parse_cond(const json_t *a, struct cond *c, const char *where, tg_error **err) {
  if (!json_is(a, JSON_OBJECT))
    return tg_error_set(err, 0, "%s: each args entry must be an object", where);
  if (!json_u64(json_object_get(a, "index"), &c->index) || c->index > 5)
    return tg_error_set(err, 0, "%s: args index must be an integer 0..5", where);
  c->op = json_string_value(json_object_get(a, "op"));
  if (!IN(ops, c->op))
    return tg_error_set(err, 0, "%s: unknown args op \"%s\"; use one of SCMP_CMP_EQ, NE, LT, LE, GE, GT, MASKED_EQ",
                        where, c->op ? c->op : "(missing)");
  const json_t *v = json_object_get(a, "value"), *v2 = json_object_get(a, "valueTwo");
  c->value = c->value2 = 0;
  if ((v && !json_u64(v, &c->value)) || (v2 && !json_u64(v2, &c->value2)))
    return tg_error_set(err, 0, "%s: args value and valueTwo must be non-negative integers", where);
  return 0;
}

/* Can a caller change the verdict with the upper 32 bits alone, which
 * the kernel ignores for a 32-bit argument?  For an allowing rule that
 * is any comparison an upper bit can make true: NE, GT, GE (EQ, LT, LE
 * and MASKED_EQ only get harder to meet).  For a denying rule, any an
 * upper bit can make false: EQ, LT, LE, and MASKED_EQ whose mask
 * reaches above bit 31. */
static bool cond_evadable(const struct cond *c, bool allows) {
  if (allows)
    return strcmp(c->op, "SCMP_CMP_NE") == 0 || strcmp(c->op, "SCMP_CMP_GT") == 0 || strcmp(c->op, "SCMP_CMP_GE") == 0;
  if (strcmp(c->op, "SCMP_CMP_MASKED_EQ") == 0)
    return c->value > 0xffffffffULL;
  return strcmp(c->op, "SCMP_CMP_EQ") == 0 || strcmp(c->op, "SCMP_CMP_LT") == 0 || strcmp(c->op, "SCMP_CMP_LE") == 0;
}

static bool cond_equal(const struct cond *a, const struct cond *b) {
  return a->index == b->index && strcmp(a->op, b->op) == 0 && a->value == b->value && a->value2 == b->value2;
}

static bool rule_has_cond(const struct rule *r, const struct cond *c) {
  for (size_t i = 0; i < r->n; i++)
    if (cond_equal(&r->c[i], c))
      return true;
  return false;
}

/* every condition of weak is also in strong: strong allows no more. */
static bool rule_implies(const struct rule *strong, const struct rule *weak) {
  for (size_t i = 0; i < weak->n; i++)
    if (!rule_has_cond(strong, &weak->c[i]))
      return false;
  return true;
}

static void rules_free(struct rule *r, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(r[i].c);
  free(r);
}

/* ---- verdicts ---------------------------------------------------------- */

enum vkind { V_DENY, V_ALLOW, V_COND };

struct verdict {
  enum vkind kind;
  struct rule *rules; /* V_COND: allow rules, ORed */
  size_t n;
  const json_t *deny_rule; /* an unconditional known denial, for its action */
};

/* ---- which rules name a syscall --------------------------------------- */

/* A list's rules by syscall name, built once per list.  verdict_of() used
 * to read every name of every rule for each syscall it was asked about,
 * quadratic in the list: for a config that already carries a full
 * allowlist (an effective config, Docker's or containerd's default
 * profile) that was ~3 ms of every create (callgrind: 63 % of
 * oci_harden's instructions).  The index answers the same question (the
 * rules that name it, in list order, each once) in one lookup. */
struct sc_entry {
  const char *name; /* borrowed from the list */
  size_t *rules;    /* indices into "syscalls", ascending, each once */
  size_t n;
};

struct sc_index {
  const json_t *rules;      /* the list's "syscalls" */
  struct sc_entry *entries; /* in order of first appearance */
  size_t n;
  size_t *table; /* open addressing: entry index + 1, 0 = empty */
  size_t mask;
};

static size_t name_hash(const char *s) {
  size_t h = 1469598103934665603ull & SIZE_MAX;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* The entry for name, or NULL. */
static const struct sc_entry *index_find(const struct sc_index *ix, const char *name) {
  for (size_t h = name_hash(name) & ix->mask;; h = (h + 1) & ix->mask) {
    size_t e = ix->table[h];
    if (e == 0)
      return NULL;
    if (strcmp(ix->entries[e - 1].name, name) == 0)
      return &ix->entries[e - 1];
  }
}

static void index_add(struct sc_index *ix, const char *name, size_t rule) {
  size_t h = name_hash(name) & ix->mask;
  for (; ix->table[h] != 0; h = (h + 1) & ix->mask)
    if (strcmp(ix->entries[ix->table[h] - 1].name, name) == 0)
      break;
  if (ix->table[h] == 0) {
    ix->entries[ix->n] = (struct sc_entry){.name = name};
    ix->table[h] = ++ix->n;
  }
  struct sc_entry *e = &ix->entries[ix->table[h] - 1];
  if (e->n > 0 && e->rules[e->n - 1] == rule)
    return; /* a rule that names it twice is still one rule */
  e->rules = xrealloc(e->rules, (e->n + 1) * sizeof *e->rules);
  e->rules[e->n++] = rule;
}

/* Every string of a rule's "names", and the pre-1.0 single "name". */
static void index_build(const json_t *sc, struct sc_index *ix) {
  memset(ix, 0, sizeof *ix);
  ix->rules = json_object_get(sc, "syscalls");
  size_t mentions = 0;
  for (size_t i = 0; i < json_array_len(ix->rules); i++)
    mentions += json_array_len(json_object_get(json_array_get(ix->rules, i), "names")) + 1;
  size_t cap = 16;
  while (cap < 2 * mentions)
    cap *= 2;
  ix->mask = cap - 1;
  ix->table = xcalloc(cap, sizeof *ix->table);
  ix->entries = xcalloc(mentions + 1, sizeof *ix->entries);
  for (size_t i = 0; i < json_array_len(ix->rules); i++) {
    const json_t *r = json_array_get(ix->rules, i);
    const json_t *ns = json_object_get(r, "names");
    for (size_t k = 0; k < json_array_len(ns); k++) {
      const char *n = json_string_value(json_array_get(ns, k));
      if (n)
        index_add(ix, n, i);
    }
    const char *single = json_string_value(json_object_get(r, "name"));
    if (single)
      index_add(ix, single, i);
  }
}

static void index_free(struct sc_index *ix) {
  for (size_t i = 0; i < ix->n; i++)
    free(ix->entries[i].rules);
  free(ix->entries);
  free(ix->table);
  memset(ix, 0, sizeof *ix);
}

/* name's verdict under the list sc (indexed as ix). */
static int verdict_of(const json_t *sc, const struct sc_index *ix, const char *name, struct verdict *v,
                      tg_error **err) {
  bool allow_uncond = false, deny_cond = false;
  const json_t *deny_uncond = NULL;
  memset(v, 0, sizeof *v);
  const struct sc_entry *named = index_find(ix, name);
  for (size_t j = 0; named != NULL && j < named->n; j++) {
    const json_t *r = json_array_get(ix->rules, named->rules[j]);
    const char *action = json_string_value(json_object_get(r, "action"));
    const json_t *args = json_object_get(r, "args");
    size_t nargs = json_array_len(args);
    if (action_allows(action)) {
      if (nargs == 0) {
        allow_uncond = true;
        continue;
      }
      struct rule ru = {xcalloc(nargs, sizeof(struct cond)), nargs};
      for (size_t k = 0; k < nargs; k++)
        if (parse_cond(json_array_get(args, k), &ru.c[k], "linux.seccomp", err) < 0) {
          free(ru.c);
          rules_free(v->rules, v->n);
          v->rules = NULL;
          return -1;
        }
      v->rules = xrealloc(v->rules, (v->n + 1) * sizeof *v->rules);
      v->rules[v->n++] = ru;
    } else if (nargs == 0) {
      if (deny_uncond == NULL || !action_is_known_denial(json_string_value(json_object_get(deny_uncond, "action"))))
        deny_uncond = r;
    } else {
      deny_cond = true;
    }
  }
  /* Any denial rule wins, even a conditional one: we cannot express "allow
   * unless these conditions hold" exactly, so deny the syscall outright. */
  if (deny_uncond || deny_cond) {
    v->kind = V_DENY;
    v->deny_rule = deny_uncond;
  } else if (allow_uncond) {
    v->kind = V_ALLOW;
  } else if (v->n > 0) {
    v->kind = V_COND;
    return 0;
  } else {
    v->kind = action_allows(json_string_value(json_object_get(sc, "defaultAction"))) ? V_ALLOW : V_DENY;
  }
  rules_free(v->rules, v->n);
  v->rules = NULL;
  v->n = 0;
  return 0;
}

static void verdict_free(struct verdict *v) {
  rules_free(v->rules, v->n);
  v->rules = NULL;
  v->n = 0;
}

/* ---- validation -------------------------------------------------------- */

static int check_keys(const json_t *obj, const char *const *keys, size_t n, const char *where, tg_error **err) {
  for (size_t i = 0; i < obj->u.object.len; i++)
    if (!in_list(keys, n, obj->u.object.keys[i]))
      return tg_error_set(err, 0, "%s: unknown key \"%s\"", where, obj->u.object.keys[i]);
  return 0;
}

int oci_seccomp_validate_allowlist(const json_t *sc, const char *source, tg_error **err) {
  static const char *const top_keys[] = {"comment", "defaultAction", "defaultErrnoRet", "architectures", "flags",
                                         "syscalls"};
  static const char *const rule_keys[] = {"comment", "names", "action", "errnoRet", "args"};
  if (!json_is(sc, JSON_OBJECT))
    return tg_error_set(err, 0, "%s: a seccomp list must be a JSON object", source);
  if (check_keys(sc, top_keys, sizeof top_keys / sizeof top_keys[0], source, err) < 0)
    return -1;
  const char *def = json_string_value(json_object_get(sc, "defaultAction"));
  /* An allowlist must deny what it does not name; a default that allows
   * would make the "only tighter" reasoning about it meaningless. */
  if (!action_is_known_denial(def))
    return tg_error_set(err, 0, "%s: defaultAction \"%s\" must deny (SCMP_ACT_ERRNO, SCMP_ACT_KILL*, SCMP_ACT_TRAP)",
                        source, def ? def : "(missing)");
  const json_t *archs = json_object_get(sc, "architectures");
  if (json_array_len(archs) == 0)
    return tg_error_set(err, 0, "%s: architectures must list at least one SCMP_ARCH_* name", source);
  uint32_t tokens[16];
  size_t ntokens = 0;
  for (size_t i = 0; i < json_array_len(archs) && ntokens < 16; i++) {
    const char *a = json_string_value(json_array_get(archs, i));
    if (a == NULL || !arch_token(a, &tokens[ntokens]))
      return tg_error_set(err, 0, "%s: unknown architecture \"%s\"", source, a ? a : "(not a string)");
    ntokens++;
  }
  const json_t *rules = json_object_get(sc, "syscalls");
  if (!json_is(rules, JSON_ARRAY))
    return tg_error_set(err, 0, "%s: syscalls must be an array of rules", source);
  for (size_t i = 0; i < json_array_len(rules); i++) {
    const json_t *r = json_array_get(rules, i);
    cleanup_free char *where = xasprintf("%s: syscalls[%zu]", source, i);
    if (!json_is(r, JSON_OBJECT))
      return tg_error_set(err, 0, "%s must be an object", where);
    if (check_keys(r, rule_keys, sizeof rule_keys / sizeof rule_keys[0], where, err) < 0)
      return -1;
    const char *action = json_string_value(json_object_get(r, "action"));
    if (!action_allows(action) && !action_is_known_denial(action))
      return tg_error_set(err, 0, "%s: unknown or unsupported action \"%s\"", where, action ? action : "(missing)");
    const json_t *names = json_object_get(r, "names");
    if (json_array_len(names) == 0)
      return tg_error_set(err, 0, "%s: names must be a non-empty array", where);
    for (size_t k = 0; k < json_array_len(names); k++) {
      const char *name = json_string_value(json_array_get(names, k));
      if (name == NULL)
        return tg_error_set(err, 0, "%s: names[%zu] must be a string", where, k);
      /* Resolve on every architecture the filter covers: a typo would
       * otherwise be dropped silently by the runtime, and an allowlist
       * entry that silently vanishes breaks workloads in confusing ways. */
      for (size_t t = 0; t < ntokens; t++)
        if (seccomp_syscall_resolve_name_arch(tokens[t], name) < 0)
          return tg_error_set(err, 0, "%s: unknown syscall \"%s\" for %s (libseccomp %u.%u.%u cannot resolve it); fix the name or remove it",
                              where, name, json_string_value(json_array_get(archs, t)),
                              seccomp_version()->major, seccomp_version()->minor, seccomp_version()->micro);
    }
    const json_t *args = json_object_get(r, "args");
    for (size_t k = 0; k < json_array_len(args); k++) {
      struct cond c;
      if (parse_cond(json_array_get(args, k), &c, where, err) < 0)
        return -1;
      if (cond_evadable(&c, action_allows(action)))
        return tg_error_set(err, 0, "%s: args[%zu] %s compares all 64 bits, but the kernel reads most arguments (ioctl requests, flags, fds) as 32 bits: setting an upper bit would %s the rule (the TIOCSTI 0x100005412 shape); use SCMP_CMP_MASKED_EQ with a mask below 2^32",
                            where, k, c.op, action_allows(action) ? "satisfy" : "slip past");
    }
  }
  return 0;
}

int oci_seccomp_load(const char *path, json_t **out, tg_error **err) {
  cleanup_free char *buf = NULL;
  size_t len;
  if (read_file(path, 1 << 20, &buf, &len, err) < 0)
    return tg_error_wrap(err, "seccomp list");
  struct json_parse_options o = {.track_positions = true};
  json_t *sc = json_parse(buf, len, &o, err);
  if (sc == NULL)
    return tg_error_wrap(err, "%s", path);
  if (oci_seccomp_validate_allowlist(sc, path, err) < 0) {
    json_free(sc);
    return -1;
  }
  *out = sc;
  return 0;
}

/* ---- intersection ------------------------------------------------------ */

static json_t *new_u64(unsigned long long v) {
  json_t *n = json_new_number((double)v);
  /* keep 64-bit values exact: the text is what gets written out */
  free(n->u.number.text);
  n->u.number.text = xasprintf("%llu", v);
  return n;
}

static json_t *cond_to_json(const struct cond *c) {
  json_t *o = json_new_object();
  json_object_set(o, "index", json_new_integer((long long)c->index));
  json_object_set(o, "value", new_u64(c->value));
  json_object_set(o, "valueTwo", new_u64(c->value2));
  json_object_set(o, "op", json_new_string(c->op));
  return o;
}

static void emit_rule(json_t *syscalls, const char *name, const struct rule *r) {
  json_t *o = json_new_object();
  json_t *names = json_new_array();
  json_array_append(names, json_new_string(name));
  json_object_set(o, "names", names);
  json_object_set(o, "action", json_new_string("SCMP_ACT_ALLOW"));
  json_t *args = json_new_array();
  for (size_t i = 0; i < r->n; i++)
    json_array_append(args, cond_to_json(&r->c[i]));
  json_object_set(o, "args", args);
  json_array_append(syscalls, o);
}

static void emit_denial(json_t *syscalls, const char *name, const json_t *rule) {
  const char *action = json_string_value(json_object_get(rule, "action"));
  if (!action_is_known_denial(action))
    return; /* the default action denies it */
  json_t *o = json_new_object();
  json_t *names = json_new_array();
  json_array_append(names, json_new_string(name));
  json_object_set(o, "names", names);
  json_object_set(o, "action", json_new_string(action));
  const json_t *ret = json_object_get(rule, "errnoRet");
  if (ret)
    json_object_set(o, "errnoRet", json_copy(ret));
  json_array_append(syscalls, o);
}

/* (a AND b) for every pair; a pair that compares one argument in two
 * different ways is dropped (denied), since a rule cannot carry two
 * comparisons of one argument portably. */
static size_t merge_rules(json_t *syscalls, const char *name, const struct verdict *a, const struct verdict *b) {
  size_t emitted = 0;
  struct rule *done = NULL;
  size_t ndone = 0;
  for (size_t i = 0; i < a->n; i++)
    for (size_t k = 0; k < b->n; k++) {
      struct rule m = {xcalloc(a->rules[i].n + b->rules[k].n, sizeof(struct cond)), 0};
      bool conflict = false;
      for (size_t x = 0; x < a->rules[i].n; x++)
        m.c[m.n++] = a->rules[i].c[x];
      for (size_t y = 0; y < b->rules[k].n && !conflict; y++) {
        const struct cond *c = &b->rules[k].c[y];
        bool dup = false;
        for (size_t x = 0; x < m.n; x++) {
          if (cond_equal(&m.c[x], c))
            dup = true;
          else if (m.c[x].index == c->index)
            conflict = true;
        }
        if (!dup && !conflict)
          m.c[m.n++] = *c;
      }
      bool seen = false;
      for (size_t d = 0; d < ndone && !conflict; d++)
        if (done[d].n == m.n && rule_implies(&done[d], &m))
          seen = true;
      if (conflict || seen) {
        free(m.c);
        continue;
      }
      emit_rule(syscalls, name, &m);
      emitted++;
      done = xrealloc(done, (ndone + 1) * sizeof *done);
      done[ndone++] = m;
    }
  rules_free(done, ndone);
  return emitted;
}

int oci_seccomp_intersect(const json_t *ours, const json_t *input, json_t **out, tg_error **err) {
  if (input == NULL) {
    json_t *c = json_copy(ours);
    json_object_del(c, "comment");
    json_t *rules = json_object_get(c, "syscalls");
    for (size_t i = 0; i < json_array_len(rules); i++)
      json_object_del(json_array_get(rules, i), "comment");
    *out = c;
    return 0;
  }
  if (!json_is(input, JSON_OBJECT))
    return tg_error_set(err, 0, "linux.seccomp must be an object; fix the config or remove linux.seccomp");
  if (json_string_value(json_object_get(input, "defaultAction")) == NULL)
    return tg_error_set(err, 0, "linux.seccomp.defaultAction is missing; fix the config or remove linux.seccomp");

  json_t *res = json_new_object();
  json_object_set(res, "defaultAction", json_copy(json_object_get(ours, "defaultAction")));
  if (json_object_get(ours, "defaultErrnoRet"))
    json_object_set(res, "defaultErrnoRet", json_copy(json_object_get(ours, "defaultErrnoRet")));

  /* A filter kills (or fails) calls from architectures it does not list,
   * so fewer architectures is tighter. */
  const json_t *in_arches = json_object_get(input, "architectures");
  json_t *arch = json_new_array();
  const json_t *our_arches = json_object_get(ours, "architectures");
  for (size_t i = 0; i < json_array_len(our_arches); i++) {
    const char *a = json_string_value(json_array_get(our_arches, i));
    if (a && (json_array_has_string(in_arches, a) || strcmp(a, native_arch_name()) == 0))
      json_array_append(arch, json_new_string(a));
  }
  json_object_set(res, "architectures", arch);

  const json_t *flags = json_object_get(input, "flags");
  json_t *keep_flags = json_new_array();
  for (size_t i = 0; i < json_array_len(flags); i++) {
    const char *f = json_string_value(json_array_get(flags, i));
    if (f && (strcmp(f, "SECCOMP_FILTER_FLAG_TSYNC") == 0 || strcmp(f, "SECCOMP_FILTER_FLAG_LOG") == 0))
      json_array_append(keep_flags, json_new_string(f));
  }
  if (json_array_len(keep_flags) > 0)
    json_object_set(res, "flags", keep_flags);
  else
    json_free(keep_flags);

  json_t *syscalls = json_new_array();
  json_t *allowed = json_new_array();
  struct sc_index io, ii;
  index_build(ours, &io);
  index_build(input, &ii);
  int ret = 0;
  for (size_t i = 0; i < io.n && ret == 0; i++) {
    const char *name = io.entries[i].name;
    struct verdict vo, vi;
    if (verdict_of(ours, &io, name, &vo, err) < 0) {
      ret = -1;
      break;
    }
    if (verdict_of(input, &ii, name, &vi, err) < 0) {
      verdict_free(&vo);
      ret = tg_error_wrap(err, "linux.seccomp (syscall %s)", name);
      break;
    }
    if (vo.kind == V_DENY) {
      if (vo.deny_rule)
        emit_denial(syscalls, name, vo.deny_rule);
    } else if (vi.kind == V_DENY) {
      if (vi.deny_rule)
        emit_denial(syscalls, name, vi.deny_rule);
    } else if (vo.kind == V_ALLOW && vi.kind == V_ALLOW) {
      json_array_append(allowed, json_new_string(name));
    } else if (vo.kind == V_ALLOW) {
      for (size_t k = 0; k < vi.n; k++)
        emit_rule(syscalls, name, &vi.rules[k]);
    } else if (vi.kind == V_ALLOW) {
      for (size_t k = 0; k < vo.n; k++)
        emit_rule(syscalls, name, &vo.rules[k]);
    } else {
      merge_rules(syscalls, name, &vo, &vi);
    }
    verdict_free(&vo);
    verdict_free(&vi);
  }
  index_free(&io);
  index_free(&ii);
  if (ret < 0) {
    json_free(allowed);
    json_free(syscalls);
    json_free(res);
    return -1;
  }
  json_t *all = json_new_array();
  if (json_array_len(allowed) > 0) {
    json_t *r = json_new_object();
    json_object_set(r, "names", allowed);
    json_object_set(r, "action", json_new_string("SCMP_ACT_ALLOW"));
    json_array_append(all, r);
  } else {
    json_free(allowed);
  }
  for (size_t i = 0; i < json_array_len(syscalls); i++)
    json_array_append(all, json_copy(json_array_get(syscalls, i)));
  json_free(syscalls);
  json_object_set(res, "syscalls", all);
  *out = res;
  return 0;
}

/* ---- comparison -------------------------------------------------------- */

static bool verdict_subset(const struct verdict *a, const struct verdict *b) {
  if (a->kind == V_DENY || b->kind == V_ALLOW)
    return true;
  if (b->kind == V_DENY || a->kind == V_ALLOW)
    return false;
  for (size_t i = 0; i < a->n; i++) {
    bool covered = false;
    for (size_t k = 0; k < b->n && !covered; k++)
      covered = rule_implies(&a->rules[i], &b->rules[k]);
    if (!covered)
      return false;
  }
  return true;
}

bool oci_seccomp_subset(const json_t *a, const json_t *b, char **why) {
  if (b == NULL)
    return true;
  if (a == NULL) {
    if (why)
      *why = xstrdup("seccomp: the first has no seccomp profile, the second has one");
    return false;
  }
  bool a_def = action_allows(json_string_value(json_object_get(a, "defaultAction")));
  bool b_def = action_allows(json_string_value(json_object_get(b, "defaultAction")));
  if (a_def && !b_def) {
    if (why)
      *why = xstrdup("seccomp: the first allows unlisted syscalls, the second denies them");
    return false;
  }
  const json_t *aa = json_object_get(a, "architectures"), *ba = json_object_get(b, "architectures");
  for (size_t i = 0; i < json_array_len(aa); i++) {
    const char *n = json_string_value(json_array_get(aa, i));
    if (n && !json_array_has_string(ba, n) && strcmp(n, native_arch_name()) != 0) {
      if (why)
        *why = xasprintf("seccomp: architecture %s is covered by the first only", n);
      return false;
    }
  }
  struct sc_index ia, ib;
  index_build(a, &ia);
  index_build(b, &ib);
  bool ok = true;
  /* a's names, then b's that a does not name (their verdict under a is
   * a's default). */
  for (size_t i = 0; i < ia.n + ib.n && ok; i++) {
    const char *name = i < ia.n ? ia.entries[i].name : ib.entries[i - ia.n].name;
    if (i >= ia.n && index_find(&ia, name) != NULL)
      continue;
    struct verdict va, vb;
    tg_error *e = NULL;
    if (verdict_of(a, &ia, name, &va, &e) < 0) {
      tg_error_free(&e);
      continue; /* malformed rules cannot be applied: nothing allowed by them */
    }
    if (verdict_of(b, &ib, name, &vb, &e) < 0) {
      tg_error_free(&e);
      verdict_free(&va);
      ok = false;
      if (why)
        *why = xasprintf("seccomp: the second's rules for %s are malformed", name);
      break;
    }
    if (!verdict_subset(&va, &vb)) {
      ok = false;
      if (why)
        *why = xasprintf("seccomp: syscall %s is allowed by the first%s and not by the second",
                         name, va.kind == V_COND ? " (under conditions)" : "");
    }
    verdict_free(&va);
    verdict_free(&vb);
  }
  index_free(&ia);
  index_free(&ib);
  return ok;
}
