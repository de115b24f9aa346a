/* tollgate list [--format table|json] [-q] [--all-roots]: tollgate's state
 * directories (of --root, or of every root in the registry, roots.h),
 * each with its live status from its own backend ("unknown", with the
 * reason, when the backend cannot tell). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim/cli/args.h"
#include "shim/cli/commands.h"
#include "shim/lifecycle/container.h"
#include "base/term_escape.h"
#include "shim/lifecycle/idrange.h"
#include "shim/lifecycle/roots.h"
#include "base/util.h"

static int cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One container's list entry, or NULL when its state directory went
 * away meanwhile (a delete ran).  A container whose status cannot be had
 * is listed as "unknown" with the reason, in the JSON and on stderr:
 * never dropped, so a broken backend cannot hide what it runs. */
static json_t *query_one(struct cli *cli, const char *id) {
  struct container c;
  tg_error *e = NULL;
  json_t *s = NULL;
  json_t *state = NULL;
  if (container_load(cli, id, &c, &e) == 0) {
    s = container_query(cli, &c, &e);
    state = json_copy(c.state);
    container_free(&c);
  }
  if (s == NULL) {
    cleanup_free char *dir = xasprintf("%s/%s", cli->root, id);
    struct stat st;
    if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
      const char *reason = e ? e->msg : "unknown error";
      cleanup_free char *shown = escape_message(reason);
      fprintf(stderr, "tollgate: list: container %s: status unknown: %s\n",
              id, shown);
      s = container_unknown_record(id, state, reason);
    }
  }
  json_free(state);
  tg_error_free(&e);
  return s;
}

/* The ids under root that have a state.json, sorted.  0, or -1 with *err
 * when root cannot be read (a missing root is empty). */
static int collect_ids(const char *root, char ***ids_out, size_t *n_out, tg_error **err) {
  char **ids = NULL;
  size_t n = 0;
  DIR *d = opendir(root);
  if (d == NULL && errno != ENOENT)
    return tg_error_set(err, errno, "list: open %s", root);
  for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
    if (!container_id_is_valid(e->d_name) || strcmp(e->d_name, "backend") == 0)
      continue;
    cleanup_free char *sp = xasprintf("%s/%s/state.json", root, e->d_name);
    if (access(sp, F_OK) < 0)
      continue;
    ids = xrealloc(ids, (n + 1) * sizeof *ids);
    ids[n++] = xstrdup(e->d_name);
  }
  if (d)
    closedir(d);
  if (n > 1)
    qsort(ids, n, sizeof *ids, cmp);
  *ids_out = ids;
  *n_out = n;
  return 0;
}

/* One root's containers: printed (table, -q) or appended to all (json,
 * each with "root" when all_roots). */
static void list_root(struct cli *cli, char **ids, size_t n, bool quiet, bool json, bool all_roots,
                      json_t *all) {
  for (size_t k = 0; k < n; k++) {
    if (quiet) {
      printf("%s\n", ids[k]);
      continue;
    }
    json_t *s = query_one(cli, ids[k]);
    if (s == NULL)
      continue; /* deleted meanwhile */
    if (json) {
      if (all_roots)
        json_object_set(s, "root", json_new_string(cli->root));
      json_array_append(all, s);
      continue;
    }
    long long pid = 0;
    json_integer_value(json_object_get(s, "pid"), &pid);
    printf("%-12s %-8lld %-10s %-40s %-32s %s%s%s\n", ids[k], pid,
           json_string_value(json_object_get(s, "status")),
           json_string_value(json_object_get(s, "bundle")),
           json_string_value(json_object_get(s, "created")),
           json_string_value(json_object_get(s, "owner")), all_roots ? " " : "", all_roots ? cli->root : "");
    json_free(s);
  }
}

int cmd_list(struct cli *cli, int argc, char **argv, tg_error **err) {
  const char *format = "table";
  bool quiet = false, all_roots = false;
  struct opt opts[] = {{"format", 'f', OPT_STRING, &format},
                       {"quiet", 'q', OPT_BOOL, &quiet},
                       {"all-roots", 0, OPT_BOOL, &all_roots},
                       {0}};
  int i = args_parse("list", argc, argv, 1, opts, err);
  if (i < 0)
    return -1;
  if (i != argc)
    return tg_error_set(err, 0, "list: takes no arguments");
  bool json = strcmp(format, "json") == 0;
  if (!json && strcmp(format, "table") != 0)
    return tg_error_set(err, 0, "list: --format %s: give table or json",
                        format);
  size_t nroots = 1;
  char *only[] = {(char *)cli->root};
  char **roots = all_roots ? roots_list(cli->root, &nroots) : only;
  json_t *all = json_new_array();
  if (!quiet && !json)
    printf("%-12s %-8s %-10s %-40s %-32s %s%s\n", "ID", "PID", "STATUS",
           "BUNDLE", "CREATED", "OWNER", all_roots ? " ROOT" : "");
  int r = 0;
  for (size_t k = 0; k < nroots && r == 0; k++) {
    char **ids = NULL;
    size_t n = 0;
    if (collect_ids(roots[k], &ids, &n, err) < 0) {
      if (!all_roots) {
        r = -1;
        break;
      }
      tg_error_free(err); /* one unreadable root does not hide the others */
      continue;
    }
    struct cli here = *cli;
    here.root = roots[k];
    list_root(&here, ids, n, quiet, json, all_roots, all);
    for (size_t j = 0; j < n; j++)
      free(ids[j]);
    free(ids);
  }
  if (all_roots)
    roots_free(roots, nroots);
  if (r < 0) {
    json_free(all);
    return -1;
  }
  if (json) {
    cleanup_free char *text = json_dump(all, false, NULL);
    cleanup_free char *shown = escape_for_terminal(text, true); /* the same JSON value */
    printf("%s\n", shown);
  }
  json_free(all);
  /* A pool running low, on stderr: stdout stays the table or JSON that
   * containerd and podman parse. */
  cleanup_json json_t *pool = quiet ? NULL : idrange_usage_json(&cli->config);
  const json_t *low = json_object_get(pool, "low");
  if (json_is(low, JSON_BOOL) && low->u.boolean) {
    long long free_n = 0, total = 0;
    json_integer_value(json_object_get(pool, "free"), &free_n);
    json_integer_value(json_object_get(pool, "total"), &total);
    fprintf(stderr, "tollgate: list: the host id pool %s is running low: %lld of %lld ranges free (delete "
            "containers, or raise id_range_count in the host config)\n",
            json_string_value(json_object_get(pool, "dir")), free_n, total);
  }
  return 0;
}
