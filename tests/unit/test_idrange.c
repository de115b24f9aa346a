/* shim/idrange: claims are exclusive across processes, stale claims are
 * reclaimed, release drops exactly the owner's. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shim/lifecycle/idrange.h"
#include "base/util.h"

static char base[64];

static void setup(void) {
  strcpy(base, "/tmp/tg-idrange.XXXXXX");
  cr_assert_not_null(mkdtemp(base));
}
static void teardown(void) {
  tg_error *e = NULL;
  remove_tree(base, &e);
  tg_error_free(&e);
}

static char *owner_dir(const char *name) {
  char *d = xasprintf("%s/%s", base, name);
  mkdir(d, 0700);
  return d;
}

static int count_claims(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *de;
  while (d && (de = readdir(d)) != NULL)
    n += de->d_name[0] >= '0' && de->d_name[0] <= '9' && strchr(de->d_name, '.') == NULL;
  if (d)
    closedir(d);
  return n;
}

TestSuite(idrange, .init = setup, .fini = teardown);

Test(idrange, concurrent_claims_are_distinct) {
  char *pool_dir = xasprintf("%s/pool", base);
  struct id_pool pool = {.dir = pool_dir, .base = 1 << 28, .size = 65536, .count = 64};
  enum { N = 20 };
  int fds[N][2];
  for (int i = 0; i < N; i++) {
    cr_assert_eq(pipe(fds[i]), 0);
    if (fork() == 0) {
      char name[16];
      snprintf(name, sizeof name, "c%d", i);
      char *o = owner_dir(name);
      unsigned long long slot = 999;
      tg_error *e = NULL;
      int r = idrange_claim(&pool, o, NULL, 0, &slot, &e);
      (void)!write(fds[i][1], &slot, sizeof slot);
      _exit(r == 0 ? 0 : 1);
    }
  }
  bool seen[64] = {false};
  for (int i = 0; i < N; i++) {
    unsigned long long slot = 999;
    cr_assert_eq(read(fds[i][0], &slot, sizeof slot), (ssize_t)sizeof slot);
    cr_assert_lt(slot, 64);
    cr_expect(!seen[slot], "slot %llu handed out twice", slot);
    seen[slot] = true;
  }
  while (wait(NULL) > 0)
    ;
  cr_expect_eq(count_claims(pool_dir), N);
  for (int i = 0; i < N; i++) {
    char *o = xasprintf("%s/c%d", base, i);
    tg_error *e = NULL;
    cr_expect_eq(idrange_release(&pool, o, &e), 0);
    free(o);
  }
  cr_expect_eq(count_claims(pool_dir), 0);
  free(pool_dir);
}

Test(idrange, stale_claims_are_reclaimed_and_others_refused) {
  char *pool_dir = xasprintf("%s/pool", base);
  struct id_pool pool = {.dir = pool_dir, .base = 1 << 28, .size = 65536, .count = 2};
  char *a = owner_dir("a"), *b = owner_dir("b"), *c = owner_dir("c");
  unsigned long long sa, sb, sc;
  tg_error *e = NULL;
  cr_assert_eq(idrange_claim(&pool, a, NULL, 0, &sa, &e), 0);
  cr_assert_eq(idrange_claim(&pool, b, NULL, 0, &sb, &e), 0);
  cr_expect_neq(sa, sb);
  cr_expect_eq(idrange_claim(&pool, c, NULL, 0, &sc, &e), -1, "the pool is full");
  cr_expect(e && strstr(e->msg, "raise id_range_count"), "%s", e ? e->msg : "");
  tg_error_free(&e);
  /* a asks for b's slot by mapping: refused, naming b */
  unsigned long long want = sb;
  cr_expect_eq(idrange_claim(&pool, c, &want, 1, NULL, &e), -1);
  cr_expect(e && strstr(e->msg, b), "%s", e ? e->msg : "");
  tg_error_free(&e);
  /* b's state directory goes away without a release (a crash): reclaimable */
  cr_assert_eq(remove_tree(b, &e), 0);
  cr_expect_eq(idrange_claim(&pool, c, &want, 1, &sc, &e), 0, "%s", e ? e->msg : "");
  cr_expect_eq(sc, sb);
  /* a new directory of a's name is not a's owner */
  cr_assert_eq(remove_tree(a, &e), 0);
  free(owner_dir("a"));
  free(b);
  cr_expect_eq(idrange_claim(&pool, b = owner_dir("b2"), NULL, 0, &sb, &e), 0, "%s", e ? e->msg : "");
  cr_expect_eq(sb, sa);
  /* a short claim file (crash mid-write) is free */
  char *p = xasprintf("%s/0", pool_dir);
  FILE *f = fopen(p, "w");
  fputs("/tmp/x", f);
  fclose(f);
  cr_expect_eq(idrange_claim(&pool, a, NULL, 0, &sa, &e), 0, "%s", e ? e->msg : "");
  cr_expect_eq(sa, 0);
  free(p);
  free(a);
  free(b);
  free(c);
  free(pool_dir);
}

/* A pod's members share the pause container's slot: the slot stays held
 * until its last owner releases it, a fresh claim never gets it meanwhile,
 * and a dead holder shares nothing. */
Test(idrange, shared_slot_lives_until_its_last_owner) {
  char *pool_dir = xasprintf("%s/pool", base);
  struct id_pool pool = {.dir = pool_dir, .base = 1 << 28, .size = 65536, .count = 4};
  char *pause = owner_dir("pause"), *app = owner_dir("app"), *other = owner_dir("other");
  tg_error *e = NULL;
  unsigned long long slot = 99, got = 99;
  cr_assert_eq(idrange_claim(&pool, pause, NULL, 0, &slot, &e), 0);
  cr_assert_eq(idrange_share(&pool, app, pause, slot, &e), 0);
  cr_expect_eq(idrange_share(&pool, app, pause, slot, &e), 0, "sharing twice is one line");
  /* The pause goes first (its state dir is removed, then released). */
  cr_assert_eq(idrange_release(&pool, pause, &e), 0);
  remove_tree(pause, &e);
  cr_assert_eq(idrange_claim(&pool, other, NULL, 0, &got, &e), 0);
  cr_expect_neq(got, slot, "slot %llu handed out while a pod member still holds it", slot);
  cr_expect_eq(count_claims(pool_dir), 2);
  /* The pause is gone: nobody can join its range any more. */
  char *late = owner_dir("late");
  cr_expect_eq(idrange_share(&pool, late, pause, slot, &e), -1);
  cr_expect(e && strstr(e->msg, "not held by"), "%s", e ? e->msg : "no error");
  tg_error_free(&e);
  cr_assert_eq(idrange_release(&pool, app, &e), 0);
  cr_assert_eq(idrange_release(&pool, other, &e), 0);
  cr_expect_eq(count_claims(pool_dir), 0, "a claim outlived its last owner");
  free(late);
  free(other);
  free(app);
  free(pause);
  free(pool_dir);
}

/* One container's mappings may reach at most max_per_owner slots (one by
 * default): a mapping over the whole pool would hold every range. */
Test(idrange, one_owner_takes_at_most_max_per_owner) {
  char *pool_dir = xasprintf("%s/pool", base);
  struct id_pool pool = {.dir = pool_dir, .base = 1 << 28, .size = 65536, .count = 4};
  char *a = owner_dir("a"), *b = owner_dir("b");
  unsigned long long all[] = {0, 1, 2, 3};
  tg_error *e = NULL;
  cr_expect_eq(idrange_claim(&pool, a, all, 4, NULL, &e), -1);
  cr_expect(e && strstr(e->msg, "4 ranges") && strstr(e->msg, "may hold 1 (host config max_id_ranges_per_container)"),
            "%s", e ? e->msg : "");
  tg_error_free(&e);
  cr_expect_eq(count_claims(pool_dir), 0, "a refused claim holds nothing");
  pool.max_per_owner = 2;
  cr_expect_eq(idrange_claim(&pool, a, all, 3, NULL, &e), -1);
  tg_error_free(&e);
  cr_expect_eq(idrange_claim(&pool, a, all, 2, NULL, &e), 0, "%s", e ? e->msg : "");
  unsigned long long held = 0;
  cr_expect_eq(idrange_usage(&pool, &held, &e), 0);
  cr_expect_eq(held, 2);
  cr_expect(!idrange_low(held, pool.count) || pool.count - held <= pool.count / 8);
  cr_expect_eq(idrange_claim(&pool, b, all + 2, 2, NULL, &e), 0, "%s", e ? e->msg : "");
  cr_expect_eq(idrange_usage(&pool, &held, &e), 0);
  cr_expect_eq(held, 4);
  cr_expect(idrange_low(held, pool.count), "a full pool is low");
  /* The full pool's error names who holds it, and how much. */
  char *c = owner_dir("c");
  unsigned long long slot;
  cr_expect_eq(idrange_claim(&pool, c, NULL, 0, &slot, &e), -1);
  cr_expect(e && strstr(e->msg, "container a of root ") && strstr(e->msg, ": 2, container b of root "),
            "%s", e ? e->msg : "");
  tg_error_free(&e);
  cr_expect_eq(idrange_release(&pool, a, &e), 0);
  cr_expect_eq(idrange_usage(&pool, &held, &e), 0);
  cr_expect_eq(held, 2);
  free(a);
  free(b);
  free(c);
  free(pool_dir);
}

Test(idrange, low_is_an_eighth_or_64) {
  cr_expect(!idrange_low(0, 64));
  cr_expect(!idrange_low(55, 64));
  cr_expect(idrange_low(56, 64));
  cr_expect(!idrange_low(4000, 4096), "96 free of 4096");
  cr_expect(idrange_low(4032, 4096), "64 free of 4096");
  cr_expect(!idrange_low(2, 4), "2 free of 4");
  cr_expect(idrange_low(3, 4), "the last free range of a small pool");
}
