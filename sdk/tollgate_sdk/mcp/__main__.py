import sys

try:
    import mcp  # noqa: F401  (the official MCP SDK, pinned in sdk/requirements.lock)
except ImportError:
    sys.exit("tollgate mcp: the Python package `mcp` is missing for %s: run `make deps` (it makes the "
             "project's .venv, which `tollgate mcp` uses), or set TOLLGATE_PYTHON to a Python that "
             "has it (pip install './sdk[mcp]')" % sys.executable)

from ._server import main  # noqa: E402

sys.exit(main())
