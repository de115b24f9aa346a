/* One tool under its ceiling, call by call (ceiling_cases.h).
 *
 * The arguments any rule of either tool names are the dimensions; each
 * has its representatives (ceiling_values.c), and a dotted name can be
 * written nested ({"a": {"b": 1}}) or as a literal key ({"a.b": 1}),
 * which rules read alike but a schema may not: every split is tried.  The
 * product of the choices is every region of the rules; for each, a
 * concrete call is built, its required members the policy's schema asks
 * for filled in, and both tools decide it with the gate's own code.  The
 * arguments only the schemas name vary one at a time beside each
 * combination: a schema is a conjunction over its members, so a value it
 * refuses shows with the others at an accepted example. */
#include "governance/ceiling.h"
#include "governance/policy.h"
#include "governance/ceiling_cases.h"

#include <stdlib.h>
#include <string.h>

#include "governance/args_canonical.h"
#include "base/util.h"

/* Past this many concrete calls per tool the check stops and says so:
 * never a sample presented as a proof. */
#define CASE_LIMIT 2000000ULL
/* A name with more dots than this is tried only fully nested and fully
 * literal (and the answer is then "not proved" rather than "within"). */
#define MAX_SPLIT_DOTS 4

/* The name of the undeclared member tried at the top of the arguments. */
#define UNDECLARED "_ceiling_extra"

struct dim {
  char *name;
  json_t **vals; /* [0] is NULL: absent */
  size_t nvals;
  unsigned layouts; /* ways to write the name: 1 << dots, or 2 */
  int dots;
  bool rule;
};

struct example_cache {
  const json_t **nodes;
  json_t **examples;
  size_t n;
};

struct calls {
  const struct tool *tp, *tc;
  const json_t *sp, *sc;
  struct dim *dims;
  size_t ndims, nrule;
  bool exact;
  char *why;
  struct example_cache cache;
  /* what was found */
  json_t *witness;
  enum effect pe, ce;
  char *preason, *creason;
  json_t *schema_witness;
  char *schema_why;
  bool hidden; /* a rule region more permissive, but the policy's schema
                  refused its representative */
  unsigned long long cases;
};

static void add_name(struct calls *c, const char *name, bool rule) {
  for (size_t i = 0; i < c->ndims; i++)
    if (strcmp(c->dims[i].name, name) == 0)
      return;
  c->dims = xrealloc(c->dims, (c->ndims + 1) * sizeof *c->dims);
  struct dim *d = &c->dims[c->ndims++];
  memset(d, 0, sizeof *d);
  d->name = xstrdup(name);
  d->rule = rule;
  for (const char *p = name; *p; p++)
    d->dots += *p == '.';
  d->layouts = d->dots <= MAX_SPLIT_DOTS ? 1u << d->dots : 2;
  if (d->dots > MAX_SPLIT_DOTS) {
    c->exact = false;
    if (c->why == NULL)
      c->why = xasprintf("args.%s has more than %d dots", name, MAX_SPLIT_DOTS);
  }
}

static void names_of(struct calls *c, const struct condition *cond) {
  if (cond->op == OP_ALL || cond->op == OP_ANY) {
    for (size_t i = 0; i < cond->nchildren; i++)
      names_of(c, &cond->children[i]);
    return;
  }
  add_name(c, cond->arg, true);
}

static void schema_names(struct calls *c, const json_t *node, const char *prefix, unsigned depth) {
  const json_t *props = json_object_get(node, "properties");
  if (!json_is(props, JSON_OBJECT) || depth > 16)
    return;
  for (size_t i = 0; i < props->u.object.len; i++) {
    cleanup_free char *name = prefix ? xasprintf("%s.%s", prefix, props->u.object.keys[i])
                                     : xstrdup(props->u.object.keys[i]);
    add_name(c, name, false);
    schema_names(c, props->u.object.values[i], name, depth + 1);
  }
}

/* ---- one value per region ---- */

/* A leaf condition on one value alone: 1 holds, 0 fails, 2 mistyped. */
static int leaf_on(const struct condition *c, const json_t *v) {
  bool numeric = c->op == OP_LT || c->op == OP_LE || c->op == OP_GT || c->op == OP_GE;
  if ((numeric && !json_is(v, JSON_NUMBER)) || (c->op == OP_PREFIX && !json_is(v, JSON_STRING)))
    return 2;
  json_t *args = json_new_object();
  json_object_set(args, c->arg, json_copy(v)); /* the literal key: read first */
  int r = condition_holds(c, args);
  json_free(args);
  return r;
}

static void leaf_signature(const struct condition *c, const char *name, const json_t *v,
                           struct json_buf *sig) {
  if (c->op == OP_ALL || c->op == OP_ANY) {
    for (size_t i = 0; i < c->nchildren; i++)
      leaf_signature(&c->children[i], name, v, sig);
    return;
  }
  if (strcmp(c->arg, name) == 0)
    json_buf_raw(sig, &"012"[leaf_on(c, v)], 1);
}

/* Keep one value of each signature: what every leaf on this name and
 * every schema node it reaches says of it.  Objects are all kept: a
 * longer name reaches inside them. */
static void one_per_region(struct calls *c, struct dim *d) {
  const struct tool *tools[2] = {c->tp, c->tc};
  const json_t *schemas[2] = {c->sp, c->sc};
  struct schema **compiled = NULL;
  size_t ncompiled = 0;
  for (size_t s = 0; s < 2; s++) {
    size_t n = 0;
    const json_t **nodes = ceiling_schema_nodes(schemas[s], d->name, &n);
    for (size_t i = 0; i < n; i++) {
      struct policy_errors errs = {.file = "ceiling"};
      compiled = xrealloc(compiled, (ncompiled + 1) * sizeof *compiled);
      compiled[ncompiled++] = schema_compile(nodes[i], "args", false, &errs);
      policy_errors_free(&errs);
    }
    free(nodes);
  }
  char **seen = xcalloc(d->nvals, sizeof *seen);
  size_t kept = 0;
  for (size_t i = 0; i < d->nvals; i++) {
    json_t *v = d->vals[i];
    if (v == NULL || json_is(v, JSON_OBJECT)) {
      d->vals[kept++] = v;
      continue;
    }
    struct json_buf sig = {0};
    json_buf_lit(&sig, "s");
    for (size_t s = 0; s < 2; s++)
      for (size_t r = 0; r < tools[s]->nrules; r++)
        if (tools[s]->rules[r].has_condition)
          leaf_signature(&tools[s]->rules[r].condition, d->name, v, &sig);
    for (size_t k = 0; k < ncompiled; k++) {
      char *why = NULL;
      json_buf_raw(&sig, compiled[k] == NULL || schema_validate(compiled[k], v, &why) ? "+" : "-", 1);
      free(why);
    }
    bool dup = false;
    for (size_t j = 0; j < kept && !dup; j++)
      dup = seen[j] != NULL && strcmp(seen[j], sig.s) == 0;
    if (dup) {
      json_free(v);
      free(sig.s);
      continue;
    }
    seen[kept] = sig.s;
    d->vals[kept++] = v;
  }
  for (size_t i = 0; i < kept; i++)
    free(seen[i]);
  free(seen);
  d->nvals = kept;
  for (size_t k = 0; k < ncompiled; k++)
    schema_free(compiled[k]);
  free(compiled);
}

static int by_length(const void *a, const void *b) {
  const struct dim *x = a, *y = b;
  if (x->rule != y->rule)
    return x->rule ? -1 : 1;
  size_t lx = strlen(x->name), ly = strlen(y->name);
  return lx < ly ? -1 : lx > ly ? 1 : strcmp(x->name, y->name);
}

/* ---- building a call ---- */

/* Write val at name in args with the dots whose bit is set in layout
 * nested, the others kept literal.  False when an intermediate member is
 * there but not an object (another layout covers that case). */
static bool set_at(json_t *args, const struct dim *d, unsigned layout, const json_t *val) {
  if (d->layouts == 2 && d->dots > 1 && layout == 1)
    layout = (1u << d->dots) - 1; /* fully nested */
  json_t *cur = args;
  const char *seg = d->name;
  int dot = 0;
  for (const char *p = d->name;; p++) {
    if (*p == '.' && (layout >> dot++ & 1)) {
      cleanup_free char *key = xstrndup(seg, (size_t)(p - seg));
      json_t *child = json_object_get(cur, key);
      if (child == NULL) {
        child = json_new_object();
        json_object_set(cur, key, child);
      } else if (!json_is(child, JSON_OBJECT)) {
        return false;
      }
      cur = child;
      seg = p + 1;
    } else if (*p == '\0') {
      json_object_set(cur, seg, json_copy(val));
      return true;
    }
  }
}

static const json_t *example_for(struct calls *c, const json_t *node) {
  struct example_cache *k = &c->cache;
  for (size_t i = 0; i < k->n; i++)
    if (k->nodes[i] == node)
      return k->examples[i];
  k->nodes = xrealloc(k->nodes, (k->n + 1) * sizeof *k->nodes);
  k->examples = xrealloc(k->examples, (k->n + 1) * sizeof *k->examples);
  k->nodes[k->n] = node;
  k->examples[k->n] = ceiling_schema_example(node);
  return k->examples[k->n++];
}

static bool is_rule_name(const struct calls *c, const char *name) {
  for (size_t i = 0; i < c->nrule; i++)
    if (strcmp(c->dims[i].name, name) == 0)
      return true;
  return false;
}

/* Fill the members the policy's schema requires and no rule names (a
 * rule's argument keeps the value the case chose, absent included). */
static void complete(struct calls *c, json_t *obj, const json_t *node, const char *prefix,
                     unsigned depth) {
  if (!json_is(obj, JSON_OBJECT) || !json_is(node, JSON_OBJECT) || depth > 16)
    return;
  const json_t *req = json_object_get(node, "required");
  const json_t *props = json_object_get(node, "properties");
  for (size_t i = 0; i < json_array_len(req); i++) {
    const char *k = json_string_value(json_array_get(req, i));
    if (k == NULL || json_object_get(obj, k) != NULL)
      continue;
    cleanup_free char *name = prefix ? xasprintf("%s.%s", prefix, k) : xstrdup(k);
    if (is_rule_name(c, name))
      continue;
    const json_t *sub = json_object_get(props, k);
    const json_t *ex = sub ? example_for(c, sub) : NULL;
    json_object_set(obj, k, ex ? json_copy(ex) : json_new_null());
  }
  for (size_t i = 0; i < obj->u.object.len; i++) {
    const json_t *sub = json_object_get(props, obj->u.object.keys[i]);
    if (sub == NULL)
      continue;
    cleanup_free char *name = prefix ? xasprintf("%s.%s", prefix, obj->u.object.keys[i])
                                     : xstrdup(obj->u.object.keys[i]);
    complete(c, obj->u.object.values[i], sub, name, depth + 1);
  }
}

/* ---- deciding it ---- */

static enum effect rules_only(const struct tool *t, const json_t *args, const char **reason,
                              char **mistyped) {
  return rules_decide(t->rules, t->nrules, args, reason, mistyped);
}

static void decide_case(struct calls *c, const json_t *built) {
  char *why = NULL;
  cleanup_json json_t *rewritten = NULL;
  const json_t *args = args_canonical_form(built, &rewritten, &why);
  free(why);
  if (args == NULL)
    return; /* a bad_request under both (an ambiguous dotted name) */
  c->cases++;
  char *wp = NULL, *wc = NULL;
  bool accp = schema_validate(c->tp->args, args, &wp);
  bool accc = schema_validate(c->tc->args, args, &wc);
  const char *rp = NULL, *rc = NULL;
  char *mp = NULL, *mc = NULL;
  enum effect ep = rules_only(c->tp, args, &rp, &mp);
  enum effect ec = rules_only(c->tc, args, &rc, &mc);
  enum effect dp = accp ? ep : EFFECT_DENY, dc = accc ? ec : EFFECT_DENY;
  if (c->witness == NULL && ceiling_rank(dp) > ceiling_rank(dc)) {
    c->witness = json_copy(args);
    c->pe = dp;
    c->ce = dc;
    c->preason = xstrdup(rp);
    c->creason = accc ? xstrdup(rc) : xasprintf("its schema refuses it: %s", wc);
  }
  if (c->schema_witness == NULL && accp && !accc) {
    c->schema_witness = json_copy(args);
    c->schema_why = xstrdup(wc);
  }
  if (!accp && ceiling_rank(ep) > ceiling_rank(ec))
    c->hidden = true;
  free(wp);
  free(wc);
  free(mp);
  free(mc);
}

/* The case: choice[i] is dimension i's value index and layout; extra is
 * one schema-only dimension's (or -1). */
static void run_case(struct calls *c, const size_t *val, const unsigned *layout, long extra,
                     size_t extra_val, unsigned extra_layout) {
  size_t n = c->nrule + (extra >= 0);
  cleanup_json json_t *args = json_new_object();
  for (size_t k = 0; k < n; k++) {
    const struct dim *d = k < c->nrule ? &c->dims[k] : &c->dims[extra];
    size_t v = k < c->nrule ? val[k] : extra_val;
    unsigned l = k < c->nrule ? layout[k] : extra_layout;
    if (d->vals[v] == NULL)
      continue;
    if (!set_at(args, d, l, d->vals[v]))
      return;
  }
  complete(c, args, c->sp, NULL, 0);
  decide_case(c, args);
}

static bool done(const struct calls *c, bool schema_proved) {
  return c->witness != NULL && (schema_proved || c->schema_witness != NULL);
}

static void enumerate(struct calls *c, bool schema_proved) {
  unsigned long long rules = 1, extra = 1;
  for (size_t i = 0; i < c->ndims; i++) {
    unsigned long long k = (unsigned long long)c->dims[i].nvals * c->dims[i].layouts;
    if (i < c->nrule)
      rules = rules > CASE_LIMIT ? rules : rules * k;
    else
      extra += k;
  }
  if (rules > CASE_LIMIT || rules * extra > CASE_LIMIT) {
    c->exact = false;
    free(c->why);
    c->why = xasprintf("its rules and schemas make more than %llu cases to decide; "
                       "compare fewer arguments per tool",
                       CASE_LIMIT);
    return;
  }
  size_t *val = xcalloc(c->nrule + 1, sizeof *val);
  unsigned *layout = xcalloc(c->nrule + 1, sizeof *layout);
  for (;;) {
    run_case(c, val, layout, -1, 0, 0);
    /* Under a schema proved within the ceiling's, the ceiling's schema
     * accepts whatever the policy's does: members no rule reads cannot
     * change either decision. */
    for (size_t e = c->nrule; !schema_proved && e < c->ndims && !done(c, schema_proved); e++)
      for (size_t v = 1; v < c->dims[e].nvals; v++)
        for (unsigned l = 0; l < c->dims[e].layouts; l++)
          run_case(c, val, layout, (long)e, v, l);
    if (done(c, schema_proved))
      break;
    /* next combination (an odometer over value, then layout) */
    size_t i = 0;
    for (; i < c->nrule; i++) {
      if (++layout[i] < c->dims[i].layouts)
        break;
      layout[i] = 0;
      if (++val[i] < c->dims[i].nvals)
        break;
      val[i] = 0;
    }
    if (i == c->nrule)
      break;
  }
  free(val);
  free(layout);
}

static const char *verb(enum effect e) {
  switch (e) {
  case EFFECT_ALLOW: return "allows it";
  case EFFECT_APPROVE: return "asks for approval";
  case EFFECT_DENY: break;
  }
  return "denies it";
}

static void report(struct calls *c, bool schema_proved, struct ceiling_result *r) {
  const char *name = c->tp->name;
  if (c->witness != NULL) {
    cleanup_free char *a = json_dump(c->witness, false, NULL);
    ceiling_add_witness(r, name, c->witness, c->pe, c->ce,
                        "tools.%s: the call %s: the policy %s (%s), the ceiling %s (%s)", name, a,
                        verb(c->pe), c->preason, verb(c->ce), c->creason);
  }
  if (!schema_proved) {
    if (c->schema_witness != NULL) {
      cleanup_free char *a = json_dump(c->schema_witness, false, NULL);
      ceiling_add_witness(r, name, c->schema_witness, EFFECT_DENY, EFFECT_DENY,
                          "tools.%s.args: the policy's schema accepts %s, which the ceiling's "
                          "refuses (%s): make the schema at least as strict as the ceiling's",
                          name, a, c->schema_why);
    } else if (!c->exact || ceiling_schema_opaque(c->sp) || ceiling_schema_opaque(c->sc)) {
      /* A pattern's language is not among the representatives: without
       * a witness and without the structural proof, no answer. */
      ceiling_add_undecided(r, "tools.%s.args: cannot show that the policy's schema accepts "
                               "nothing the ceiling's refuses (%s): use the ceiling's schema "
                               "keyword for keyword, or stricter",
                            name, c->why ? c->why : "a pattern or items keyword differs");
    }
  }
  if (c->witness == NULL && (!c->exact || (c->hidden && ceiling_schema_opaque(c->sp))))
    ceiling_add_undecided(r, "tools.%s: cannot decide every call exactly (%s); no call was "
                             "found more permissive than the ceiling",
                          name, c->why ? c->why : "the policy's schema has a pattern or items "
                                                  "keyword that refused a more permissive "
                                                  "rule's representative value");
  r->cases += c->cases;
}

void ceiling_check_calls(const struct tool *tp, const struct tool *tc, struct ceiling_result *r) {
  struct calls c = {.tp = tp, .tc = tc, .sp = tp->args_source, .sc = tc->args_source,
                    .exact = true};
  for (size_t i = 0; i < tp->nrules; i++)
    if (tp->rules[i].has_condition)
      names_of(&c, &tp->rules[i].condition);
  for (size_t i = 0; i < tc->nrules; i++)
    if (tc->rules[i].has_condition)
      names_of(&c, &tc->rules[i].condition);
  schema_names(&c, c.sp, NULL, 0);
  schema_names(&c, c.sc, NULL, 0);
  /* A member no schema declares: what additionalProperties decides at the
   * top (inside a declared object, its representatives carry one). */
  if (c.sp != NULL || c.sc != NULL)
    add_name(&c, UNDECLARED, false);
  if (c.ndims > 0)
    qsort(c.dims, c.ndims, sizeof *c.dims, by_length);
  while (c.nrule < c.ndims && c.dims[c.nrule].rule)
    c.nrule++;
  struct value_sources src = {.tools = {tp, tc}, .schemas = {c.sp, c.sc}};
  for (size_t i = 0; i < c.ndims; i++)
  {
    c.dims[i].vals = ceiling_values(&src, c.dims[i].name, &c.dims[i].nvals, &c.exact, &c.why);
    one_per_region(&c, &c.dims[i]);
  }
  bool schema_proved = ceiling_schema_within(c.sp, c.sc);
  enumerate(&c, schema_proved);
  report(&c, schema_proved, r);
  for (size_t i = 0; i < c.ndims; i++) {
    free(c.dims[i].name);
    ceiling_values_free(c.dims[i].vals, c.dims[i].nvals);
  }
  free(c.dims);
  for (size_t i = 0; i < c.cache.n; i++)
    json_free(c.cache.examples[i]);
  free(c.cache.nodes);
  free(c.cache.examples);
  json_free(c.witness);
  json_free(c.schema_witness);
  free(c.preason);
  free(c.creason);
  free(c.schema_why);
  free(c.why);
}
