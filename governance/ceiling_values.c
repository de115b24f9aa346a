/* The representatives of an argument's regions (ceiling_cases.h).
 *
 * Why finitely many values suffice: a rule sees an argument only through
 * its leaf operators.  ==, != and "in" ask "equal to this constant?";
 * <, <=, >, >= ask where a number lies among the thresholds; "prefix"
 * asks which of finitely many prefixes a string has; "exists" asks whether
 * it is there; a wrong type makes a comparison mistyped.  The schema adds
 * enum (constants), minimum and maximum (thresholds), an integer type
 * (integral or not) and maxLength (how long).  Two values that agree on
 * all of these get the same decision from both policies, so one value per
 * combination of answers stands for all of them. */
#include "governance/ceiling_cases.h"

#include <stdlib.h>
#include <string.h>

#include "governance/args_canonical.h"
#include "base/util.h"

/* ---- numbers: thresholds scaled to integers, exact in 128 bits ---- */

typedef __int128 wide;

/* Beyond this many digits (scaled) a threshold is not represented exactly,
 * and the check says so instead of guessing. */
#define WIDE_DIGITS 36

/* value = digits * 10^exp10 for the canonical text t. */
static bool split_number(const char *t, bool *neg, char *digits, size_t cap, long *exp10) {
  size_t n = 0;
  long frac = 0, e = 0;
  bool point = false;
  *neg = *t == '-';
  t += *neg;
  for (; *t && *t != 'e' && *t != 'E'; t++) {
    if (*t == '.') {
      point = true;
      continue;
    }
    if (*t < '0' || *t > '9')
      return false;
    if (n == 0 && *t == '0')
      { frac += point; continue; } /* a leading zero carries no digit */
    if (n + 1 >= cap)
      return false;
    digits[n++] = *t;
    frac += point;
  }
  digits[n] = '\0';
  if (*t)
    e = strtol(t + 1, NULL, 10);
  *exp10 = e - frac;
  return true;
}

static long fraction_digits(const char *t) {
  bool neg;
  char d[64];
  long e;
  if (!split_number(t, &neg, d, sizeof d, &e))
    return 0;
  return e < 0 ? -e : 0;
}

/* t * 10^scale as an integer, or false when it does not fit. */
static bool to_wide(const char *t, long scale, wide *out) {
  bool neg;
  char d[64];
  long e;
  if (!split_number(t, &neg, d, sizeof d, &e) || e + scale < 0)
    return false;
  long len = (long)strlen(d);
  if (len + e + scale > WIDE_DIGITS)
    return false;
  wide w = 0;
  for (long i = 0; i < len; i++)
    w = w * 10 + (d[i] - '0');
  for (long i = 0; i < e + scale; i++)
    w *= 10;
  *out = neg ? -w : w;
  return true;
}

static json_t *from_wide(wide w, long scale) {
  char buf[96];
  size_t n = 0;
  bool neg = w < 0;
  unsigned __int128 a = neg ? (unsigned __int128)(-(w + 1)) + 1 : (unsigned __int128)w;
  char rev[64];
  size_t r = 0;
  do {
    rev[r++] = (char)('0' + (int)(a % 10));
    a /= 10;
  } while (a != 0);
  while ((long)r <= scale)
    rev[r++] = '0';
  if (neg)
    buf[n++] = '-';
  for (size_t i = r; i-- > 0;) {
    buf[n++] = rev[i];
    if ((long)i == scale && scale > 0)
      buf[n++] = '.';
  }
  buf[n] = '\0';
  cleanup_free char *canon = number_canonical(buf, n);
  return json_new_number_text(canon, strlen(canon));
}

static wide floor_div(wide a, wide b) {
  wide q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int cmp_text(const void *a, const void *b) {
  return number_compare(*(const char *const *)a, *(const char *const *)b);
}

/* ---- collecting the constants ---- */

struct constants {
  const char **numbers; size_t nnum;   /* thresholds (borrowed texts) */
  const char **prefixes; size_t npre;  /* borrowed */
  const json_t **values; size_t nval;  /* compared for equality (borrowed) */
  long long *lengths; size_t nlen;     /* maxLength */
  bool nul_prefix;                     /* a prefix holds a NUL byte */
};

static void push(void *arrp, size_t *n, const void *item, size_t size) {
  char **arr = arrp;
  *arr = xrealloc(*arr, (*n + 1) * size);
  memcpy(*arr + *n * size, item, size);
  (*n)++;
}

static void add_equal(struct constants *k, const json_t *v) {
  push(&k->values, &k->nval, &v, sizeof v);
  if (json_is(v, JSON_NUMBER)) {
    const char *t = v->u.number.text;
    push(&k->numbers, &k->nnum, &t, sizeof t);
  }
}

static void from_condition(const struct condition *c, const char *name, struct constants *k) {
  if (c->op == OP_ALL || c->op == OP_ANY) {
    for (size_t i = 0; i < c->nchildren; i++)
      from_condition(&c->children[i], name, k);
    return;
  }
  if (strcmp(c->arg, name) != 0)
    return;
  switch (c->op) {
  case OP_EQ: case OP_NE:
    add_equal(k, c->value);
    break;
  case OP_LT: case OP_LE: case OP_GT: case OP_GE: {
    const char *t = c->value->u.number.text;
    push(&k->numbers, &k->nnum, &t, sizeof t);
    break;
  }
  case OP_IN:
    for (size_t i = 0; i < json_array_len(c->value); i++)
      add_equal(k, json_array_get(c->value, i));
    break;
  case OP_PREFIX: {
    const char *s = json_string_value(c->value);
    if (strlen(s) != c->value->u.string.len)
      k->nul_prefix = true; /* its extensions are not C strings */
    else
      push(&k->prefixes, &k->npre, &s, sizeof s);
    break;
  }
  default:
    break;
  }
}

static void from_schema(const json_t *node, struct constants *k, json_t *owned) {
  const json_t *e = json_object_get(node, "enum");
  /* Canonical, as the schema compiles them (exact numbers). */
  if (json_is(e, JSON_ARRAY)) {
    char *why = NULL;
    json_t *c = args_canonicalize(e, &why);
    free(why);
    if (c != NULL) {
      json_array_append(owned, c);
      for (size_t i = 0; i < json_array_len(c); i++)
        add_equal(k, json_array_get(c, i));
    }
  }
  static const char *const bounds[] = {"minimum", "maximum"};
  for (size_t b = 0; b < 2; b++) {
    const json_t *m = json_object_get(node, bounds[b]);
    if (!json_is(m, JSON_NUMBER))
      continue;
    char *t = number_canonical(m->u.number.text, strlen(m->u.number.text));
    if (t == NULL)
      continue;
    json_t *held = json_new_string(t);
    json_array_append(owned, held);
    free(t);
    const char *ts = json_string_value(held);
    push(&k->numbers, &k->nnum, &ts, sizeof ts);
  }
  long long len;
  if (json_integer_value(json_object_get(node, "maxLength"), &len) && len >= 0)
    push(&k->lengths, &k->nlen, &len, sizeof len);
}

/* ---- the representatives ---- */

struct out {
  json_t **v;
  size_t n;
};

static bool has(const struct out *o, const json_t *v) {
  for (size_t i = 0; i < o->n; i++)
    if (o->v[i] != NULL && args_equal(o->v[i], v))
      return true;
  return false;
}

static void add(struct out *o, json_t *v) {
  if (has(o, v)) {
    json_free(v);
    return;
  }
  push(&o->v, &o->n, &v, sizeof v);
}

static bool numbers(const struct constants *k, struct out *o, char **why) {
  const char **t = xcalloc(k->nnum + 1, sizeof *t);
  size_t n = 0;
  for (size_t i = 0; i < k->nnum; i++)
    t[n++] = k->numbers[i];
  qsort(t, n, sizeof *t, cmp_text);
  size_t u = 0;
  for (size_t i = 0; i < n; i++)
    if (u == 0 || number_compare(t[u - 1], t[i]) != 0)
      t[u++] = t[i];
  /* One digit more than any threshold has: between two neighbours there
   * is then room for a value that is not integral (it ends in 1). */
  long scale = 1;
  for (size_t i = 0; i < u; i++)
    if (fraction_digits(t[i]) + 1 > scale)
      scale = fraction_digits(t[i]) + 1;
  bool ok = true;
  wide *w = xcalloc(u + 1, sizeof *w);
  size_t m = 0;
  for (size_t i = 0; i < u; i++) {
    if (to_wide(t[i], scale, &w[m]))
      m++;
    else {
      ok = false;
      if (*why == NULL)
        *why = xasprintf("the threshold %s is beyond the %d digits the exact check handles", t[i],
                         WIDE_DIGITS);
    }
  }
  wide unit = 1;
  for (long i = 0; i < scale; i++)
    unit *= 10;
  if (m == 0) {
    add(o, from_wide(0, scale));
    add(o, from_wide(5, scale));
  } else {
    add(o, from_wide((floor_div(w[0], unit) - 1) * unit, scale));
    add(o, from_wide(w[0] - 1, scale));
    for (size_t i = 0; i < m; i++) {
      add(o, from_wide(w[i], scale));
      wide next_int = (floor_div(w[i], unit) + 1) * unit;
      if (i + 1 == m || next_int < w[i + 1])
        add(o, from_wide(next_int, scale));
      add(o, from_wide(w[i] + 1, scale));
    }
  }
  free(w);
  free(t);
  return ok;
}

static size_t utf8_chars(const char *s) {
  size_t n = 0;
  for (; *s; s++)
    n += ((unsigned char)*s & 0xC0) != 0x80;
  return n;
}

static bool is_constant(const struct constants *k, const char *s) {
  for (size_t i = 0; i < k->nval; i++)
    if (json_is(k->values[i], JSON_STRING) && strcmp(json_string_value(k->values[i]), s) == 0)
      return true;
  return false;
}

/* p followed by a character after which no longer prefix continues and
 * which makes no constant: the shortest string whose longest prefix is p
 * and that equals no constant.  NULL when every candidate is taken. */
static char *extend(const struct constants *k, const char *p, size_t pad) {
  static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789_";
  size_t pl = strlen(p);
  for (const char *x = alphabet; *x; x++) {
    bool taken = false;
    for (size_t i = 0; i < k->npre && !taken; i++)
      taken = strlen(k->prefixes[i]) > pl && strncmp(k->prefixes[i], p, pl) == 0 &&
              k->prefixes[i][pl] == *x;
    if (taken)
      continue;
    char *s = xmalloc(pl + 2 + pad);
    memcpy(s, p, pl);
    s[pl] = *x;
    memset(s + pl + 1, *x, pad);
    s[pl + 1 + pad] = '\0';
    if (!is_constant(k, s))
      return s;
    free(s);
  }
  return NULL;
}

static bool strings(const struct constants *k, struct out *o, char **why) {
  bool ok = true;
  for (size_t i = 0; i <= k->npre; i++) {
    const char *p = i < k->npre ? k->prefixes[i] : "";
    add(o, json_new_string(p));
    /* The shortest extension, and for each maxLength one just past it. */
    for (size_t j = 0; j <= k->nlen; j++) {
      size_t pad = 0;
      if (j < k->nlen) {
        size_t have = utf8_chars(p) + 1;
        if ((long long)have > k->lengths[j])
          continue;
        pad = (size_t)(k->lengths[j] + 1) - have;
        if (pad > 4096)
          continue; /* longer than any request may be */
      }
      char *s = extend(k, p, pad);
      if (s == NULL) {
        ok = false;
        if (*why == NULL)
          *why = xasprintf("no string extends the prefix \"%s\" without meeting another", p);
        continue;
      }
      add(o, json_new_string(s));
      free(s);
    }
  }
  return ok;
}

/* Arrays and objects: the constants, and ones equal to none of them. */
static void containers(const struct constants *k, struct out *o) {
  static const char *const arrays[] = {"[]", "[null]", "[[]]", "[0]", "[\"\"]", "[{}]"};
  static const char *const objects[] = {"{}", "{\"_ceiling_probe\":null}",
                                        "{\"_ceiling_probe\":0}"};
  for (size_t a = 0; a < 2; a++) {
    const char *const *list = a == 0 ? arrays : objects;
    size_t n = a == 0 ? 6 : 3;
    for (size_t i = 0; i < n; i++) {
      json_t *v = json_parse(list[i], strlen(list[i]), NULL, NULL);
      bool constant = false;
      for (size_t j = 0; j < k->nval && !constant; j++)
        constant = args_equal(k->values[j], v);
      add(o, v);
      /* The plain {} is kept even when a constant (a schema may close the
       * object); the probe key then tells the others apart. */
      if (!constant && (a == 0 || i > 0))
        break;
    }
  }
}

/* After numbers and strings: the constants, null, the booleans and the
 * containers; frees k and hands o's array over. */
static json_t **the_rest(struct constants *k, struct out *o, size_t *n) {
  for (size_t i = 0; i < k->nval; i++)
    add(o, json_copy(k->values[i]));
  add(o, json_new_null());
  add(o, json_new_bool(true));
  add(o, json_new_bool(false));
  containers(k, o);
  free(k->numbers);
  free(k->prefixes);
  free(k->values);
  free(k->lengths);
  *n = o->n;
  return o->v;
}

json_t **ceiling_values(const struct value_sources *src, const char *name, size_t *n,
                        bool *exact, char **why) {
  struct constants k = {0};
  cleanup_json json_t *owned = json_new_array();
  for (size_t s = 0; s < 2; s++) {
    const struct tool *t = src->tools[s];
    for (size_t r = 0; t && r < t->nrules; r++)
      if (t->rules[r].has_condition)
        from_condition(&t->rules[r].condition, name, &k);
    size_t nn = 0;
    const json_t **nodes = ceiling_schema_nodes(src->schemas[s], name, &nn);
    for (size_t i = 0; i < nn; i++)
      from_schema(nodes[i], &k, owned);
    free(nodes);
  }
  struct out o = {0};
  json_t *absent = NULL;
  push(&o.v, &o.n, &absent, sizeof absent);
  if (!numbers(&k, &o, why))
    *exact = false;
  if (!strings(&k, &o, why))
    *exact = false;
  if (k.nul_prefix) {
    *exact = false;
    if (*why == NULL)
      *why = xasprintf("args.%s: a prefix with a NUL byte", name);
  }
  return the_rest(&k, &o, n);
}

void ceiling_values_free(json_t **v, size_t n) {
  for (size_t i = 0; i < n; i++)
    json_free(v[i]);
  free(v);
}

json_t **ceiling_node_values(const json_t *node, size_t *n) {
  struct constants k = {0};
  cleanup_json json_t *owned = json_new_array();
  from_schema(node, &k, owned);
  struct out o = {0};
  char *why = NULL;
  numbers(&k, &o, &why);
  strings(&k, &o, &why);
  free(why);
  return the_rest(&k, &o, n);
}
