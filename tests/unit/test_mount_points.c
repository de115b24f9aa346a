/* Mount points and the cwd made as host root in a real directory tree:
 * what is made, what is left alone, and that no link in the image leads
 * outside it. */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/json.h"
#include "shim/lifecycle/mount_points.h"
#include "base/util.h"

static char top[] = "/tmp/tg-mountpoints-XXXXXX";
static char root[PATH_MAX / 2], outside[PATH_MAX / 2], file_src[PATH_MAX / 2];

static void setup(void) {
  cr_assert_not_null(mkdtemp(top));
  snprintf(root, sizeof root, "%s/rootfs", top);
  snprintf(outside, sizeof outside, "%s/outside", top);
  snprintf(file_src, sizeof file_src, "%s/a-file", top);
  cr_assert_eq(mkdir(root, 0755), 0);
  cr_assert_eq(mkdir(outside, 0755), 0);
  FILE *f = fopen(file_src, "w");
  cr_assert_not_null(f);
  fclose(f);
  char p[PATH_MAX];
  /* The rootfs's own /outside, where "../outside" from / leads. */
  snprintf(p, sizeof p, "%s/outside", root);
  cr_assert_eq(mkdir(p, 0755), 0);
  /* Links the image may hold: absolute and relative ones aiming out. */
  snprintf(p, sizeof p, "%s/abs", root);
  cr_assert_eq(symlink(outside, p), 0);
  snprintf(p, sizeof p, "%s/rel", root);
  cr_assert_eq(symlink("../outside", p), 0);
  snprintf(p, sizeof p, "%s/var", root);
  cr_assert_eq(mkdir(p, 0755), 0);
  snprintf(p, sizeof p, "%s/var/run", root);
  cr_assert_eq(symlink("/run", p), 0);
  snprintf(p, sizeof p, "%s/run", root);
  cr_assert_eq(mkdir(p, 0755), 0);
}

static void teardown(void) {
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
  cr_assert_eq(system(cmd), 0);
}

TestSuite(mount_points, .init = setup, .fini = teardown);

static json_t *config(const char *mounts, const char *cwd) {
  char *text = xasprintf("{\"root\":{\"path\":\"rootfs\"},\"process\":{\"cwd\":\"%s\"},\"mounts\":%s}", cwd, mounts);
  tg_error *err = NULL;
  json_t *c = json_parse(text, strlen(text), NULL, &err);
  cr_assert_not_null(c, "%s", err ? err->msg : "");
  free(text);
  return c;
}

static bool is(const char *rel, mode_t type) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/%s", root, rel);
  struct stat st;
  return lstat(p, &st) == 0 && (st.st_mode & S_IFMT) == type && st.st_uid == 0 &&
         (type != S_IFDIR || (st.st_mode & 07777) == 0755);
}

static int entries(const char *dir) {
  char cmd[PATH_MAX];
  snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s')\"", dir);
  return system(cmd) == 0 ? 0 : 1;
}

Test(mount_points, makes_the_bridge_mounts_and_a_bound_file) {
  char *mounts = xasprintf("[{\"destination\":\"/proc\",\"type\":\"proc\",\"source\":\"proc\"},"
                           "{\"destination\":\"/etc/resolv.conf\",\"type\":\"bind\",\"source\":\"%s\",\"options\":[\"rbind\"]},"
                           "{\"destination\":\"/run/tollgate\",\"type\":\"bind\",\"source\":\"%s\",\"options\":[\"bind\"]},"
                           "{\"destination\":\"/run/tollgate/calls\",\"type\":\"bind\",\"source\":\"%s\"}]",
                           file_src, outside, outside);
  json_t *c = config(mounts, "/");
  free(mounts);
  tg_error *err = NULL;
  cr_assert_eq(mount_points_make(c, top, NULL, &err), 0, "%s", err ? err->msg : "");
  cr_assert(is("proc", S_IFDIR));
  cr_assert(is("etc", S_IFDIR));
  cr_assert(is("etc/resolv.conf", S_IFREG));
  cr_assert(is("run/tollgate", S_IFDIR));
  /* below an earlier mount: runc's to make, inside that mount */
  cr_assert_not(is("run/tollgate/calls", S_IFDIR));
  /* again: everything exists, nothing changes */
  cr_assert_eq(mount_points_make(c, top, NULL, &err), 0);
  json_free(c);
}

Test(mount_points, only_the_bridge_under_passthrough) {
  json_t *c = config("[{\"destination\":\"/mine\",\"type\":\"tmpfs\",\"source\":\"t\"},"
                     "{\"destination\":\"/run/tollgate\",\"type\":\"tmpfs\",\"source\":\"t\"}]", "/");
  tg_error *err = NULL;
  cr_assert_eq(mount_points_make(c, top, "/run/tollgate", &err), 0);
  cr_assert(is("run/tollgate", S_IFDIR));
  cr_assert_not(is("mine", S_IFDIR));
  json_free(c);
}

Test(mount_points, no_link_leads_outside) {
  json_t *c = config("[{\"destination\":\"/abs/a\",\"type\":\"tmpfs\",\"source\":\"t\"},"
                     "{\"destination\":\"/rel/b/c\",\"type\":\"tmpfs\",\"source\":\"t\"},"
                     "{\"destination\":\"/var/run/tollgate\",\"type\":\"tmpfs\",\"source\":\"t\"},"
                     "{\"destination\":\"/abs\",\"type\":\"tmpfs\",\"source\":\"t\"}]",
                     "/rel/work");
  tg_error *err = NULL;
  cr_assert_eq(mount_points_make(c, top, NULL, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(mount_points_make_cwd(c, top, &err), 0, "%s", err ? err->msg : "");
  /* Resolved with the rootfs as "/": the absolute link to the host's
   * outside/ dangles there (left to runc), "../outside" is the rootfs's
   * own /outside, and /var/run -> /run its own /run. */
  cr_assert_eq(entries(outside), 0, "something was made outside the rootfs");
  cr_assert(is("outside/b/c", S_IFDIR));
  cr_assert(is("outside/work", S_IFDIR));
  cr_assert(is("run/tollgate", S_IFDIR));
  cr_assert(is("abs", S_IFLNK), "the link itself is left as it was");
  json_free(c);
}

Test(mount_points, cwd_made_unless_below_a_mount) {
  json_t *c = config("[{\"destination\":\"/tmp\",\"type\":\"tmpfs\",\"source\":\"t\"}]", "/test/a");
  tg_error *err = NULL;
  cr_assert_eq(mount_points_make_cwd(c, top, &err), 0);
  cr_assert(is("test/a", S_IFDIR));
  json_free(c);
  c = config("[{\"destination\":\"/tmp\",\"type\":\"tmpfs\",\"source\":\"t\"}]", "/tmp/work");
  cr_assert_eq(mount_points_make_cwd(c, top, &err), 0);
  cr_assert_not(is("tmp/work", S_IFDIR), "inside the tmpfs it is runc's to make");
  json_free(c);
  c = config("[]", "/x/../y");
  cr_assert_eq(mount_points_make_cwd(c, top, &err), 0);
  cr_assert_not(is("y", S_IFDIR), "an unclean path is left to runc");
  json_free(c);
}
