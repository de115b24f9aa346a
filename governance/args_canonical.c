/* The canonical form of a call's arguments: exact numbers, strict UTF-8,
 * unambiguous dotted names.  See args_canonical.h. */
#include "governance/args_canonical.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "governance/arg_path.h"
#include "base/util.h"

/* A decimal number as sign, significant digits and the position of the
 * decimal point: value = (neg ? -1 : 1) * 0.DIGITS * 10^point.  digits has
 * no leading or trailing zeros; zero has ndigits == 0 (and is never
 * negative, so -0 and 0 are one number). */
struct decimal {
  bool neg;
  char *digits; /* owned */
  size_t ndigits;
  long point;
};

/* Beyond this an exponent is refused: nothing a tool means needs 10^100000,
 * and a bound keeps the canonical text and every comparison small. */
#define EXPONENT_LIMIT 100000L

/* Parse the JSON number text s[0..len) (the grammar json_parse accepted:
 * -?int(.frac)?([eE][+-]?exp)?).  Returns false when it is not one. */
static bool decimal_parse(const char *s, size_t len, struct decimal *d) {
  memset(d, 0, sizeof *d);
  size_t i = 0;
  if (i < len && s[i] == '-') {
    d->neg = true;
    i++;
  }
  d->digits = xmalloc(len + 1);
  size_t nint = 0, n = 0;
  bool any = false;
  for (; i < len && s[i] >= '0' && s[i] <= '9'; i++, nint++, any = true)
    d->digits[n++] = s[i];
  if (i < len && s[i] == '.') {
    i++;
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++, any = true)
      d->digits[n++] = s[i];
  }
  long exp = 0;
  if (i < len && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    bool eneg = false;
    if (i < len && (s[i] == '+' || s[i] == '-'))
      eneg = s[i++] == '-';
    if (i == len)
      goto bad;
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
      exp = exp * 10 + (s[i] - '0');
      if (exp > EXPONENT_LIMIT)
        goto bad;
    }
    if (eneg)
      exp = -exp;
  }
  if (!any || i != len)
    goto bad;
  /* Strip leading zeros (each moves the point left) and trailing ones. */
  size_t lead = 0;
  while (lead < n && d->digits[lead] == '0')
    lead++;
  while (n > lead && d->digits[n - 1] == '0')
    n--;
  d->ndigits = n - lead;
  memmove(d->digits, d->digits + lead, d->ndigits);
  d->digits[d->ndigits] = '\0';
  d->point = (long)nint - (long)lead + exp;
  if (d->ndigits == 0) {
    d->neg = false;
    d->point = 0;
  }
  /* The limit holds for the canonical exponent (point - 1) too, not only
   * for the one written: 29e100000 is 2.9e100001 and 0.01e-100000 is
   * 1e-100002, which a second reading of the canonical text would refuse
   * (the fuzzer's fixed-point check found it). */
  if (d->ndigits != 0 && (d->point - 1 > EXPONENT_LIMIT || d->point - 1 < -EXPONENT_LIMIT))
    goto bad;
  return true;
bad:
  free(d->digits);
  d->digits = NULL;
  return false;
}

static void decimal_clear(struct decimal *d) {
  free(d->digits);
  d->digits = NULL;
}

/* Texts up to this many digits are written out positionally (640,
 * 0.000125); beyond it, scientific (1e300, 1.5e-30).  One rule, so each
 * value has exactly one spelling. */
#define POSITIONAL_LIMIT 40L

static char *decimal_text(const struct decimal *d) {
  if (d->ndigits == 0)
    return xstrdup("0");
  struct json_buf b = {0};
  if (d->neg)
    json_buf_lit(&b, "-");
  long n = (long)d->ndigits, p = d->point;
  if (p >= n && p <= POSITIONAL_LIMIT) { /* an integer */
    json_buf_raw(&b, d->digits, (size_t)n);
    for (long i = n; i < p; i++)
      json_buf_lit(&b, "0");
  } else if (p > 0 && p < n) { /* 12.25 */
    json_buf_raw(&b, d->digits, (size_t)p);
    json_buf_lit(&b, ".");
    json_buf_raw(&b, d->digits + p, (size_t)(n - p));
  } else if (p <= 0 && n - p <= POSITIONAL_LIMIT) { /* 0.0125 */
    json_buf_lit(&b, "0.");
    for (long i = p; i < 0; i++)
      json_buf_lit(&b, "0");
    json_buf_raw(&b, d->digits, (size_t)n);
  } else { /* d.ddd e X */
    json_buf_raw(&b, d->digits, 1);
    if (n > 1) {
      json_buf_lit(&b, ".");
      json_buf_raw(&b, d->digits + 1, (size_t)(n - 1));
    }
    char e[32];
    int k = snprintf(e, sizeof e, "e%ld", p - 1);
    json_buf_raw(&b, e, (size_t)k);
  }
  return b.s;
}

char *number_canonical(const char *s, size_t len) {
  struct decimal d;
  if (!decimal_parse(s, len, &d))
    return NULL;
  char *t = decimal_text(&d);
  decimal_clear(&d);
  return t;
}

static int magnitude_compare(const struct decimal *a, const struct decimal *b) {
  if (a->ndigits == 0 || b->ndigits == 0)
    return (a->ndigits != 0) - (b->ndigits != 0);
  if (a->point != b->point)
    return a->point < b->point ? -1 : 1;
  size_t n = a->ndigits < b->ndigits ? a->ndigits : b->ndigits;
  int c = memcmp(a->digits, b->digits, n);
  if (c != 0)
    return c < 0 ? -1 : 1;
  /* Same prefix: no trailing zeros, so the longer one is larger. */
  return (a->ndigits > n) - (b->ndigits > n);
}

/* A plain integer already in canonical form: -?[1-9][0-9]* or 0.  Most
 * numbers in calls and policies are; they skip the general path. */
static bool plain_integer(const char *s, size_t *len) {
  const char *p = s + (*s == '-');
  if (p[0] < '0' || p[0] > '9' || (p[0] == '0' && (p[1] != '\0' || p != s)))
    return false;
  for (const char *q = p; *q; q++)
    if (*q < '0' || *q > '9')
      return false;
  *len = strlen(s);
  return true;
}

int number_compare(const char *a, const char *b) {
  size_t la, lb;
  if (plain_integer(a, &la) && plain_integer(b, &lb)) {
    /* Same sign: the longer magnitude is larger, then digit order. */
    bool na = a[0] == '-', nb = b[0] == '-';
    if (na != nb)
      return na ? -1 : 1;
    int r = la != lb ? (la < lb ? -1 : 1) : strcmp(a, b);
    r = r < 0 ? -1 : r > 0;
    return na ? -r : r;
  }
  struct decimal x, y;
  bool okx = decimal_parse(a, strlen(a), &x);
  bool oky = decimal_parse(b, strlen(b), &y);
  int r;
  if (!okx || !oky) {
    r = okx - oky; /* not reached for parsed or canonical texts */
  } else if (x.neg != y.neg) {
    r = x.neg ? -1 : 1;
  } else {
    r = magnitude_compare(&x, &y);
    if (x.neg)
      r = -r;
  }
  if (okx)
    decimal_clear(&x);
  if (oky)
    decimal_clear(&y);
  return r;
}

bool number_is_integer(const char *s) {
  struct decimal d;
  if (!decimal_parse(s, strlen(s), &d))
    return false;
  bool integral = d.point >= (long)d.ndigits;
  decimal_clear(&d);
  return integral;
}

static bool same_decimal(const json_t *a, const json_t *b) {
  return number_compare(a->u.number.text, b->u.number.text) == 0;
}

bool args_equal(const json_t *a, const json_t *b) { return json_equal_with(a, b, same_decimal); }

/* ---- canonicalization ---- */

static bool check_utf8(const char *s, size_t n, const struct arg_path *at, const char *what,
                       char **why) {
  size_t bad = json_utf8_check(s, n);
  if (bad == n)
    return true;
  cleanup_free char *path = arg_path_render(at);
  *why = xasprintf("%s: %s is not valid UTF-8 (byte %zu, 0x%02X, starts an overlong, surrogate "
                   "or broken sequence); send UTF-8 text, and a character outside the BMP as one "
                   "\\uD8xx\\uDCxx pair, never a lone surrogate",
                   path, what, bad, (unsigned)(unsigned char)s[bad]);
  return false;
}

static int str_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A dotted name "a.b" must denote one value.  With a literal key "a.b"
 * and an object at "a" in the same object it would denote two (the
 * literal member, and whatever "b" is in "a"), and a rule and a tool could
 * each pick a different one: refuse that call.  When no such pair exists
 * at any level, every dotted name resolves one way (args_lookup). */
static bool check_dotted(const json_t *obj, const struct arg_path *at, char **why) {
  size_t n = obj->u.object.len;
  bool dotted = false;
  for (size_t i = 0; i < n && !dotted; i++)
    dotted = strchr(obj->u.object.keys[i], '.') != NULL;
  if (!dotted)
    return true;
  /* Sorted keys: a lookup per dot, not a scan per dot. */
  cleanup_free char **sorted = xmalloc(n * sizeof *sorted);
  memcpy(sorted, obj->u.object.keys, n * sizeof *sorted);
  qsort(sorted, n, sizeof *sorted, str_cmp);
  for (size_t i = 0; i < n; i++) {
    const char *k = obj->u.object.keys[i];
    for (const char *dot = strchr(k, '.'); dot; dot = strchr(dot + 1, '.')) {
      cleanup_free char *prefix = xstrndup(k, (size_t)(dot - k));
      char *key = prefix;
      char **hit = bsearch(&key, sorted, n, sizeof *sorted, str_cmp);
      if (hit == NULL || !json_is(json_object_get(obj, *hit), JSON_OBJECT))
        continue;
      cleanup_free char *path = arg_path_render(at);
      *why = xasprintf("%s: has both the key \"%s\" and an object at \"%s\", so the name %s could "
                       "mean either; send one of them (rules read a dotted name as a path into "
                       "objects)",
                       path, k, prefix, k);
      return false;
    }
  }
  return true;
}

static json_t *canonical(const json_t *v, const struct arg_path *at, char **why) {
  switch (v->type) {
  case JSON_NUMBER: {
    size_t plain;
    if (plain_integer(v->u.number.text, &plain))
      return json_copy(v); /* already canonical (the common case) */
    char *text = number_canonical(v->u.number.text, strlen(v->u.number.text));
    if (text == NULL) {
      cleanup_free char *path = arg_path_render(at);
      *why = xasprintf("%s: the number %.40s is out of range (exponent beyond +-%ld)", path,
                       v->u.number.text, EXPONENT_LIMIT);
      return NULL;
    }
    json_t *c = json_new_integer(0);
    free(c->u.number.text);
    c->u.number.text = text;
    /* For display and budget arithmetic only; no decision reads it. */
    c->u.number.value = strtod(text, NULL);
    return c;
  }
  case JSON_STRING:
    if (!check_utf8(v->u.string.s, v->u.string.len, at, "the string", why))
      return NULL;
    return json_copy(v);
  case JSON_ARRAY: {
    json_t *c = json_new_array();
    for (size_t i = 0; i < v->u.array.len; i++) {
      struct arg_path w = {at, NULL, i};
      json_t *item = canonical(v->u.array.items[i], &w, why);
      if (item == NULL) {
        json_free(c);
        return NULL;
      }
      json_array_append(c, item);
    }
    return c;
  }
  case JSON_OBJECT: {
    if (!check_dotted(v, at, why))
      return NULL;
    json_t *c = json_new_object();
    for (size_t i = 0; i < v->u.object.len; i++) {
      const char *k = v->u.object.keys[i];
      struct arg_path w = {at, k, 0};
      if (!check_utf8(k, strlen(k), &w, "the key", why)) {
        json_free(c);
        return NULL;
      }
      json_t *item = canonical(v->u.object.values[i], &w, why);
      if (item == NULL) {
        json_free(c);
        return NULL;
      }
      /* Appending directly: the keys are already unique (json_parse). */
      json_object_set(c, k, item);
    }
    return c;
  }
  default:
    return json_copy(v);
  }
}

json_t *args_canonicalize(const json_t *v, char **why) {
  *why = NULL;
  return canonical(v, NULL, why);
}

/* The checks of canonical() without copying: -1 when v has no canonical
 * form (*why set), 0 when v already is canonical, 1 when a number must be
 * rewritten. */
static int inspect(const json_t *v, const struct arg_path *at, char **why) {
  size_t plain;
  switch (v->type) {
  case JSON_NUMBER:
    return plain_integer(v->u.number.text, &plain) ? 0 : 1;
  case JSON_STRING:
    return check_utf8(v->u.string.s, v->u.string.len, at, "the string", why) ? 0 : -1;
  case JSON_ARRAY: {
    int r = 0;
    for (size_t i = 0; i < v->u.array.len; i++) {
      struct arg_path w = {at, NULL, i};
      int ri = inspect(v->u.array.items[i], &w, why);
      if (ri < 0)
        return -1;
      r |= ri;
    }
    return r;
  }
  case JSON_OBJECT: {
    if (!check_dotted(v, at, why))
      return -1;
    int r = 0;
    for (size_t i = 0; i < v->u.object.len; i++) {
      const char *k = v->u.object.keys[i];
      struct arg_path w = {at, k, 0};
      if (!check_utf8(k, strlen(k), &w, "the key", why))
        return -1;
      int ri = inspect(v->u.object.values[i], &w, why);
      if (ri < 0)
        return -1;
      r |= ri;
    }
    return r;
  }
  default:
    return 0;
  }
}

const json_t *args_canonical_form(const json_t *v, json_t **owned, char **why) {
  *owned = NULL;
  *why = NULL;
  int r = inspect(v, NULL, why);
  if (r < 0)
    return NULL;
  if (r == 0)
    return v; /* the common case: nothing to rewrite, nothing copied */
  *owned = canonical(v, NULL, why);
  return *owned;
}

/* ---- lookup ---- */

/* obj[name[0..len)] for any length (a stack copy for the usual short key). */
static const json_t *get_n(const json_t *obj, const char *name, size_t len) {
  char small[256];
  char *key = len < sizeof small ? small : xmalloc(len + 1);
  memcpy(key, name, len);
  key[len] = '\0';
  const json_t *v = json_object_get(obj, key);
  if (key != small)
    free(key);
  return v;
}

static const json_t *lookup(const json_t *obj, const char *name, size_t len) {
  if (!json_is(obj, JSON_OBJECT))
    return NULL;
  const json_t *v = get_n(obj, name, len);
  if (v != NULL)
    return v;
  /* Every split at a dot: in a canonical tree at most one leads anywhere. */
  for (size_t i = 0; i < len; i++) {
    if (name[i] != '.')
      continue;
    const json_t *child = get_n(obj, name, i);
    if (!json_is(child, JSON_OBJECT))
      continue;
    v = lookup(child, name + i + 1, len - i - 1);
    if (v != NULL)
      return v;
  }
  return NULL;
}

const json_t *args_lookup(const json_t *args, const char *name) {
  return lookup(args, name, strlen(name));
}
