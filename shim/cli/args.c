#include "shim/cli/args.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/util.h"

void strlist_free(struct strlist *l) {
  free(l->items);
  l->items = NULL;
  l->len = 0;
}

static void strlist_add(struct strlist *l, const char *s) {
  l->items = xrealloc(l->items, (l->len + 2) * sizeof *l->items);
  l->items[l->len++] = s;
  l->items[l->len] = NULL;
}

static const struct opt *find_opt(const struct opt *opts, const char *name,
                                  size_t len, bool is_short) {
  for (const struct opt *o = opts; o->name != NULL; o++) {
    if (is_short) {
      if (len == 1 && o->short_name == name[0])
        return o;
    } else if (strlen(o->name) == len && strncmp(o->name, name, len) == 0) {
      return o;
    }
  }
  /* urfave/cli also takes a one-letter long form ("-d" as "--d") and a
   * long name with one dash ("-bundle"); both fall through to here. */
  if (is_short)
    return NULL;
  if (len == 1)
    return find_opt(opts, name, len, true);
  return NULL;
}

static int parse_bool(const char *what, const char *flag, const char *v,
                      bool *out, tg_error **err) {
  if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0)
    *out = true;
  else if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
    *out = false;
  else
    return tg_error_set(err, 0, "%s: flag --%s takes true or false, not \"%s\"",
                        what, flag, v);
  return 0;
}

int args_parse(const char *what, int argc, char **argv, int start,
               const struct opt *opts, tg_error **err) {
  int i = start;
  while (i < argc) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0)
      return i + 1;
    if (a[0] != '-' || a[1] == '\0')
      return i; /* first positional argument: flags end here */
    const char *name = a + 1;
    bool double_dash = name[0] == '-';
    if (double_dash)
      name++;
    const char *eq = strchr(name, '=');
    size_t name_len = eq ? (size_t)(eq - name) : strlen(name);
    const struct opt *o = NULL;
    const char *attached = eq ? eq + 1 : NULL;
    if (double_dash) {
      o = find_opt(opts, name, name_len, false);
    } else {
      o = find_opt(opts, name, name_len, false);
      if (o == NULL && eq == NULL) {
        /* -bVALUE: a short flag with its value attached. */
        o = find_opt(opts, name, 1, true);
        if (o != NULL && name[1] != '\0') {
          if (o->kind == OPT_BOOL || o->kind == OPT_IGNORE_BOOL)
            o = NULL; /* no clustering of booleans, as urfave/cli */
          else
            attached = name + 1;
        }
      }
    }
    if (o == NULL)
      return tg_error_set(err, 0,
                          "%s: unknown flag %s: see 'tollgate help%s%s' for "
                          "the flags it takes",
                          what, a, strcmp(what, "tollgate") ? " " : "",
                          strcmp(what, "tollgate") ? what : "");
    i++;
    if (o->kind == OPT_BOOL || o->kind == OPT_IGNORE_BOOL) {
      bool b = true;
      if (attached != NULL && parse_bool(what, o->name, attached, &b, err) < 0)
        return -1;
      if (o->kind == OPT_BOOL)
        *(bool *)o->target = b;
      continue;
    }
    const char *value = attached;
    if (value == NULL) {
      if (i >= argc)
        return tg_error_set(err, 0, "%s: flag --%s needs a value", what,
                            o->name);
      value = argv[i++];
    }
    switch (o->kind) {
    case OPT_STRING:
      *(const char **)o->target = value;
      break;
    case OPT_INT: {
      char *end = NULL;
      errno = 0;
      long n = strtol(value, &end, 10);
      if (errno != 0 || end == value || *end != '\0' || n < 0)
        return tg_error_set(err, 0,
                            "%s: flag --%s takes a non-negative number, not "
                            "\"%s\"",
                            what, o->name, value);
      *(long *)o->target = n;
      break;
    }
    case OPT_LIST:
      strlist_add(o->target, value);
      break;
    default:
      break;
    }
  }
  return i;
}

static const struct {
  const char *name;
  int num;
} signals[] = {
    {"HUP", SIGHUP},   {"INT", SIGINT},     {"QUIT", SIGQUIT},
    {"ILL", SIGILL},   {"TRAP", SIGTRAP},   {"ABRT", SIGABRT},
    {"IOT", SIGIOT},   {"BUS", SIGBUS},     {"FPE", SIGFPE},
    {"KILL", SIGKILL}, {"USR1", SIGUSR1},   {"SEGV", SIGSEGV},
    {"USR2", SIGUSR2}, {"PIPE", SIGPIPE},   {"ALRM", SIGALRM},
    {"TERM", SIGTERM}, {"STKFLT", SIGSTKFLT}, {"CHLD", SIGCHLD},
    {"CONT", SIGCONT}, {"STOP", SIGSTOP},   {"TSTP", SIGTSTP},
    {"TTIN", SIGTTIN}, {"TTOU", SIGTTOU},   {"URG", SIGURG},
    {"XCPU", SIGXCPU}, {"XFSZ", SIGXFSZ},   {"VTALRM", SIGVTALRM},
    {"PROF", SIGPROF}, {"WINCH", SIGWINCH}, {"IO", SIGIO},
    {"POLL", SIGPOLL}, {"PWR", SIGPWR},     {"SYS", SIGSYS},
};

int args_parse_signal(const char *s, tg_error **err) {
  if (s[0] != '\0' && isdigit((unsigned char)s[0])) {
    char *end = NULL;
    errno = 0;
    long n = strtol(s, &end, 10);
    if (errno == 0 && *end == '\0' && n > 0 && n <= SIGRTMAX)
      return (int)n;
  } else {
    const char *name = strncasecmp(s, "SIG", 3) == 0 ? s + 3 : s;
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
      if (strcasecmp(name, signals[i].name) == 0)
        return signals[i].num;
  }
  return tg_error_set(err, 0,
                      "unknown signal \"%s\": give a name such as TERM or "
                      "KILL, or a number from 1 to %d",
                      s, SIGRTMAX);
}

int args_parse_id_and_format(const char *what, int argc, char **argv,
                             const char **id, bool *json, tg_error **err) {
  const char *format = "table";
  const struct opt opts[] = {{"format", 'f', OPT_STRING, &format}, {0}};
  *id = NULL;
  /* args_parse stops at the first positional; resume after it so that
   * `calls ID --format json` works as well as `calls --format json ID`. */
  for (int i = 1; i < argc; i++) {
    i = args_parse(what, argc, argv, i, opts, err);
    if (i < 0)
      return -1;
    if (i >= argc)
      break;
    if (*id != NULL)
      return tg_error_set(err, 0, "%s: one container id at most (got \"%s\" "
                          "and \"%s\"): see 'tollgate help %s'",
                          what, *id, argv[i], what);
    *id = argv[i];
  }
  *json = strcmp(format, "json") == 0;
  if (!*json && strcmp(format, "table") != 0)
    return tg_error_set(err, 0, "%s: --format %s: give table or json", what,
                        format);
  return 0;
}
