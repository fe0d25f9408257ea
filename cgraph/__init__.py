"""cgraph: context graphs in YAML, linted and run as LLM conversations.

import cgraph
graph = cgraph.load_graph("graphs/medical_checkin.yaml")
session = cgraph.Sessions(".cgraph", model="semantic").start(graph)
print(session.send("Hi, I'm ready").reply)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cgraph.errors import CgraphError, GraphError
from cgraph.version import __version__ as __version__

__all__ = ["CgraphError", "GraphError", "Session", "Sessions", "load_graph"]

if TYPE_CHECKING:
    from cgraph.session import Session, Sessions
    from cgraph.spec.load import load_graph


def __getattr__(name: str) -> Any:
    # Imported on first use, so `cgraph --help` builds no models and loads no runtime.
    if name in ("Session", "Sessions"):
        from cgraph import session

        return getattr(session, name)
    if name == "load_graph":
        from cgraph.spec.load import load_graph

        return load_graph
    raise AttributeError(name)
