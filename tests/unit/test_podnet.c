/* The pod network's pieces that need no namespace (oci/podnet.c): the
 * declared ports and the config's network namespace and /sys. */
#include <criterion/criterion.h>
#include <string.h>

#include "oci/podnet.h"
#include "base/json.h"
#include "base/util.h"

static json_t *with_ports(const char *value_json) {
  cleanup_free char *text = xasprintf(
      "{\"annotations\":{\"" PODNET_PORTS_ANNOTATION "\":%s},"
      "\"mounts\":[{\"destination\":\"/sys\",\"type\":\"sysfs\",\"source\":\"sysfs\",\"options\":[\"ro\"]}],"
      "\"linux\":{\"namespaces\":[{\"type\":\"network\",\"path\":\"/var/run/netns/cni-1\"}]}}",
      value_json);
  cleanup_error tg_error *err = NULL;
  json_t *c = json_parse(text, strlen(text), NULL, &err);
  cr_assert_not_null(c);
  return c;
}

Test(podnet, ports_parse) {
  json_t *c = with_ports("\"8080,9090\"");
  struct podnet_ports p;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(oci_podnet_ports(c, &p, &err), 0);
  cr_expect_eq(p.n, 2);
  cr_expect_eq(p.port[0], 8080);
  cr_expect_eq(p.port[1], 9090);
  json_free(c);
}

Test(podnet, no_annotation_no_ports) {
  json_t *c = json_new_object();
  struct podnet_ports p;
  cleanup_error tg_error *err = NULL;
  cr_assert_eq(oci_podnet_ports(c, &p, &err), 0);
  cr_expect_eq(p.n, 0);
  json_free(c);
}

Test(podnet, bad_ports_refused_naming_the_fix) {
  static const char *const bad[] = {"\"0\"", "\"65536\"", "\"80,\"", "\"http\"", "\"8080 9090\"", "8080",
                                    "\"1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16\"", "\"\\u002d1\""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    json_t *c = with_ports(bad[i]);
    struct podnet_ports p;
    cleanup_error tg_error *err = NULL;
    cr_expect_eq(oci_podnet_ports(c, &p, &err), -1, "%s accepted", bad[i]);
    cr_expect(err != NULL && strstr(err->msg, PODNET_PORTS_ANNOTATION) != NULL, "%s", bad[i]);
    json_free(c);
  }
}

Test(podnet, apply_sets_the_path) {
  json_t *c = with_ports("\"1\"");
  cleanup_free char *asked = oci_podnet_netns_path(c);
  cr_expect_str_eq(asked, "/var/run/netns/cni-1");
  oci_podnet_apply(c, "/proc/9/ns/net");
  cleanup_free char *now = oci_podnet_netns_path(c);
  cr_expect_str_eq(now, "/proc/9/ns/net");
  json_free(c);
}
