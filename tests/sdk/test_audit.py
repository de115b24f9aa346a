"""The SDK's reading of an audit log: anomalies count in budget_used
(docs/policy.md, "Anomaly limits"), the last run's only."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sdk"))
from tollgate_sdk import _audit as audit  # noqa: E402


class BudgetUsed(unittest.TestCase):
    def test_anomalies_of_the_last_run_count(self):
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
        self.assertEqual(used["anomalies"], 1)
        self.assertEqual(used["calls"], 2)
        self.assertEqual([c.outcome for c in calls], ["denied", "anomaly"])
        self.assertEqual(type(calls[1].error()).__name__, "AnomalyDetected")

    def test_the_stop_names_its_limit(self):
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
        self.assertEqual((stop["call"], stop["kind"]), ("b", "denials_in_window"))
        self.assertIsNone(audit.anomaly_stop_of_last_run(records[:4]))
        err = audit.calls_of_last_run(records)[0].error()
        self.assertEqual(err.limit, "denials_in_window")

    def test_without_records_none(self):
        self.assertEqual(audit.budget_used([], {})["anomalies"], 0)


if __name__ == "__main__":
    unittest.main()
