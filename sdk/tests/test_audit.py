"""The SDK's reading of an audit log: anomalies count in budget_used
(docs/policy.md, "Anomaly limits"), the last run's only."""
from tollgate_sdk import AnomalyDetected
from tollgate_sdk import _audit as audit


def test_anomalies_of_the_last_run_count() -> None:
    records = [
        {"event": "open"},
        {"event": "anomaly", "kind": "calls_per_second"},  # an earlier run
        {"event": "open"},
        {"event": "call", "call": "a", "tool": "echo", "decision": "deny", "outcome": "denied"},
        {"event": "anomaly", "call": "a", "kind": "denials_in_a_row", "action": "stop"},
        {"event": "call", "call": "b", "tool": "echo", "decision": "deny", "outcome": "anomaly"},
    ]
    calls = audit.calls_of_last_run(records)
    used = audit.budget_used(calls, {"tools": {"echo": {"cost": 1}}}, records)
    assert used["anomalies"] == 1
    assert used["calls"] == 2
    assert [c.outcome for c in calls] == ["denied", "anomaly"]
    assert isinstance(calls[1].error(), AnomalyDetected)


def test_the_stop_names_its_limit() -> None:
    records = [
        {"event": "open"},
        {"event": "anomaly", "call": "z", "kind": "result_bytes", "action": "stop"},  # earlier run
        {"event": "open"},
        {"event": "anomaly", "call": "a", "kind": "calls_per_second", "action": "log"},
        {"event": "anomaly", "call": "b", "kind": "denials_in_window", "action": "stop",
         "reason": "10 calls refused among the last 20 (denials_in_window: 10 of 20 calls, action stop)"},
        {"event": "call", "call": "c", "tool": "echo", "decision": "deny", "outcome": "anomaly",
         "message": "an anomaly stopped the run: 10 calls refused among the last 20 "
                    "(denials_in_window: 10 of 20 calls, action stop)"},
    ]
    stop = audit.anomaly_stop_of_last_run(records)
    assert stop is not None and (stop["call"], stop["kind"]) == ("b", "denials_in_window")
    assert audit.anomaly_stop_of_last_run(records[:4]) is None
    err = audit.calls_of_last_run(records)[0].error()
    assert isinstance(err, AnomalyDetected) and err.limit == "denials_in_window"


def test_without_records_none() -> None:
    assert audit.budget_used([], {})["anomalies"] == 0


def test_a_torn_last_line_keeps_what_is_before(tmp_path: object) -> None:
    import os
    path = os.path.join(str(tmp_path), "log.jsonl")
    with open(path, "w") as f:
        f.write('{"event": "open"}\n["not a record"]\n{"event": "call", "call": "a", "tool": "t"}\n{"event": "ca')
    records = audit.read_records(path)
    assert [r["event"] for r in records] == ["open", "call"]
    assert audit.read_records(path + ".missing") == []
