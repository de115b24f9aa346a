/* run under runc as one `runc run` (shim/lifecycle/create_direct.c):
 * only when nothing needs runc's create/start split. */
#include <criterion/criterion.h>
#include <string.h>

#include "base/json.h"
#include "base/util.h"
#include "shim/lifecycle/container.h"
#include "shim/lifecycle/create_steps.h"

static json_t *config(const char *extra_linux, const char *extra_top) {
  cleanup_free char *text = xasprintf(
      "{\"process\":{\"terminal\":false,\"args\":[\"true\"]},"
      "\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\"}%s]}%s}",
      extra_linux, extra_top);
  cleanup_error tg_error *err = NULL;
  json_t *c = json_parse(text, strlen(text), NULL, &err);
  cr_assert_not_null(c, "%s", text);
  return c;
}

/* Whether create would choose one `runc run` for cfg (owned, freed). */
static bool direct(json_t *cfg, struct create_request req, enum backend_kind kind) {
  struct created out;
  memset(&out, 0, sizeof out);
  struct create_context cx;
  memset(&cx, 0, sizeof cx);
  req.run_direct_if_eligible = true;
  cx.req = &req;
  cx.out = &out;
  cx.config = cfg;
  cx.kind_only.kind = kind;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(create_choose_direct_run(&cx, &err), 0);
  json_free(cfg);
  return out.run_direct;
}

Test(create_direct, plain_config_under_runc_is_direct) {
  struct create_request req = {0};
  cr_expect(direct(config("", ""), req, BACKEND_RUNC));
  cr_expect(direct(config("", ",\"hooks\":{\"prestart\":[]}"), req, BACKEND_RUNC), "empty hook lists");
}

Test(create_direct, anything_between_create_and_start_keeps_the_split) {
  struct create_request req = {0};
  cr_expect(!direct(config("", ""), req, BACKEND_RUNSC), "runsc has its own run path");
  cr_expect(!direct(config("", ",\"hooks\":{\"prestart\":[{\"path\":\"/bin/true\"}]}"), req, BACKEND_RUNC));
  cr_expect(!direct(config("", ",\"hooks\":{\"createRuntime\":[{\"path\":\"/x\"}]}"), req, BACKEND_RUNC));
  cr_expect(!direct(config("", ",\"hooks\":{\"poststop\":{}}"), req, BACKEND_RUNC), "a malformed stage");
  cr_expect(!direct(config("", ",\"hooks\":[]"), req, BACKEND_RUNC), "hooks not an object");
  cr_expect(!direct(config(",{\"type\":\"network\",\"path\":\"/var/run/netns/x\"}", ""), req, BACKEND_RUNC),
            "a joined network namespace");
  json_t *c = config("", "");
  json_t *ns = json_get_path(c, "linux.namespaces");
  json_array_remove(ns, 1);
  cr_expect(!direct(c, req, BACKEND_RUNC), "no network namespace of its own");
  c = config("", "");
  json_object_set(json_object_get(c, "process"), "terminal", json_new_bool(true));
  cr_expect(!direct(c, req, BACKEND_RUNC), "a terminal");
  struct create_request with_pid = {.pid_file = "/tmp/x.pid"};
  cr_expect(!direct(config("", ""), with_pid, BACKEND_RUNC), "a caller's pid file");
  struct create_request with_console = {.console_socket = "/tmp/c.sock"};
  cr_expect(!direct(config("", ""), with_console, BACKEND_RUNC), "a console socket");
  struct create_request joined = {.join = "owner"};
  cr_expect(!direct(config("", ""), joined, BACKEND_RUNC), "a join");
}

Test(create_direct, not_asked_not_direct) {
  struct created out;
  memset(&out, 0, sizeof out);
  out.run_direct = true;
  struct create_request req = {0};
  json_t *cfg = config("", "");
  struct create_context cx;
  memset(&cx, 0, sizeof cx);
  cx.req = &req;
  cx.out = &out;
  cx.config = cfg;
  cx.kind_only.kind = BACKEND_RUNC;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(create_choose_direct_run(&cx, &err), 0);
  cr_expect(!out.run_direct);
  json_free(cfg);
}

/* A governed (bridged) container takes the one-call run too: its run
 * guard follows `runc run` (shim/lifecycle/run_guard.h). */
Test(create_direct, governed_is_direct) {
  struct created out;
  memset(&out, 0, sizeof out);
  out.bridged = true;
  struct create_request req = {.run_direct_if_eligible = true};
  json_t *cfg = config("", "");
  struct create_context cx;
  memset(&cx, 0, sizeof cx);
  cx.req = &req;
  cx.out = &out;
  cx.config = cfg;
  cx.kind_only.kind = BACKEND_RUNC;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(create_choose_direct_run(&cx, &err), 0);
  cr_expect(out.run_direct);
  json_free(cfg);
}
