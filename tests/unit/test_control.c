/* The control socket's server: a control thread that cannot start is
 * reported with the error pthread_create returned, and leaves no socket
 * behind.  (What it serves is tested through the gate: test_approval.c.) */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "governance/control.h"
#include "base/util.h"
#include "thread_fail_util.h"

static char dir[] = "/tmp/tg-ctl-XXXXXX";
static void setup(void) { cr_assert_not_null(mkdtemp(dir)); }
static void teardown(void) { remove_tree(dir, NULL); }
TestSuite(control, .init = setup, .fini = teardown);

static json_t *no_handler(void *ctx, const json_t *req, uid_t uid, bool may_decide) {
  (void)ctx, (void)req, (void)uid, (void)may_decide;
  return NULL;
}

static int start_without_threads(tg_error **err) {
  cleanup_free char *path = xasprintf("%s/control.sock", dir);
  struct control *c = NULL;
  return control_start(path, NULL, no_handler, NULL, &c, err);
}

Test(control, thread_that_cannot_start_names_the_real_error) {
  struct thread_fail_report rep = thread_fail_run(start_without_threads);
  thread_fail_assert_named(&rep);
  cr_expect(strstr(rep.msg, "start the control thread") != NULL, "%s", rep.msg);
  cleanup_free char *path = xasprintf("%s/control.sock", dir);
  struct stat st;
  cr_expect(lstat(path, &st) < 0, "the socket was left behind");
}
