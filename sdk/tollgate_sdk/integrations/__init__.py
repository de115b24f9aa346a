"""Adapters that run agent frameworks' model-written code in tollgate.

Each submodule adapts one framework and imports it; this package imports
none of them, so `import tollgate_sdk.integrations` needs no framework:

- tollgate_sdk.integrations.smolagents      (extra: smolagents)
- tollgate_sdk.integrations.openai_agents   (extra: openai_agents)
- tollgate_sdk.integrations.langgraph       (extra: langgraph)
- tollgate_sdk.integrations.pydantic_ai     (extra: pydantic_ai)
- tollgate_sdk.integrations.promptise       (extra: promptise)

`pip install ./sdk[integrations]` installs every framework.  See
docs/integrations.md.
"""
from __future__ import annotations

__all__: list[str] = []
