#!/usr/bin/env python3
"""Assert every line of tollgate-probe's report against the documented
profile (docs/hardening.md, "What the probe sees").

usage: probe_expect.py BACKEND PROFILE REPORT.json [LABEL]
Prints one "ok - ..." or "FAIL - ..." line per key, plus one for the key
set itself, so a key the probe adds without an expectation fails.
"""
import json
import sys

backend, profile, path = sys.argv[1:4]
label = sys.argv[4] if len(sys.argv) > 4 else f"{backend}/{profile}"

ZERO = "0000000000000000"
NOT_READABLE = {"empty", "ENOENT", "EACCES", "EPERM"}

# The hardened profile as seen from inside, identical under both backends
# except where gVisor differs (commented).
hardened = {
    "cap_inh": ZERO, "cap_prm": ZERO, "cap_eff": ZERO, "cap_bnd": ZERO,
    # gVisor's /proc/self/status has no CapAmb or NoNewPrivs line.
    "cap_amb": ZERO if backend == "runc" else "missing",
    "no_new_privs": "1" if backend == "runc" else "missing",
    "seccomp": "2",
    "uid": 65534, "gid": 65534,
    # Linux reports the read-only mount; gVisor checks permissions first.
    "write_root": "EROFS" if backend == "runc" else "EACCES",
    "write_tmp": "ok",
    "write_proc_sys": "EACCES",
    # No route: Linux says the network is unreachable, gVisor's empty
    # stack that the host is.
    "socket_external": "ENETUNREACH" if backend == "runc" else "EHOSTUNREACH",
    "socket_netlink": "EPERM",
    "mount": "EPERM", "unshare_user": "EPERM", "unshare_mount": "EPERM", "unshare_net": "EPERM",
    "ptrace": "EPERM", "init_module": "EPERM", "bpf": "EPERM", "keyctl": "EPERM",
    "userfaultfd": "EPERM", "chroot": "EPERM", "setuid_root": "EPERM", "mknod": "EPERM",
    # FIFOs stay possible (seccomp allows mknod for S_IFIFO only).
    "mkfifo": "ok",
    # Threads work: clone3 answers ENOSYS, so glibc falls back to clone.
    "thread": "ok",
    "dev_mem": "ENOENT",
    "interfaces": ["lo"],
    "rlimit_nofile": [1024, 1024],
    # runsc: the process limit is applied inside the sandbox, at half of
    # the profile's pids (see docs/hardening.md).
    "rlimit_nproc": [512, 512] if backend == "runc" else [128, 128],
    "rlimit_core": [0, 0],
}
masked = ["masked_proc_kcore", "masked_proc_keys", "masked_proc_sysrq_trigger", "masked_proc_timer_list",
          "masked_proc_sched_debug", "masked_sys_firmware", "masked_proc_acpi", "masked_proc_scsi"]

try:
    got = json.load(open(path))
except Exception as e:  # noqa: BLE001 - report, do not crash the runner
    print(f"FAIL - {label}: probe output is not JSON ({e}): {open(path).read()[:300]!r}")
    sys.exit(0)

keys = set(hardened) | set(masked)
if set(got) == keys:
    print(f"ok - {label}: probe reports exactly the documented keys")
else:
    print(f"FAIL - {label}: keys differ: missing {sorted(keys - set(got))}, unexpected {sorted(set(got) - keys)}")


def check(name, ok, want):
    if ok:
        print(f"ok - {label}: {name} = {got.get(name)!r}")
    else:
        print(f"FAIL - {label}: {name}: want {want}, got {got.get(name)!r}")


if profile == "hardened":
    for k, v in hardened.items():
        check(k, got.get(k) == v, repr(v))
    for k in masked:
        check(k, got.get(k) in NOT_READABLE, "not readable")
elif profile == "passthrough":
    # No hardening: the config runs as `runc spec` wrote it.  Every line is
    # still asserted, as "what passthrough gives that hardened does not".
    check("uid", got.get("uid") == 0, "0 (root, as runc spec says)")
    check("gid", got.get("gid") == 0, "0")
    check("cap_eff", got.get("cap_eff") not in (ZERO, None), "runc spec's capabilities")
    check("cap_bnd", got.get("cap_bnd") not in (ZERO, None), "runc spec's capabilities")
    check("seccomp", got.get("seccomp") == "0", "'0' (no filter)")
    check("socket_netlink", got.get("socket_netlink") == "ok", "'ok' (no seccomp)")
    check("ptrace", got.get("ptrace") == "ok", "'ok' (no seccomp)")
    check("rlimit_nproc", got.get("rlimit_nproc") != hardened["rlimit_nproc"], "not the profile's")
    if backend == "runc":
        check("write_tmp", got.get("write_tmp") != "ok", "no /tmp tmpfs: the read-only root refuses")
    else:
        # runsc mounts a tmpfs at /tmp by itself when the config has none.
        check("write_tmp", got.get("write_tmp") == "ok", "'ok' (runsc's own /tmp tmpfs)")
    check("interfaces", got.get("interfaces") == ["lo"], "['lo'] (runc spec has its own netns; runsc --network=none)")
    # What the kernel or gVisor still refuses without a seccomp filter or
    # capabilities: asserted only to differ from nothing, i.e. present.
    for k in sorted(keys - {"uid", "gid", "cap_eff", "cap_bnd", "seccomp", "socket_netlink", "ptrace",
                            "rlimit_nproc", "write_tmp", "interfaces"}):
        check(k, k in got, "present")
    denied_h = sum(1 for k, v in hardened.items() if v == "EPERM")
    denied_p = sum(1 for k in hardened if got.get(k) == "EPERM")
    check("denials", denied_p < denied_h, f"fewer EPERM lines than hardened's {denied_h} (got {denied_p})")
else:
    print(f"FAIL - {label}: no expectations for profile {profile}")
