#!/usr/bin/env python3
"""Stage the orders example in a work directory the tools' user can reach.

Usage: stage.py WORKDIR [--hook FILE] [--approval-timeout SECONDS]

tollgate runs exec tools as the host config's tool_uid (default 65533, an
identity no container has) with a scrubbed environment, so the
tools cannot live under a private checkout (say /root/src/tollgate) and the
refund ledger's path cannot come from an environment variable.  This copies
tools/ into WORKDIR, makes WORKDIR/ledger/ writable by that uid, copies the hook, and writes
WORKDIR/policy.json: the repo's policy.json with the ledger path and the
approval hook filled in.  The tools stay relative to the policy file, which
is how tollgate resolves an exec argv[0].  Prints the policy path.
"""
import argparse
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# tollgate's default tool_uid/tool_gid (base/hostconfig.c, docs/hardening.md).
TOOL_ID = 65533


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("workdir")
    p.add_argument("--hook", help="approval hook program, copied into WORKDIR/hooks; none: a person decides")
    p.add_argument("--approval-timeout", type=int, help="seconds before a parked call is denied")
    p.add_argument("--tool-uid", type=int, default=TOOL_ID,
                   help="the host config's tool_uid (and tool_gid), when not the default")
    a = p.parse_args()

    work = os.path.abspath(a.workdir)
    os.makedirs(work, exist_ok=True)
    os.chmod(work, 0o755)
    tools = os.path.join(work, "tools")
    shutil.rmtree(tools, ignore_errors=True)
    shutil.copytree(os.path.join(HERE, "tools"), tools,
                    ignore=shutil.ignore_patterns("__pycache__"))
    os.chmod(tools, 0o755)
    ledger_dir = os.path.join(work, "ledger")
    os.makedirs(ledger_dir, exist_ok=True)
    os.chmod(ledger_dir, 0o755)
    if os.geteuid() == 0:
        os.chown(ledger_dir, a.tool_uid, a.tool_uid)
    else:
        os.chmod(ledger_dir, 0o777)

    with open(os.path.join(HERE, "policy.json"), encoding="utf-8") as f:
        policy = json.load(f)
    argv = policy["tools"]["issue_refund"]["backend"]["argv"]
    argv[argv.index("--ledger") + 1] = os.path.join(ledger_dir, "refunds.jsonl")
    approval = policy.setdefault("approval", {})
    if a.hook:
        # Copied beside the tools, for the same reason: whoever runs it must
        # be able to reach it.
        hooks = os.path.join(work, "hooks")
        os.makedirs(hooks, exist_ok=True)
        os.chmod(hooks, 0o755)
        hook = os.path.join(hooks, os.path.basename(a.hook))
        shutil.copy2(a.hook, hook)
        os.chmod(hook, 0o755)
        approval["hook"] = hook
    if a.approval_timeout:
        approval["timeout"] = a.approval_timeout
    out = os.path.join(work, "policy.json")
    with open(out, "w", encoding="utf-8") as f:
        json.dump(policy, f, indent=2)
        f.write("\n")
    os.chmod(out, 0o644)
    print(out)


if __name__ == "__main__":
    sys.exit(main())
