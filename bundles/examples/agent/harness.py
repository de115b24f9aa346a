#!/usr/bin/env python3
"""A reference agent harness: how an agent framework drives tollgate.

The loop every code-acting agent has, with tollgate as the executor:

  1. the model writes a program;
  2. the harness puts it in an OCI bundle and runs it with
     `tollgate run --policy POLICY`, capturing stdout, stderr and the exit
     status;
  3. on failure it feeds the tail of stderr back to the model and tries
     again, a bounded number of times (--retries, default 1).

The model here is scripted (model/attempt1.py has a bug, model/attempt2.py
is the fix), because no model is reachable offline.  Swap ScriptedModel for
a real client and nothing else changes.

Budgets span attempts.  tollgate's budgets are per container run, and each
attempt is a new container with its own audit log.  Before each attempt the
harness reads the audit logs of the earlier ones and writes that attempt's
policy with:
  * every budget lowered by what earlier attempts used: max_tool_calls by
    every call attempt, denied ones too (as tollgate counts them), and
    likewise max_cost, max_irreversible and each tool's max_calls;
  * a deny rule, first in the tool's rules, for each irreversible call that
    earlier attempts executed, or may have executed: an `intent` record whose
    outcome is missing (the sidecar died mid-call), a timeout or a stopped
    container leaves the refund possibly made, so it counts as done; only
    "ok" and "tool_failed" (the tool said it did nothing) are certain.
So a refund made by a failed attempt is never made again, however the model
rewrites the program: it is the policy on the host that refuses it, and the
refusal, with the earlier audit record it points at, lands in the new log.

Standard library only.  Usage: harness.py --help
"""
import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "orders"))
from auditlog import calls_in, may_have_run, read_audit  # noqa: E402

DEFAULT_MAX_TOOL_CALLS = 50  # tollgate's hard cap when a policy sets none
STDERR_TAIL_LINES = 15


class ScriptedModel:
    """Stands in for the LLM: returns model/attempt1.py, then attempt2.py...
    It keeps the feedback it was given, as a real model's context would."""

    def __init__(self, directory):
        self.programs = sorted(
            os.path.join(directory, name) for name in os.listdir(directory)
            if name.startswith("attempt") and name.endswith(".py"))
        self.feedback = []

    def write_program(self, task, feedback=None):
        if feedback is not None:
            self.feedback.append(feedback)
        turn = min(len(self.feedback), len(self.programs) - 1)
        with open(self.programs[turn], encoding="utf-8") as f:
            return f.read()


# ---- budgets across attempts -----------------------------------------------

class Usage:
    """What earlier attempts used, read back from their audit logs."""

    def __init__(self, base_policy):
        self.base = base_policy
        self.calls = 0
        self.cost = 0
        self.irreversible = 0
        self.per_tool = {}
        self.done = []  # (tool, args, audit file, seq) of irreversible calls that ran

    def add_log(self, path):
        tools = self.base.get("tools", {})
        for c in calls_in(read_audit(path)):
            self.calls += 1
            self.per_tool[c["tool"]] = self.per_tool.get(c["tool"], 0) + 1
            spec = tools.get(c["tool"] or "", {})
            if may_have_run(c):
                self.cost += spec.get("cost", 0)
                if spec.get("irreversible"):
                    self.irreversible += 1
                    self.done.append((c["tool"], c["args"] or {}, path, c["seq"]))

    def policy(self, once_keys):
        """The base policy with every budget lowered by what was used, and
        irreversible calls already made turned into denials.  None when a
        budget is already spent (no attempt can be made at all)."""
        p = copy.deepcopy(self.base)
        b = p.setdefault("budgets", {})
        b["max_tool_calls"] = b.get("max_tool_calls", DEFAULT_MAX_TOOL_CALLS) - self.calls
        if b["max_tool_calls"] <= 0:
            return None
        if "max_cost" in b:
            b["max_cost"] = max(b["max_cost"] - self.cost, 0)
        if "max_irreversible" in b:
            b["max_irreversible"] = max(b["max_irreversible"] - self.irreversible, 0)
        for name, spec in p.get("tools", {}).items():
            if "max_calls" in spec:
                spec["max_calls"] = max(spec["max_calls"] - self.per_tool.get(name, 0), 0)
        for tool, args, path, seq in self.done:
            spec = p["tools"].get(tool)
            if spec is None:
                continue
            keys = once_keys.get(tool) or sorted(args)
            conds = [{"arg": k, "op": "==", "value": args[k]} for k in keys if k in args]
            if not conds:
                continue
            rule = {"if": conds[0] if len(conds) == 1 else {"all": conds},
                    "effect": "deny",
                    "reason": "already done by an earlier attempt (%s, seq %s); "
                              "irreversible calls are not repeated" % (os.path.basename(path), seq)}
            spec["rules"] = [rule] + spec.get("rules", [])
        return p


# ---- running one attempt ---------------------------------------------------

def write_bundle(args, bundle, program):
    """An OCI bundle whose process runs `program` with the Python rootfs,
    starting from `tollgate spec` (the hardened profile's config)."""
    shutil.rmtree(bundle, ignore_errors=True)
    app = os.path.join(bundle, "app")
    os.makedirs(app)
    # The container runs as uid 65534: it must be able to read the program.
    os.chmod(bundle, 0o755)
    os.chmod(app, 0o755)
    with open(os.path.join(app, "program.py"), "w", encoding="utf-8") as f:
        f.write(program)
    os.chmod(os.path.join(app, "program.py"), 0o644)
    subprocess.run(tollgate(args, "spec", "--bundle", bundle, "--rootfs",
                            os.path.abspath(args.rootfs), "--args", "python3 /app/program.py"),
                   check=True, stdout=subprocess.DEVNULL)
    path = os.path.join(bundle, "config.json")
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
    proc = config.setdefault("process", {})
    proc["terminal"] = False
    env = [e for e in proc.get("env", []) if not e.startswith(("PYTHONPATH=", "PYTHONDONTWRITEBYTECODE="))]
    proc["env"] = env + ["PYTHONPATH=/run/tollgate", "PYTHONDONTWRITEBYTECODE=1"]
    config.setdefault("mounts", []).append(
        {"destination": "/app", "type": "bind", "source": app,
         "options": ["rbind", "ro", "nosuid", "nodev"]})
    with open(path, "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)


def tollgate(args, *rest):
    cmd = [args.tollgate]
    if args.root:
        cmd += ["--root", args.root]
    if args.config:
        cmd += ["--config", args.config]
    if args.runtime:
        cmd += ["--runtime", args.runtime]
    return cmd + list(rest)


def run_attempt(args, container_id, bundle, policy_path):
    """tollgate run, as a framework would call it: the container's stdout,
    stderr and exit status come back to us.  On a timeout the container is
    killed and deleted, so nothing is left behind."""
    cmd = tollgate(args, "run", "--bundle", bundle, "--policy", policy_path, container_id)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        subprocess.run(tollgate(args, "delete", "--force", container_id),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return 124, e.stdout or "", (e.stderr or "") + "\nharness: attempt timed out"


def tail(text, n):
    lines = (text or "").rstrip("\n").split("\n")
    return "\n".join(lines[-n:])


def audit_dir_of(args):
    path = args.config or "/etc/tollgate/config.json"
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f).get("audit_dir") or "/var/log/tollgate/audit"
    except FileNotFoundError:
        return "/var/log/tollgate/audit"


def main():
    p = argparse.ArgumentParser(description="Run a scripted model's programs under tollgate, "
                                            "retrying on failure with budgets that span attempts.")
    p.add_argument("--tollgate", default="tollgate", help="the tollgate binary")
    p.add_argument("--root", help="tollgate --root")
    p.add_argument("--config", help="tollgate --config (host config; its audit_dir is read)")
    p.add_argument("--runtime", help="runsc (default) or runc")
    p.add_argument("--rootfs", required=True, help="the Python rootfs (bundles/rootfs/python.sh)")
    p.add_argument("--policy", required=True, help="the policy for the whole task")
    p.add_argument("--workdir", required=True, help="where bundles and per-attempt policies go")
    p.add_argument("--model", default=os.path.join(HERE, "model"), help="directory of attemptN.py")
    p.add_argument("--retries", type=int, default=1, help="retries after the first attempt (default 1)")
    p.add_argument("--timeout", type=int, default=120, help="seconds per attempt")
    p.add_argument("--once", action="append", default=["issue_refund:order_id"],
                   metavar="TOOL:ARG[,ARG]",
                   help="arguments that identify an irreversible call (default: all of them); "
                        "the orders task refunds an order at most once: issue_refund:order_id")
    p.add_argument("--id-prefix", default="agent-%d" % os.getpid(), help="container id prefix")
    p.add_argument("--result", help="write a JSON account of the attempts here")
    args = p.parse_args()

    once_keys = {}
    for item in args.once:
        tool, _, keys = item.partition(":")
        once_keys[tool] = [k for k in keys.split(",") if k]
    with open(args.policy, encoding="utf-8") as f:
        base = json.load(f)
    policy_dir = os.path.dirname(os.path.abspath(args.policy))
    audit_dir = audit_dir_of(args)
    os.makedirs(args.workdir, exist_ok=True)

    task = "Sum the EU orders, then refund A-1003 25.0 (damaged) and A-1004 640.0 (cancelled)."
    model = ScriptedModel(args.model)
    usage = Usage(base)
    feedback = None
    attempts = []
    for n in range(1, args.retries + 2):
        program = model.write_program(task, feedback)
        policy = usage.policy(once_keys)
        if policy is None:
            print("harness: the tool-call budget is spent; no attempt %d" % n)
            break
        container_id = "%s-%d" % (args.id_prefix, n)
        # The attempt's policy sits beside the task's, so that relative tool
        # paths resolve exactly as they do for the original.
        policy_path = os.path.join(policy_dir, "policy.%s.json" % container_id)
        with open(policy_path, "w", encoding="utf-8") as f:
            json.dump(policy, f, indent=2)
        os.chmod(policy_path, 0o644)
        bundle = os.path.join(os.path.abspath(args.workdir), container_id)
        write_bundle(args, bundle, program)

        print("== attempt %d (container %s, budget: %d tool calls left)"
              % (n, container_id, policy["budgets"]["max_tool_calls"]))
        started = time.monotonic()
        status, out, err = run_attempt(args, container_id, bundle, policy_path)
        audit_log = os.path.join(audit_dir, container_id + ".jsonl")
        calls = calls_in(read_audit(audit_log))
        usage.add_log(audit_log)
        for line in out.rstrip("\n").split("\n") if out.strip() else []:
            print("   | " + line)
        print("   exit status %d after %.1fs, %d tool calls (audit log %s)"
              % (status, time.monotonic() - started, len(calls), audit_log))
        attempts.append({"attempt": n, "container": container_id, "status": status,
                         "stdout": out, "stderr_tail": tail(err, STDERR_TAIL_LINES),
                         "audit_log": audit_log, "policy": policy_path,
                         "budgets": policy["budgets"],
                         "calls": [{k: c.get(k) for k in ("tool", "args", "decision", "reason",
                                                          "outcome")}
                                   for c in calls]})
        if status == 0:
            break
        feedback = ("Your program exited with status %d. The end of its stderr:\n%s"
                    % (status, tail(err, STDERR_TAIL_LINES)))
        print("   feeding back to the model:")
        for line in tail(err, STDERR_TAIL_LINES).split("\n"):
            print("   ! " + line)

    succeeded = bool(attempts) and attempts[-1]["status"] == 0
    print("== %s after %d attempt(s); %d tool calls of %d used in all; irreversible calls made: %s"
          % ("succeeded" if succeeded else "failed", len(attempts), usage.calls,
             base.get("budgets", {}).get("max_tool_calls", DEFAULT_MAX_TOOL_CALLS),
             ", ".join("%s %s" % (t, json.dumps(a, sort_keys=True)) for t, a, _, _ in usage.done)
             or "none"))
    if args.result:
        with open(args.result, "w", encoding="utf-8") as f:
            json.dump({"succeeded": succeeded, "attempts": attempts,
                       "tool_calls_used": usage.calls,
                       "irreversible_done": [{"tool": t, "args": a, "audit_log": path, "seq": s}
                                             for t, a, path, s in usage.done],
                       "model_feedback": model.feedback}, f, indent=2)
    return 0 if succeeded else 1


if __name__ == "__main__":
    sys.exit(main())
