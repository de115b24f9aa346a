/* shim/checkpoint_seal and shim/proc_creds: a sealed image verifies, and
 * any change to it (a byte, a file added or removed, a link, another
 * key) does not; the credentials record is one fixed form; a live
 * process is compared with what a config gives it. */
#include <cap-ng.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim/lifecycle/checkpoint_seal.h"
#include "shim/lifecycle/proc_creds.h"
#include "base/util.h"

static char base[64];
static struct host_config cfg;

static void put(const char *rel, const char *text) {
  char *p = xasprintf("%s/img/%s", base, rel);
  FILE *f = fopen(p, "w");
  cr_assert_not_null(f, "%s", p);
  fputs(text, f);
  fclose(f);
  chmod(p, 0644);
  free(p);
}

static void setup(void) {
  strcpy(base, "/tmp/tg-seal.XXXXXX");
  cr_assert_not_null(mkdtemp(base));
  chmod(base, 0755);
  host_config_defaults(&cfg);
  free(cfg.checkpoint_key);
  cfg.checkpoint_key = xasprintf("%s/keys/checkpoint.key", base);
  char *img = xasprintf("%s/img", base);
  cr_assert_eq(mkdir(img, 0755), 0);
  char *sub = xasprintf("%s/img/sub", base);
  cr_assert_eq(mkdir(sub, 0755), 0);
  free(img);
  free(sub);
  put("checkpoint.img", "process state");
  put("sub/pages.img", "pages");
}

static void teardown(void) {
  tg_error *e = NULL;
  remove_tree(base, &e);
  tg_error_free(&e);
  host_config_free(&cfg);
}

TestSuite(seal, .init = setup, .fini = teardown);

static json_t *creds(const char *text) {
  tg_error *e = NULL;
  json_t *config = json_parse(text, strlen(text), NULL, &e);
  cr_assert_not_null(config);
  json_t *c = seal_credentials(config, "hardened");
  json_free(config);
  return c;
}

static enum seal_status verify(char **reason) {
  char *img = xasprintf("%s/img", base);
  enum seal_status st;
  json_t *body = NULL;
  tg_error *e = NULL;
  cr_assert_eq(seal_verify(&cfg, img, &st, &body, reason, &e), 0);
  if (st == SEAL_VALID)
    cr_expect_not_null(json_object_get(body, "credentials"));
  json_free(body);
  free(img);
  return st;
}

static void seal(void) {
  char *img = xasprintf("%s/img", base);
  json_t *c = creds("{\"process\":{\"user\":{\"uid\":65534,\"gid\":65534}}}");
  tg_error *e = NULL;
  cr_assert_eq(seal_write(&cfg, img, "c1", "runsc", "sha256:00", c, &e), 0, "%s", e ? e->msg : "");
  json_free(c);
  free(img);
}

Test(seal, sealed_image_verifies_and_the_key_is_roots_alone) {
  char *reason = NULL;
  cr_expect_eq(verify(&reason), SEAL_MISSING);
  free(reason);
  seal();
  struct stat st;
  cr_assert_eq(stat(cfg.checkpoint_key, &st), 0);
  cr_expect_eq(st.st_mode & 0777, 0600);
  cr_expect_eq(st.st_size, 32);
  reason = NULL;
  cr_expect_eq(verify(&reason), SEAL_VALID, "%s", reason ? reason : "");
  free(reason);
}

Test(seal, any_change_breaks_the_seal) {
  seal();
  char *reason = NULL;
  put("sub/pages.img", "pageZ");
  cr_expect_eq(verify(&reason), SEAL_INVALID, "a changed byte");
  cr_expect(reason && strstr(reason, "does not verify"), "%s", reason);
  free(reason);
  put("sub/pages.img", "pages");
  reason = NULL;
  cr_expect_eq(verify(&reason), SEAL_VALID, "restored");
  free(reason);
  put("extra", "");
  reason = NULL;
  cr_expect_eq(verify(&reason), SEAL_INVALID, "a file added");
  free(reason);
  char *p = xasprintf("%s/img/extra", base);
  unlink(p);
  cr_assert_eq(symlink("/etc/shadow", p), 0);
  reason = NULL;
  cr_expect_eq(verify(&reason), SEAL_INVALID, "a link");
  cr_expect(reason && strstr(reason, "extra is a symbolic link"), "%s", reason);
  free(reason);
  unlink(p);
  cr_assert_eq(mkfifo(p, 0600), 0);
  reason = NULL;
  cr_expect_eq(verify(&reason), SEAL_INVALID, "a FIFO");
  cr_expect(reason && strstr(reason, "special file"), "%s", reason);
  free(reason);
  unlink(p);
  free(p);
  p = xasprintf("%s/img/checkpoint.img", base);
  chmod(p, 0666);
  reason = NULL;
  cr_expect_eq(verify(&reason), SEAL_INVALID, "a file others can write");
  cr_expect(reason && strstr(reason, "other than root"), "%s", reason);
  free(reason);
  chmod(p, 0644);
  free(p);
  /* another key: another host */
  unlink(cfg.checkpoint_key);
  int fd = open(cfg.checkpoint_key, O_WRONLY | O_CREAT, 0600);
  cr_assert_geq(fd, 0);
  cr_assert_eq(write(fd, "0123456789abcdef0123456789abcdef", 32), 32);
  close(fd);
  reason = NULL;
  cr_expect_eq(verify(&reason), SEAL_INVALID, "another key");
  free(reason);
  /* a body edited to claim other credentials */
  char *sp = xasprintf("%s/img/" SEAL_NAME, base);
  char *text = NULL;
  size_t len = 0;
  tg_error *e = NULL;
  cr_assert_eq(read_file(sp, 65536, &text, &len, &e), 0);
  char *u = strstr(text, "65534");
  cr_assert_not_null(u);
  memcpy(u, "00000", 5);
  FILE *f = fopen(sp, "w");
  fputs(text, f);
  fclose(f);
  reason = NULL;
  cr_expect_eq(verify(&reason), SEAL_INVALID, "an edited body");
  free(reason);
  free(text);
  free(sp);
}

Test(seal, credentials_are_one_fixed_form) {
  json_t *a = creds("{\"process\":{\"user\":{\"gid\":5,\"uid\":7,\"additionalGids\":[9,3,9]},"
                    "\"capabilities\":{\"effective\":[\"CAP_KILL\",\"CAP_CHOWN\"]},\"noNewPrivileges\":true}}");
  json_t *b = creds("{\"process\":{\"noNewPrivileges\":true,\"capabilities\":{\"effective\":[\"CAP_CHOWN\","
                    "\"CAP_KILL\",\"CAP_KILL\"]},\"user\":{\"uid\":7,\"additionalGids\":[3,9],\"gid\":5}}}");
  char *da = json_dump(a, false, NULL), *db = json_dump(b, false, NULL);
  cr_expect_str_eq(da, db);
  json_t *root = creds("{\"process\":{\"user\":{\"uid\":0,\"gid\":0},\"capabilities\":{\"effective\":[\"CAP_SYS_ADMIN\"]}}}");
  char *dr = json_dump(root, false, NULL);
  cr_expect_str_neq(da, dr);
  free(da);
  free(db);
  free(dr);
  json_free(a);
  json_free(b);
  json_free(root);
}

Test(seal, live_credentials_are_compared) {
  /* This test process: its real uid, and whatever capabilities it has;
   * a config claiming uid 12345 does not match it. */
  char *text = xasprintf("{\"process\":{\"user\":{\"uid\":12345,\"gid\":%u}}}", (unsigned)getgid());
  tg_error *e = NULL;
  json_t *config = json_parse(text, strlen(text), NULL, &e);
  cr_assert_not_null(config);
  /* /proc/self shares the host's pid namespace: refused before any
   * comparison, since the host's processes cannot be told apart. */
  cr_expect_eq(proc_creds_check(getpid(), config, &e), -1);
  cr_expect(e && strstr(e->msg, "shares the host's pid namespace"), "%s", e ? e->msg : "");
  tg_error_free(&e);
  json_free(config);
  free(text);
}

/* A process of its own pid namespace that runs as 65534 with no
 * capabilities and no_new_privs: matched only by a config that says so. */
Test(seal, a_restored_process_is_checked_field_by_field) {
  int ready[2];
  cr_assert_eq(pipe(ready), 0);
  /* clone(CLONE_NEWPID) rather than unshare(): the test process's own
   * later forks (LeakSanitizer's among them) stay in its namespace. */
  pid_t child = (pid_t)syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, NULL, NULL, NULL, NULL);
  if (child == 0) {
    capng_clear(CAPNG_SELECT_ALL);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
        capng_change_id(65534, 65534, CAPNG_DROP_SUPP_GRP | CAPNG_CLEAR_BOUNDING) < 0)
      _exit(1);
    (void)!write(ready[1], "x", 1);
    pause();
    _exit(0);
  }
  cr_assert_gt(child, 0);
  char c;
  cr_assert_eq(read(ready[0], &c, 1), 1, "the child dropped its credentials");
  static const char *const cases[][2] = {
      {"{\"process\":{\"user\":{\"uid\":65534,\"gid\":65534},\"noNewPrivileges\":true}}", NULL},
      {"{\"process\":{\"user\":{\"uid\":0,\"gid\":65534}}}", "runs with uid 65534 65534 65534 65534"},
      {"{\"process\":{\"user\":{\"uid\":65534,\"gid\":65534},\"capabilities\":{\"effective\":"
       "[\"CAP_SYS_ADMIN\"]}}}", "CapEff 0000000000000000, the hardened spec gives 0000000000200000"},
      {"{\"process\":{\"user\":{\"uid\":1,\"gid\":65534}},\"linux\":{\"uidMappings\":[{\"containerID\":0,"
       "\"hostID\":65533,\"size\":10}]}}", NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    tg_error *e = NULL;
    json_t *config = json_parse(cases[i][0], strlen(cases[i][0]), NULL, &e);
    cr_assert_not_null(config);
    int r = proc_creds_check(child, config, &e);
    if (cases[i][1] == NULL) {
      cr_expect_eq(r, 0, "case %zu: %s", i, e ? e->msg : "");
    } else {
      cr_expect_eq(r, -1, "case %zu", i);
      cr_expect(e && strstr(e->msg, cases[i][1]), "case %zu: %s", i, e ? e->msg : "");
    }
    tg_error_free(&e);
    json_free(config);
  }
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
}
