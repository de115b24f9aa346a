#!/usr/bin/env python3
"""Print the orders demo's account of one run, and judge it.

Usage: report.py --work DIR --id ID --runtime R --tollgate CMD... [--interactive]

Reads what the run left in DIR (program output, the effective config.json,
the audit log, the refund ledger) and prints: backend, profile and network;
the program's output; each tool call and its decision; the two refunds; the
budget used; and `tollgate audit verify` on the log.  Exits 0 only when the
run did what the demo promises: EU total 1218.5, the small refund executed
exactly once, the large one not executed (unless --interactive and a person
approved it), and an audit log that verifies.
"""
import argparse
import json
import os
import re
import subprocess
import sys

from auditlog import calls_in, may_have_run, read_audit

SMALL = ("A-1003", 25.0)
LARGE = ("A-1004", 640.0)
TOTAL = "1218.5"


def say(text=""):
    print(text, flush=True)


def fmt(number):
    """1.0 -> "1", 2.5 -> "2.5"."""
    return "%g" % number if isinstance(number, (int, float)) else str(number)


def short(args):
    return json.dumps(args or {}, separators=(",", ":"), sort_keys=True)


def describe_confinement(config, runtime):
    """What the effective config.json (after tollgate's hardening) grants."""
    proc = config.get("process", {})
    caps = proc.get("capabilities", {}) or {}
    ncaps = len(set().union(*[set(v or []) for v in caps.values()])) if caps else 0
    user = proc.get("user", {}).get("uid", 0)
    seccomp = config.get("linux", {}).get("seccomp") or {}
    allowed = sum(len(s.get("names", [])) for s in seccomp.get("syscalls", [])
                  if s.get("action") == "SCMP_ACT_ALLOW")
    ro = config.get("root", {}).get("readonly", False)
    annotations = config.get("annotations", {}) or {}
    profile = (annotations.get("dev.tollgate.profile-applied")
               or annotations.get("dev.tollgate.profile") or "hardened (the default)")
    namespaces = [n.get("type") for n in config.get("linux", {}).get("namespaces", [])
                  if not n.get("path")]
    if runtime == "runsc":
        network = "none (runsc --network=none: no interface but loopback inside gVisor)"
    elif "network" in namespaces:
        network = "none (a new network namespace holding only lo, checked over rtnetlink)"
    else:
        network = "NOT ISOLATED (no new network namespace)"
    return profile, ("uid %d, %d capabilities, %s root, seccomp %s with %d syscalls allowed"
                     % (user, ncaps, "read-only" if ro else "WRITABLE",
                        seccomp.get("defaultAction", "NONE"), allowed)), network


def describe_condition(cond):
    if "all" in cond:
        return " and ".join(describe_condition(c) for c in cond["all"])
    if "any" in cond:
        return "(" + " or ".join(describe_condition(c) for c in cond["any"]) + ")"
    if cond.get("op") == "exists":
        return "%s given" % cond.get("arg")
    return "%s %s %s" % (cond.get("arg"), cond.get("op"), json.dumps(cond.get("value")))


def describe_policy(policy):
    """One line per tool, from the policy itself, so the account cannot
    drift from what was enforced."""
    lines = []
    for name, spec in policy.get("tools", {}).items():
        rules = []
        for r in spec.get("rules", []):
            effect = r.get("effect", "?")
            rules.append("%s if %s" % (effect, describe_condition(r["if"])) if "if" in r
                         else ("otherwise " + effect if rules else effect))
        lines.append("%s%s: %s" % (name, " (irreversible)" if spec.get("irreversible") else "",
                                    "; ".join(rules) or "deny"))
    return lines


def backend_version(runtime):
    try:
        out = subprocess.run([runtime, "--version"], capture_output=True, text=True, timeout=10).stdout
        return out.split("\n")[0].strip()
    except OSError:
        return "not found"


def runsc_platform(tg, a):
    """The --platform tollgate gives this runsc (systrap on 20240729,
    ptrace on 20221219), as `tollgate version` prints it."""
    try:
        out = subprocess.run(tg + ["--config", a.config, "--runtime", a.runtime, "version"],
                             capture_output=True, text=True, timeout=10).stdout
    except OSError:
        return "unknown"
    for line in out.splitlines():
        if line.startswith("backend flags:"):
            for flag in line.split()[2:]:
                if flag.startswith("--platform="):
                    return flag.split("=", 1)[1]
    return "unknown"


def was_parked(c):
    """An approve-effect call is decided by a hook, a person or the
    timeout; a policy allow/deny has approver "policy"."""
    who = str(c.get("approver") or "")
    return who.startswith(("hook:", "uid:")) or who == "timeout"


def decision_text(c):
    d = c["decision"] or "?"
    reason = c.get("reason")
    if was_parked(c):
        who = str(c["approver"]).replace("hook:", "the hook ").replace("uid:", "uid ")
        verdict = {"allow": "approved", "deny": "denied"}.get(d, d)
        # The gate appends who decided to the rule's reason; we say it apart.
        rule = re.sub(r" \((the approval hook|a person|the approval timeout)[^)]*\)$", "", reason or "")
        return "approve (%s) -> parked -> %s by %s" % (rule, verdict, who)
    return d + (" (%s)" % reason if reason else "")


def outcome_text(c):
    o = c["outcome"]
    if o is None:
        return "intent written, no outcome" if c["intent"] else "not run"
    if o == "ok":
        return "ran" + (" (intent logged first)" if c["intent"] else "")
    return "not run (%s)" % o


def args_text(args):
    """The arguments, without free text that would only widen the table."""
    return short({k: v for k, v in (args or {}).items() if k != "reason"})


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--work", required=True)
    p.add_argument("--audit-dir", required=True)
    p.add_argument("--id", required=True)
    p.add_argument("--runtime", required=True)
    p.add_argument("--root", required=True)
    p.add_argument("--config", required=True, help="the host config the run used")
    p.add_argument("--status", type=int, required=True, help="tollgate run's exit status")
    p.add_argument("--interactive", action="store_true")
    p.add_argument("--tollgate", nargs=argparse.REMAINDER, required=True)
    a = p.parse_args()
    tg = a.tollgate
    work = a.work

    with open(os.path.join(work, "policy.json"), encoding="utf-8") as f:
        policy = json.load(f)
    try:
        with open(os.path.join(work, "bundle", "config.json"), encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, ValueError):
        config = {}
    audit_log = os.path.join(a.audit_dir, a.id + ".jsonl")
    records = read_audit(audit_log)
    calls = calls_in(records)
    with open(os.path.join(work, "stdout"), encoding="utf-8", errors="replace") as f:
        out = f.read()
    with open(os.path.join(work, "stderr"), encoding="utf-8", errors="replace") as f:
        err = f.read()
    ledger = []
    try:
        with open(os.path.join(work, "ledger", "refunds.jsonl"), encoding="utf-8") as f:
            ledger = [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        pass

    profile, confinement, network = describe_confinement(config, a.runtime)
    budgets = policy.get("budgets", {})
    say("backend   %s (%s)" % ({"runsc": "runsc, gVisor on the %s platform" % runsc_platform(tg, a),
                               "runc": "runc"}[a.runtime],
                              backend_version(a.runtime)))
    say("profile   %s: %s" % (profile, confinement))
    say("network   %s" % network)
    for n, line in enumerate(describe_policy(policy)):
        say("%s%s" % ("policy    " if n == 0 else "          ", line))
    approval = policy.get("approval", {})
    say("approval  %s; unanswered after %ss: denied"
        % ("hook %s (the demo's own: it denies everything)" % os.path.basename(approval["hook"])
           if approval.get("hook") else "a person, with tollgate approve|deny",
           approval.get("timeout", 60)))
    say("budget    %s tool calls, cost %s, %s irreversible"
        % (budgets.get("max_tool_calls"), budgets.get("max_cost"), budgets.get("max_irreversible")))
    say()
    say("the program (program.py, mounted read-only at /app; python3 in the container), exit status %d:"
        % a.status)
    for line in out.rstrip("\n").split("\n"):
        say("  | " + line)
    if a.status != 0 and err.strip():
        for line in err.rstrip("\n").split("\n")[-10:]:
            say("  ! " + line)
    say()

    say("tool calls, from the audit log:")
    for n, c in enumerate(calls, 1):
        say("  %d. %-12s %-36s %s; %s" % (n, c["tool"], args_text(c["args"]), decision_text(c),
                                          outcome_text(c)))
    say()

    def refund_calls(order_id):
        return [c for c in calls if c["tool"] == "issue_refund"
                and (c["args"] or {}).get("order_id") == order_id]

    def ledger_for(order_id):
        return [e for e in ledger if e.get("order_id") == order_id]

    small, large = refund_calls(SMALL[0]), refund_calls(LARGE[0])
    small_paid, large_paid = ledger_for(SMALL[0]), ledger_for(LARGE[0])
    def story(cs, paid):
        if not cs:
            return "never asked for"
        c = cs[0]
        if was_parked(c):
            who = str(c["approver"])
            by = {"timeout": "nobody answered in time, so it was denied"}.get(who) or (
                "the demo's hook denied it" if who.startswith("hook:") and c["decision"] == "deny"
                else "%s by %s" % ("approved" if c["decision"] == "allow" else "denied", who))
            text = "parked for approval; %s" % by
        else:
            text = "%s by policy" % ("allowed" if c["decision"] == "allow" else c["decision"])
        return "%s; executed %d time%s (refund ledger%s)" % (
            text, len(paid), "" if len(paid) == 1 else "s",
            ": " + ", ".join(e["refund_id"] for e in paid) if paid else "")

    say("small refund  %s %.1f: %s" % (SMALL[0], SMALL[1], story(small, small_paid)))
    say("large refund  %s %.1f: %s" % (LARGE[0], LARGE[1], story(large, large_paid)))
    if large and was_parked(large[0]) and not a.interactive:
        say("              a person would have approved it, while it waited, with:")
        say("                %s approve %s %s" % (" ".join(tg), a.id, large[0]["call"]))
    # The budget as tollgate itself reports it: `tollgate calls` asks the
    # live gate, or once the container is gone rebuilds it from the log.
    calls_cmd = tg + ["--config", a.config, "calls", a.id, "--format", "json"]
    got = subprocess.run(calls_cmd, capture_output=True, text=True)
    try:
        budget = json.loads(got.stdout)["budget"]

        def used(k):
            b = budget.get(k) or {}
            return "%s of %s" % (fmt(b.get("used")), fmt(b.get("max")) if b.get("max") is not None
                                 else "unlimited")
        say("budget used   %s tool calls, cost %s, %s irreversible (tollgate calls)"
            % (used("calls"), used("cost"), used("irreversible")))
    except (ValueError, KeyError, TypeError):
        say("budget used   tollgate calls failed: %s" % (got.stderr.strip() or got.stdout.strip()))
    verify = subprocess.run(tg + ["audit", "verify", audit_log], capture_output=True, text=True)
    verdict = (verify.stdout + verify.stderr).strip().replace(audit_log + ": ", "").replace("\n", "; ")
    say("audit         tollgate audit verify: %s (exit %d)" % (verdict, verify.returncode))
    say("              log: %s" % audit_log)
    say()

    problems = []
    m = re.search(r"EU total: ([0-9.]+)", out)
    if not m or m.group(1) != TOTAL:
        problems.append("EU total is %s, not %s" % (m.group(1) if m else "missing", TOTAL))
    if len(large_paid) > 1:
        problems.append("the large refund was executed %d times" % len(large_paid))
    if len(small_paid) != 1:
        problems.append("the small refund was executed %d times, not once" % len(small_paid))
    if not a.interactive and large_paid:
        problems.append("the large refund was executed although the hook denied it")
    if not large:
        problems.append("the large refund never reached tollgate")
    elif not was_parked(large[0]):
        problems.append("the large refund was not parked for approval")
    elif not a.interactive and may_have_run(large[0]):
        problems.append("the audit log says the large refund ran")
    if a.status != 0:
        problems.append("tollgate run exited %d" % a.status)
    if verify.returncode != 0:
        problems.append("the audit log does not verify")
    if problems:
        say("demo FAILED: " + "; ".join(problems))
        return 1
    say("demo passed: EU total %s; small refund executed once; large refund %s; audit log verifies."
        % (TOTAL, "executed once, approved by a person" if large_paid else "not executed"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
