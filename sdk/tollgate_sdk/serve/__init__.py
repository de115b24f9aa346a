"""`tollgate serve`: a self-hosted sandbox service that the unmodified e2b
SDKs use (docs/serve.md).  Each sandbox is a hardened tollgate container
with its bridge, policy, budgets and audit log, owned by a tenant and
killed at its deadline.

    python -m tollgate_sdk.serve --listen 127.0.0.1:3000 --tenants /etc/tollgate/tenants.json
"""
from ._main import main

__all__ = ["main"]
