/* Policy bindings: which namespace or runtime root may select which policy.
 * See policy_binding.h. */
#include "shim/policy_binding.h"

#include <stdlib.h>
#include <string.h>

#include "shim/util.h"

static bool string_array(const json_t *v) {
  if (!json_is(v, JSON_ARRAY))
    return false;
  for (size_t i = 0; i < json_array_len(v); i++)
    if (!json_is(json_array_get(v, i), JSON_STRING))
      return false;
  return true;
}

static bool listed(const json_t *arr, const char *s) {
  for (size_t i = 0; s && i < json_array_len(arr); i++)
    if (strcmp(json_string_value(json_array_get(arr, i)), s) == 0)
      return true;
  return false;
}

/* May a workload in ns under root use the bound policy b? */
static bool admits(const json_t *b, const char *ns, const char *root) {
  return listed(json_object_get(b, "namespaces"), ns) || listed(json_object_get(b, "roots"), root);
}

int policy_binding_validate(const char *path, const json_t *bindings,
                            const json_t *namespace_policies, tg_error **err) {
  if (bindings != NULL && !json_is(bindings, JSON_NULL)) {
    if (!json_is(bindings, JSON_OBJECT))
      return tg_error_set(err, 0,
                          "host config %s: \"policy_bindings\" must be an object: "
                          "{\"POLICY\": {\"namespaces\": [...], \"roots\": [...]}}",
                          path);
    for (size_t i = 0; i < bindings->u.object.len; i++) {
      const char *name = bindings->u.object.keys[i];
      const json_t *b = bindings->u.object.values[i];
      bool ok = json_is(b, JSON_OBJECT);
      for (size_t j = 0; ok && j < b->u.object.len; j++) {
        const char *k = b->u.object.keys[j];
        ok = (strcmp(k, "namespaces") == 0 || strcmp(k, "roots") == 0) &&
             string_array(b->u.object.values[j]);
      }
      if (!ok)
        return tg_error_set(err, 0,
                            "host config %s: line %u: policy_bindings.%s must be "
                            "{\"namespaces\": [NAMES], \"roots\": [PATHS]} (either may be left out)",
                            path, b->line, name);
    }
  }
  if (namespace_policies != NULL && !json_is(namespace_policies, JSON_NULL)) {
    if (!json_is(namespace_policies, JSON_OBJECT))
      return tg_error_set(err, 0,
                          "host config %s: \"namespace_policies\" must be an object: "
                          "{\"NAMESPACE\": \"POLICY\"}",
                          path);
    for (size_t i = 0; i < namespace_policies->u.object.len; i++) {
      const char *ns = namespace_policies->u.object.keys[i];
      const char *pol = json_string_value(namespace_policies->u.object.values[i]);
      if (pol == NULL)
        return tg_error_set(err, 0, "host config %s: namespace_policies.%s must be a policy name",
                            path, ns);
      const json_t *b = json_object_get(bindings, pol);
      if (json_is(bindings, JSON_OBJECT) && (b == NULL || !admits(b, ns, NULL)))
        return tg_error_set(err, 0,
                            "host config %s: namespace_policies.%s is \"%s\", but policy_bindings "
                            "does not bind \"%s\" to namespace \"%s\": add it there",
                            path, ns, pol, pol, ns);
    }
  }
  return 0;
}

/* "a, b" of the policies ns/root may use, or "none". */
static char *allowed_list(const json_t *bindings, const char *ns, const char *root) {
  struct json_buf b = {0};
  for (size_t i = 0; i < bindings->u.object.len; i++) {
    if (!admits(bindings->u.object.values[i], ns, root))
      continue;
    if (b.len)
      json_buf_lit(&b, ", ");
    json_buf_raw(&b, bindings->u.object.keys[i], strlen(bindings->u.object.keys[i]));
  }
  return b.s ? b.s : xstrdup("none");
}

int policy_binding_resolve(const struct host_config *cfg, const char *requested, const char *ns,
                           const char *root, char **out, tg_error **err) {
  *out = NULL;
  const json_t *bindings = cfg->policy_bindings;
  const char *chosen = requested;
  if (chosen == NULL && ns != NULL)
    chosen = json_string_value(json_object_get(cfg->namespace_policies, ns));
  if (chosen == NULL)
    return 0;
  if (!json_is(bindings, JSON_OBJECT)) {
    *out = xstrdup(chosen);
    return 0;
  }
  const json_t *b = json_object_get(bindings, chosen);
  /* Why: the annotation is the workload's word; the binding is the node
   * owner's.  Only a policy bound to the pod's namespace (or to this
   * runtime root) may be selected. */
  if (b == NULL || !admits(b, ns, root)) {
    cleanup_free char *allowed = allowed_list(bindings, ns, root);
    const char *dflt = ns ? json_string_value(json_object_get(cfg->namespace_policies, ns)) : NULL;
    return tg_error_set(err, 0,
                        "policy \"%s\" may not be used by %s%s%s (root %s): the host config's "
                        "policy_bindings %s; this workload may use: %s%s%s%s",
                        chosen, ns ? "namespace \"" : "a workload outside Kubernetes",
                        ns ? ns : "", ns ? "\"" : "", root,
                        b ? "binds it to other namespaces and roots" : "does not list it",
                        allowed, dflt ? " (the namespace's default is \"" : "", dflt ? dflt : "",
                        dflt ? "\")" : "");
  }
  *out = xstrdup(chosen);
  return 0;
}
