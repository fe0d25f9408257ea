"""Sentence embedders by name, beside the models, stores and memories (`EMBEDDERS`; an
unknown name lists the valid ones). The embedder a graph's offline chooser and memory
share is still one per process and model (`cgraph.backends.embed.shared_embedder`)."""

from __future__ import annotations

from collections.abc import Callable

from cgraph.backends.embed import Embedder, LocalEmbedder
from cgraph.errors import ConfigError

EMBEDDERS: dict[str, Callable[[], Embedder]] = {"minilm": LocalEmbedder}
"""Embedding backends by name."""


def make_embedder(name: str) -> Embedder:
    """A new embedder of the named backend; an unknown name lists the valid ones."""
    try:
        factory = EMBEDDERS[name]
    except KeyError:
        valid = ", ".join(sorted(EMBEDDERS))
        raise ConfigError(f"unknown embedder {name!r}; valid embedders are: {valid}") from None
    return factory()
