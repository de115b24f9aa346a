"""Run the unittest files left in tests/sdk (test_mcp_*.py, the MCP
server's; the SDK's own unit tests are sdk/tests, pytest, make sdk-unit)
and print one `ok - sdk unit: NAME` / `FAIL - sdk unit: NAME` line per
test, for tests/integration/test_sdk.sh and its runner's count."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


class Lines(unittest.TextTestResult):
    def _name(self, test):
        return "sdk unit: %s" % test.id().split(".", 1)[-1]

    def addSuccess(self, test):
        super().addSuccess(test)
        print("ok - " + self._name(test), flush=True)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        print("FAIL - %s: %s" % (self._name(test), self._exc_info_to_string(err, test).strip().splitlines()[-1]),
              flush=True)

    def addError(self, test, err):
        super().addError(test, err)
        print("FAIL - %s: %s" % (self._name(test), self._exc_info_to_string(err, test).strip().splitlines()[-1]),
              flush=True)


suite = unittest.defaultTestLoader.discover(HERE, pattern="test_*.py", top_level_dir=HERE)
result = unittest.TextTestRunner(stream=open(os.devnull, "w"), resultclass=Lines).run(suite)
for test, tb in result.failures + result.errors:
    sys.stderr.write(tb)
sys.exit(0 if result.wasSuccessful() else 1)
