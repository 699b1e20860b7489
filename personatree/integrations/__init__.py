"""Adapters that plug personatree into agent frameworks (optional extras).

* :mod:`personatree.integrations.langgraph` — :class:`PersonaTreeStore`, a LangGraph
  ``BaseStore`` (``pip install 'personatree[langgraph]'``).

The MCP server lives in :mod:`personatree.mcp_server`. Nothing here is imported by
``import personatree``, so the extras stay optional.
"""

__all__: list[str] = []
