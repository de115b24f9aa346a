"""Python tools for tests/integration/test_mcp.sh: served by the SDK through `tollgate mcp --tools`."""
from tollgate_sdk import tool


@tool
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b
