"""Python tools for tests/integration/test_mcp_py.sh (`tollgate mcp --tools`)."""
from tollgate_sdk import tool


@tool
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


@tool
def find_orders(customer: str, region: str | None = None, reason: str = "") -> dict:
    """Orders of a customer."""
    return {"customer": customer, "region": region, "reason": reason}
