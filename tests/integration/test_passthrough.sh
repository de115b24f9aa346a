#!/usr/bin/env bash
# passthrough is the bare backend, and tollgate's own records stay out of
# the container's state under every profile (issue 17):
#   - under passthrough the effective config (the bundle's and the state
#     directory's) is the user's config.json byte for byte: no bridge
#     mounts, no env, no annotation, no network check; the bundle is not
#     rewritten at all; `tollgate state` still names the profile;
#   - a policy given explicitly brings the bridge back (and only that);
#   - a prestart hook gets the container's state on stdin carrying the
#     user's annotations only and the container's own id (not runsc's
#     tg-<hex> backend id), hardened and passthrough;
#   - a user-namespace config (uid/gid mappings) runs under passthrough;
#   - create run twice on one bundle still hardens the user's original
#     (the mark beside config.json replaced the dev.tollgate.effective
#     annotation), and a config.json the user replaced is taken as theirs.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

B=$TG_ROOT/bundles/pt
# modulo_range: the config on stdin with each id mapping's hostID made
# relative to the first host id of its range.
modulo_range() {
  python3 -c '
import json, sys
c = json.load(sys.stdin)
lx = c.get("linux") or {}
for key in ("uidMappings", "gidMappings"):
    ms = lx.get(key) or []
    first = min((m.get("hostID", 0) for m in ms), default=0)
    for m in ms:
        m["hostID"] = m.get("hostID", 0) - first
print(json.dumps(c, indent=1, sort_keys=True))'
}
make_bundle "$B" sh -c 'echo hello'
python3 - "$B/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["annotations"] = {"example.com/owner": "conformance", "org.opencontainers.x": "1"}
# written the way a person writes it: not tollgate's own serialisation
open(sys.argv[1], "w").write(json.dumps(c, indent=3, sort_keys=True) + "\n")
PY
cp "$B/config.json" "$TG_ROOT/user.json"
no_tollgate_keys() {  # FILE: the JSON's annotations hold no dev.tollgate.* key
  python3 -c 'import json,sys
a = json.load(open(sys.argv[1])).get("annotations") or {}
bad = [k for k in a if k.startswith("dev.tollgate.")]
print(" ".join(bad))' "$1" 2>&1
}

for be in $BACKENDS; do
  # --- passthrough: the user's bytes, nothing else --------------------------
  write_config allow_passthrough=true 'profile="passthrough"'
  fresh "$TG_ROOT/user.json" "$B"
  if tg --runtime "$be" create --bundle "$B" "pt-$be" 2>"$TG_ROOT/err"; then
    check "$be: passthrough: the state directory's effective config is the user's, byte for byte" \
      cmp -s "$TG_ROOT/user.json" "$TG_ROOT/pt-$be/config.json"
    check "$be: passthrough: the bundle's config.json is untouched" cmp -s "$TG_ROOT/user.json" "$B/config.json"
    check_fails "$be: passthrough: no config.json.orig (nothing was rewritten)" test -e "$B/config.json.orig"
    check_fails "$be: passthrough: no bridge area" test -e "$TG_ROOT/pt-$be/bridge"
    st=$(tg state "pt-$be" 2>&1)
    check_match "$be: passthrough: state names the profile" '"profile": "passthrough"' "$st"
    check_eq "$be: passthrough: state's annotations are the user's" \
      '{"example.com/owner": "conformance", "org.opencontainers.x": "1"}' \
      "$(python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1])["annotations"], sort_keys=True))' "$st" 2>&1)"
    check "$be: passthrough: start" tg start "pt-$be"
    wait_for 20 status_is "pt-$be" stopped
    check "$be: passthrough: delete" tg delete --force "pt-$be"
  else
    check "$be: passthrough create" false
    sed 's/^/# /' "$TG_ROOT/err"
  fi
  check_eq "$be: passthrough run prints hello" hello "$(fresh "$TG_ROOT/user.json" "$B"; tg --runtime "$be" run --bundle "$B" "ptr-$be" 2>&1)"

  # --- passthrough with an explicit policy: the bridge, and only the bridge -
  fresh "$TG_ROOT/user.json" "$B"
  echo '{"version": 1, "tools": {}}' >"$TG_ROOT/policies/none.json"
  if tg --runtime "$be" create --bundle "$B" --policy "$TG_ROOT/policies/none.json" "ptp-$be" 2>"$TG_ROOT/err"; then
    diff=$(python3 - "$TG_ROOT/user.json" "$TG_ROOT/ptp-$be/config.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
added = [m["destination"] for m in b["mounts"] if m not in a["mounts"]]
b["mounts"] = [m for m in b["mounts"] if m in a["mounts"]]
env = [e for e in b["process"].get("env", []) if e not in a["process"].get("env", [])]
b["process"]["env"] = [e for e in b["process"].get("env", []) if e in a["process"].get("env", [])]
print("same" if a == b else "differs", sorted(added) != [], sorted(env))
PY
)
    check_match "$be: passthrough + policy: the bridge's mounts and env are all that is added" '^same True ' "$diff"
    check "$be: passthrough + policy: bridge area present" test -d "$TG_ROOT/ptp-$be/bridge"
    check_eq "$be: passthrough + policy: no tollgate annotation" "" "$(no_tollgate_keys "$TG_ROOT/ptp-$be/config.json")"
    tg delete --force "ptp-$be"
  else
    check "$be: passthrough + policy create" false
    sed 's/^/# /' "$TG_ROOT/err"
  fi

  # --- hooks see the user's annotations only (both profiles) ---------------
  for prof in hardened passthrough; do
    if [ "$prof" = passthrough ]; then write_config allow_passthrough=true 'profile="passthrough"'; else write_config; fi
    fresh "$TG_ROOT/user.json" "$B"
    out=$TG_ROOT/hook-$be-$prof.json
    rm -f "$out"
    python3 - "$B/config.json" "$out" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["hooks"] = {"prestart": [{"path": "/bin/sh", "args": ["sh", "-c", "cat > " + sys.argv[2]]}]}
open(sys.argv[1], "w").write(json.dumps(c, indent=3, sort_keys=True) + "\n")
PY
    tg --runtime "$be" run --bundle "$B" "hook-$be-$prof" >/dev/null 2>"$TG_ROOT/err" || sed 's/^/# /' "$TG_ROOT/err"
    check_eq "$be: $prof: the prestart hook's state carries the user's annotations only" \
      '{"example.com/owner": "conformance", "org.opencontainers.x": "1"}' \
      "$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1])).get("annotations"), sort_keys=True))' "$out" 2>&1)"
    # the state's id is the container's, under runsc too (whose backend
    # id was tg-<32 hex> for every container)
    check_eq "$be: $prof: the prestart hook's state names the container's own id" "hook-$be-$prof" \
      "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("id"))' "$out" 2>&1)"
    check_eq "$be: $prof: the effective config has no tollgate annotation" "" "$(no_tollgate_keys "$B/config.json")"
  done

  # --- a user-namespace config runs under passthrough ----------------------
  write_config allow_passthrough=true 'profile="passthrough"'
  fresh "$TG_ROOT/user.json" "$B"
  python3 - "$B/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["linux"]["namespaces"].append({"type": "user"})
c["linux"]["uidMappings"] = [{"containerID": 0, "hostID": 100000, "size": 65536}]
c["linux"]["gidMappings"] = [{"containerID": 0, "hostID": 100000, "size": 65536}]
c["process"]["args"] = ["sh", "-c", "cat /proc/self/uid_map"]
open(sys.argv[1], "w").write(json.dumps(c, indent=3, sort_keys=True) + "\n")
PY
  got=$(tg --runtime "$be" run --bundle "$B" "userns-$be" 2>"$TG_ROOT/err")
  [ -n "$got" ] || sed 's/^/# /' "$TG_ROOT/err"
  # runc: the kernel's mapping as configured; runsc: gVisor applies the
  # mapping inside its own user namespace and shows its sentry's view.
  if [ "$be" = runc ]; then want='^ *0 +100000 +65536'; else want='^ *0 +0 +4294967295'; fi
  check_match "$be: passthrough: a user-namespace config runs" "$want" "$got"

  # --- a rebuilt rootfs is not emptied under a container that uses it -----
  # A passthrough config names its tree by path (no pin, nothing in the
  # host's mount table): a rebuild that swaps the tree (replace_tree.py)
  # must leave the old one to the container, as bundles/rootfs/*.sh do.
  T=$TG_ROOT/rebuild-$be/rootfs
  rm -rf "$TG_ROOT/rebuild-$be"
  mkdir -p "$TG_ROOT/rebuild-$be"
  cp -a "$BUSYBOX_ROOTFS" "$T"
  make_bundle "$TG_ROOT/rebuild-$be/b" sleep 60
  edit_json "$TG_ROOT/rebuild-$be/b/config.json" 'c["root"]["path"] = args[0]' "$T"
  if tg --runtime "$be" run --detach --bundle "$TG_ROOT/rebuild-$be/b" "tree-$be" 2>"$TG_ROOT/err"; then
    cp -a "$BUSYBOX_ROOTFS" "$T.new"
    python3 "$here/../../bundles/rootfs/replace_tree.py" "$T.new" "$T"
    mv "$T.new" "$T.old.1"
    python3 "$here/../../bundles/rootfs/drop_old_trees.py" "$T"
    check "$be: rebuild: the old tree stays while a passthrough container uses it" test -x "$T.old.1/bin/busybox"
    check_eq "$be: rebuild: the container still runs programs from its tree" still \
      "$(tg exec "tree-$be" sh -c 'echo still' 2>&1)"
    tg delete --force "tree-$be" 2>/dev/null
    python3 "$here/../../bundles/rootfs/drop_old_trees.py" "$T"
    check_fails "$be: rebuild: the old tree goes once nothing uses it" test -e "$T.old.1"
  else
    check "$be: rebuild: passthrough run --detach on its own tree" false
    sed 's/^/# /' "$TG_ROOT/err"
  fi
  rm -rf "$TG_ROOT/rebuild-$be"

  # --- the mark: a second create hardens the user's original --------------
  write_config
  fresh "$TG_ROOT/user.json" "$B"
  tg --runtime "$be" create --bundle "$B" "m1-$be" 2>"$TG_ROOT/err" || sed 's/^/# /' "$TG_ROOT/err"
  tg delete --force "m1-$be" 2>/dev/null
  check "$be: hardened: the user's config is kept as config.json.orig" cmp -s "$TG_ROOT/user.json" "$B/config.json.orig"
  check "$be: hardened: the mark beside config.json" test -s "$B/config.json.tollgate"
  cp "$B/config.json" "$TG_ROOT/eff1.json"
  tg --runtime "$be" create --bundle "$B" "m2-$be" 2>"$TG_ROOT/err" || sed 's/^/# /' "$TG_ROOT/err"
  tg delete --force "m2-$be" 2>/dev/null
  # The same effective config but for the state directory in the bridge's
  # mount sources (it is named after the container), and modulo the host
  # id range (runc): another script's create may claim the next range at
  # the same moment, so the second create may get another one.
  check_eq "$be: second create: hardened from the original, same effective config" \
    "$(sed "s/m1-$be/m2-$be/g" "$TG_ROOT/eff1.json" | modulo_range)" "$(modulo_range <"$B/config.json")"
  check "$be: second create: the original is still the user's" cmp -s "$TG_ROOT/user.json" "$B/config.json.orig"
  # The user writes a new config.json: it is theirs, not mistaken for ours.
  python3 - "$TG_ROOT/user.json" "$B/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["annotations"]["example.com/owner"] = "edited"
open(sys.argv[2], "w").write(json.dumps(c, indent=3, sort_keys=True) + "\n")
PY
  cp "$B/config.json" "$TG_ROOT/user2.json"
  tg --runtime "$be" create --bundle "$B" "m3-$be" 2>"$TG_ROOT/err" || sed 's/^/# /' "$TG_ROOT/err"
  tg delete --force "m3-$be" 2>/dev/null
  check "$be: a replaced config.json is the user's new original" cmp -s "$TG_ROOT/user2.json" "$B/config.json.orig"
  check_eq "$be: the replaced config's annotation reached the effective config" edited \
    "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["annotations"]["example.com/owner"])' "$B/config.json" 2>&1)"
  # passthrough after hardened on the same bundle: the user's bytes again.
  write_config allow_passthrough=true 'profile="passthrough"'
  tg --runtime "$be" create --bundle "$B" "m4-$be" 2>"$TG_ROOT/err" || sed 's/^/# /' "$TG_ROOT/err"
  check "$be: passthrough after hardened: the user's bytes run" cmp -s "$TG_ROOT/user2.json" "$TG_ROOT/m4-$be/config.json"
  tg delete --force "m4-$be" 2>/dev/null
done
write_config
