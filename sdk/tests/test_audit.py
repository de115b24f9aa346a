"""The SDK's reading of an audit log: anomalies count in budget_used
(docs/policy.md, "Anomaly limits"), the last run's only."""
import unittest

from tollgate_sdk import _audit as audit


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

    def test_without_records_none(self):
        self.assertEqual(audit.budget_used([], {})["anomalies"], 0)


if __name__ == "__main__":
    unittest.main()
