/* The state directory and pid files (shim/lifecycle/state.c). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "shim/lifecycle/state.h"
#include "base/util.h"

static char dir[] = "/tmp/tg-state-XXXXXX";
static void setup(void) { cr_assert_not_null(mkdtemp(dir)); }
static void teardown(void) { remove_tree(dir, NULL); }
TestSuite(state, .init = setup, .fini = teardown);

Test(state, pid_file_is_digits_only_and_leaves_no_temp_file) {
  char *p = xasprintf("%s/init.pid", dir);
  tg_error *err = NULL;
  cr_assert_eq(state_write_pid_file(p, 12345, &err), 0);
  char *buf = NULL;
  size_t len = 0;
  cr_assert_eq(read_file(p, 64, &buf, &len, NULL), 0);
  cr_assert_eq(len, 5);
  cr_assert_str_eq(buf, "12345");
  free(buf);
  cr_assert_eq(state_write_pid_file(p, 7, &err), 0); /* replaced whole */
  cr_assert_eq(read_file(p, 64, &buf, &len, NULL), 0);
  cr_assert_str_eq(buf, "7");
  free(buf);
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    if (e->d_name[0] != '.')
      n++;
  closedir(d);
  cr_assert_eq(n, 1, "a temp file was left beside the pid file");
  long pid = 0;
  cr_assert_eq(state_read_pid_file(p, &pid, &err), 0);
  cr_assert_eq(pid, 7);
  free(p);
}

Test(state, backend_pid_files_may_end_in_a_newline_but_must_hold_a_pid) {
  char *p = xasprintf("%s/b.pid", dir);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY);
  long pid = 0;
  tg_error *err = NULL;
  cr_assert_eq(write_file_atomic(dfd, "b.pid", "42\n", 3, 0644, false, NULL), 0);
  cr_assert_eq(state_read_pid_file(p, &pid, &err), 0);
  cr_assert_eq(pid, 42);
  cr_assert_eq(write_file_atomic(dfd, "b.pid", "x1", 2, 0644, false, NULL), 0);
  cr_assert_lt(state_read_pid_file(p, &pid, &err), 0);
  tg_error_free(&err);
  cr_assert_eq(write_file_atomic(dfd, "b.pid", "0", 1, 0644, false, NULL), 0);
  cr_assert_lt(state_read_pid_file(p, &pid, &err), 0);
  tg_error_free(&err);
  close(dfd);
  free(p);
}

Test(state, claim_is_exclusive_and_unknown_ids_do_not_exist) {
  char *root = xasprintf("%s/root", dir);
  char *d = NULL;
  tg_error *err = NULL;
  cr_assert_eq(state_create_dir(root, "c1", &d, &err), 0);
  struct stat st;
  cr_assert_eq(stat(d, &st), 0);
  cr_assert_eq(st.st_mode & 0777, 0700);
  free(d);
  cr_assert_lt(state_create_dir(root, "c1", &d, &err), 0);
  cr_assert(strstr(err->msg, "container with id exists: c1"), "%s", err->msg);
  tg_error_free(&err);
  cr_assert_lt(state_create_dir(root, "../evil", &d, &err), 0);
  tg_error_free(&err);
  json_t *s = NULL;
  cr_assert_lt(state_load(root, "nosuch", &s, &d, &err), 0);
  cr_assert_str_eq(err->msg, "container nosuch does not exist");
  tg_error_free(&err);
  /* A claimed directory without state.json: an interrupted create. */
  cr_assert_lt(state_load(root, "c1", &s, &d, &err), 0);
  cr_assert(strstr(err->msg, "delete --force c1"), "%s", err->msg);
  tg_error_free(&err);
  free(root);
}

Test(state, json_round_trip) {
  json_t *v = json_new_object();
  json_object_set(v, "backend", json_new_string("runsc"));
  tg_error *err = NULL;
  cr_assert_eq(state_write_json(dir, "state.json", v, &err), 0);
  json_t *back = state_read_json(dir, "state.json", &err);
  cr_assert_not_null(back);
  cr_assert(json_equal(v, back));
  json_free(v);
  json_free(back);
}

Test(state, lock_excludes_a_second_holder) {
  int fd = state_lock(dir);
  cr_assert_geq(fd, 0);
  int other = open(dir, O_RDONLY | O_DIRECTORY);
  cr_assert_lt(flock(other, LOCK_EX | LOCK_NB), 0);
  cr_assert_eq(errno, EWOULDBLOCK);
  close(fd);
  cr_assert_eq(flock(other, LOCK_EX | LOCK_NB), 0);
  close(other);
  char *missing = xasprintf("%s/none", dir);
  cr_assert_lt(state_lock(missing), 0);
  cr_assert_eq(errno, ENOENT);
  free(missing);
}
