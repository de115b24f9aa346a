#!/usr/bin/env python3
"""Check every Kubernetes manifest in bundles/kubernetes/ and the containerd
snippet in bundles/containerd/: they parse, each object has a known kind and
apiVersion and the fields its kind requires, and the pieces agree with each
other (RuntimeClass handler = containerd handler, the node ConfigMap's
snippet = bundles/containerd/tollgate.toml, the example pod's policy exists
in the policies ConfigMap, every policy and host config is valid JSON with
the keys tollgate knows).

Prints one "ok - NAME" or "FAIL - NAME: why" line per check (the format
tests/integration/run.sh counts) and exits non-zero on any failure.
    python3 tests/test_manifests.py [TOP]
"""
import glob
import json
import os
import re
import sys
import tomllib

import yaml

TOP = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
K8S = os.path.join(TOP, "bundles", "kubernetes")
SNIPPET = os.path.join(TOP, "bundles", "containerd", "tollgate.toml")
CRI_RUNTIMES = ("plugins", "io.containerd.grpc.v1.cri", "containerd", "runtimes")

# The kinds we ship, with the apiVersion each must use.
API_VERSIONS = {
    "RuntimeClass": "node.k8s.io/v1",
    "DaemonSet": "apps/v1",
    "ConfigMap": "v1",
    "Namespace": "v1",
    "Pod": "v1",
}
NAMESPACED = {"DaemonSet", "ConfigMap", "Pod"}
# Host config keys: exactly the field names of struct host_config (base/hostconfig.h).
HOST_CONFIG_KEYS = {
    "runtime", "runtime_path", "runtime_args", "platform", "profile",
    "allow_passthrough", "data_dir", "policy_dir", "audit_dir", "audit_key",
    "approval_hook", "approval_timeout_ms", "approver_group",
    "bridge_tmpfs_bytes", "request_max_bytes",
}
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|k|Ki|Mi|Gi|Ti|M|G|T)?$")
POLICY_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")

failures = 0


def check(name, cond, why=""):
    global failures
    if cond:
        print(f"ok - {name}")
    else:
        failures += 1
        print(f"FAIL - {name}" + (f": {why}" if why else ""))
    return cond


def get(obj, *path):
    for p in path:
        if not isinstance(obj, dict) or p not in obj:
            return None
        obj = obj[p]
    return obj


def check_metadata(where, doc):
    kind = doc.get("kind")
    name = get(doc, "metadata", "name")
    ok = check(f"{where}: metadata.name", isinstance(name, str) and DNS_SUBDOMAIN.match(name or ""),
               f"got {name!r}")
    if kind in NAMESPACED:
        ns = get(doc, "metadata", "namespace")
        check(f"{where}: metadata.namespace", isinstance(ns, str) and DNS_LABEL.match(ns or ""),
              f"got {ns!r}")
    for field in ("labels", "annotations"):
        m = get(doc, "metadata", field)
        if m is not None:
            check(f"{where}: metadata.{field} are strings",
                  isinstance(m, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in m.items()),
                  f"{field} must map strings to strings (quote numbers and booleans)")
    return ok


def check_containers(where, pod_spec):
    containers = get(pod_spec, "containers")
    if not check(f"{where}: has containers", isinstance(containers, list) and containers):
        return
    volumes = {v.get("name") for v in pod_spec.get("volumes", []) if isinstance(v, dict)}
    for v in pod_spec.get("volumes", []):
        hp = get(v, "hostPath", "path")
        if hp is not None:
            check(f"{where}: hostPath {hp} is absolute", hp.startswith("/"))
    for c in containers + pod_spec.get("initContainers", []):
        cname = c.get("name")
        check(f"{where}: container {cname!r} has a name and an image",
              isinstance(cname, str) and DNS_LABEL.match(cname or "") and isinstance(c.get("image"), str))
        for vm in c.get("volumeMounts", []):
            check(f"{where}: {cname} mount {vm.get('mountPath')} uses a declared volume",
                  vm.get("name") in volumes, f"no volume named {vm.get('name')!r}")
        for e in c.get("env", []):
            check(f"{where}: {cname} env {e.get('name')} is a string",
                  isinstance(e.get("value"), str) or "valueFrom" in e)
        for q in (get(c, "resources", "requests") or {}).values():
            check(f"{where}: {cname} resource quantity {q!r}", QUANTITY.match(str(q)))


def check_policy(where, text):
    try:
        p = json.loads(text)
    except json.JSONDecodeError as e:
        check(f"{where}: valid JSON", False, str(e))
        return
    check(f"{where}: valid JSON", True)
    check(f"{where}: version 1", p.get("version") == 1)
    tools = p.get("tools")
    if check(f"{where}: has tools", isinstance(tools, dict) and tools):
        for tname, t in tools.items():
            check(f"{where}: tool {tname} has a backend and rules",
                  isinstance(get(t, "backend", "type"), str) and isinstance(t.get("rules"), list) and t["rules"])
            for r in t.get("rules", []):
                check(f"{where}: tool {tname} rule effect {r.get('effect')!r}",
                      r.get("effect") in ("allow", "deny", "approve"))


def main():
    files = sorted(glob.glob(os.path.join(K8S, "*.yaml")) + glob.glob(os.path.join(K8S, "*.yml")))
    check("bundles/kubernetes has manifests", len(files) >= 4, f"found {files}")
    objects = []
    for path in files:
        rel = os.path.relpath(path, TOP)
        try:
            with open(path) as f:
                docs = [d for d in yaml.safe_load_all(f) if d is not None]
        except yaml.YAMLError as e:
            check(f"{rel}: parses", False, str(e))
            continue
        check(f"{rel}: parses ({len(docs)} objects)", len(docs) > 0)
        for i, doc in enumerate(docs):
            kind = doc.get("kind") if isinstance(doc, dict) else None
            where = f"{rel}#{i} {kind}"
            if not check(f"{where}: known kind", kind in API_VERSIONS, f"kind {kind!r}"):
                continue
            check(f"{where}: apiVersion {API_VERSIONS[kind]}", doc.get("apiVersion") == API_VERSIONS[kind],
                  f"got {doc.get('apiVersion')!r}")
            check_metadata(where, doc)
            objects.append((where, doc))

    by_kind = {}
    for where, doc in objects:
        by_kind.setdefault(doc["kind"], []).append((where, doc))

    # containerd snippet: parses, registers handler "tollgate" as runc.v2.
    with open(SNIPPET, "rb") as f:
        snippet = tomllib.load(f)
    handlers = get(snippet, *CRI_RUNTIMES) or {}
    check("containerd snippet: version 2", snippet.get("version") == 2)
    h = handlers.get("tollgate", {})
    check("containerd snippet: handler tollgate is io.containerd.runc.v2",
          h.get("runtime_type") == "io.containerd.runc.v2")
    check("containerd snippet: BinaryName and its own Root",
          isinstance(get(h, "options", "BinaryName"), str) and get(h, "options", "Root")
          not in (None, "", "/run/containerd/runc"))
    # tollgate's control socket is <Root>/<namespace>/<64-hex CRI id>/control.sock
    # and must fit in sun_path (107 bytes + NUL).
    root = get(h, "options", "Root") or ""
    sock = f"{root}/k8s.io/{'0' * 64}/control.sock"
    check("containerd snippet: Root leaves room for CRI ids in socket paths",
          len(sock) <= 107, f"{sock} is {len(sock)} bytes")
    check("containerd snippet: passes dev.tollgate.* pod annotations",
          "dev.tollgate.*" in h.get("pod_annotations", []))

    # RuntimeClass.
    rcs = by_kind.get("RuntimeClass", [])
    check("one RuntimeClass", len(rcs) == 1)
    rc_names = set()
    for where, rc in rcs:
        rc_names.add(get(rc, "metadata", "name"))
        check(f"{where}: handler matches the containerd handler", rc.get("handler") in handlers,
              f"handler {rc.get('handler')!r}, containerd has {sorted(handlers)}")
        for res, q in (get(rc, "overhead", "podFixed") or {}).items():
            check(f"{where}: overhead {res}={q}", res in ("cpu", "memory") and QUANTITY.match(str(q)))
        sel = get(rc, "scheduling", "nodeSelector")
        check(f"{where}: scheduling.nodeSelector maps strings",
              isinstance(sel, dict) and all(isinstance(v, str) for v in sel.values()))

    # ConfigMaps: data values are strings; JSON payloads are valid.
    policies = {}
    node_cm = None
    for where, cm in by_kind.get("ConfigMap", []):
        data = cm.get("data") or {}
        check(f"{where}: data values are strings",
              data and all(isinstance(v, str) for v in data.values()))
        name = get(cm, "metadata", "name")
        if name == "tollgate-policies":
            for key, text in data.items():
                check(f"{where}: key {key} is NAME.json", key.endswith(".json") and POLICY_NAME.match(key[:-5]))
                check_policy(f"{where} {key}", text)
                policies[key[:-5]] = text
        if name == "tollgate-node":
            node_cm = (where, data)
    check("policies ConfigMap tollgate-policies exists", bool(policies))
    if check("node ConfigMap tollgate-node exists", node_cm is not None):
        where, data = node_cm
        try:
            cfg = json.loads(data.get("config.json", ""))
            check(f"{where}: config.json keys are host config fields",
                  isinstance(cfg, dict) and set(cfg) <= HOST_CONFIG_KEYS, f"unknown: {set(cfg) - HOST_CONFIG_KEYS}")
            check(f"{where}: config.json keeps runsc the backend", cfg.get("runtime", "runsc") == "runsc")
        except json.JSONDecodeError as e:
            check(f"{where}: config.json is JSON", False, str(e))
        try:
            node_snippet = tomllib.loads(data.get("tollgate.toml", ""))
            a = json.loads(json.dumps(node_snippet))
            b = json.loads(json.dumps(snippet))
            node_bin = get(a, *CRI_RUNTIMES, "tollgate", "options", "BinaryName")
            for t in (a, b):
                get(t, *CRI_RUNTIMES, "tollgate", "options").pop("BinaryName", None)
            check(f"{where}: tollgate.toml equals bundles/containerd/tollgate.toml but for BinaryName",
                  a == b)
            check(f"{where}: tollgate.toml BinaryName is the installed tree",
                  node_bin == "/opt/tollgate/bin/tollgate")
        except (tomllib.TOMLDecodeError, AttributeError) as e:
            check(f"{where}: tollgate.toml parses", False, str(e))

    # DaemonSet: selector matches the template, the installer is wired.
    dss = by_kind.get("DaemonSet", [])
    check("one installer DaemonSet", len(dss) == 1)
    for where, ds in dss:
        sel = get(ds, "spec", "selector", "matchLabels") or {}
        labels = get(ds, "spec", "template", "metadata", "labels") or {}
        check(f"{where}: selector matches template labels",
              sel and all(labels.get(k) == v for k, v in sel.items()))
        pod = get(ds, "spec", "template", "spec") or {}
        check_containers(where, pod)
        init = pod.get("initContainers", [])
        check(f"{where}: a privileged init container installs",
              any(get(c, "securityContext", "privileged") is True for c in init))
        uses_nsenter = any("nsenter" in open(os.path.join(K8S, "installer", os.path.basename(c.get("command", [""])[0]))).read()
                           for c in init if os.path.isfile(os.path.join(K8S, "installer", os.path.basename(c.get("command", [""])[0]))))
        check(f"{where}: hostPID for the installer's nsenter into the node's pid 1",
              not uses_nsenter or pod.get("hostPID") is True)
        rc_sel = get(rcs[0][1], "scheduling", "nodeSelector") if rcs else None
        check(f"{where}: runs on the nodes the RuntimeClass selects",
              rc_sel is not None and pod.get("nodeSelector") == rc_sel)
        cms = {get(v, "configMap", "name") for v in pod.get("volumes", [])}
        check(f"{where}: mounts the policies and node ConfigMaps",
              {"tollgate-policies", "tollgate-node"} <= cms)
        for c in init + pod.get("containers", []):
            script = c.get("command", [""])[0]
            local = os.path.join(K8S, "installer", os.path.basename(script))
            check(f"{where}: {c.get('name')} runs a shipped script {script}",
                  script.startswith("/opt/tollgate-installer/") and os.path.isfile(local))

    # Pods: select the RuntimeClass and an existing policy.
    pods = by_kind.get("Pod", [])
    check("an example Pod", len(pods) >= 1)
    for where, pod in pods:
        spec = pod.get("spec") or {}
        check_containers(where, spec)
        check(f"{where}: runtimeClassName is the RuntimeClass",
              spec.get("runtimeClassName") in rc_names, f"got {spec.get('runtimeClassName')!r}")
        pol = get(pod, "metadata", "annotations", "dev.tollgate.policy")
        check(f"{where}: dev.tollgate.policy names a policy in the ConfigMap", pol in policies,
              f"{pol!r} not in {sorted(policies)}")

    print(f"manifests: {'failed' if failures else 'all good'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
