"""cgraph: context graphs in YAML, linted and run as LLM conversations."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cgraph.errors import CgraphError, GraphError
from cgraph.loader import load_graph

__all__ = ["CgraphError", "GraphError", "Session", "load_graph"]
__version__ = "0.1.0"

if TYPE_CHECKING:
    from cgraph.session import Session


def __getattr__(name: str) -> Any:
    # The runtime is imported on first use so `cgraph lint` stays light.
    if name == "Session":
        from cgraph.session import Session

        return Session
    raise AttributeError(name)
