"""`Sessions.prepare`: what a session's first turn would load, loaded ahead (a server does
it before its first request). Each case runs in a fresh interpreter, where nothing else
has loaded it yet."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cgraph.errors import ConfigError
from cgraph.session import Sessions
from tests.commands import ran
from tests.serving import GRAPHS

TALK = GRAPHS / "talk.yaml"

LITELLM = f"""
import json, sys
from cgraph.backends.llm.negotiation import detected
from cgraph.session import Sessions
sessions = Sessions(model="openai/any", api_base="http://127.0.0.1:9/v1")
before = "litellm" in sys.modules
sessions.prepare({str(TALK)!r})
print(json.dumps([before, "litellm" in sys.modules, detected.cache_info().currsize,
                  "litellm.proxy._types" in sys.modules]))
"""

OFFLINE = f"""
import json
from cgraph.backends.embed import shared_embedder
from cgraph.backends.offline.warming import first_turn_texts
from cgraph.session import Sessions
from cgraph.spec.load import load_graph
graph = load_graph({str(TALK)!r})
Sessions().prepare(graph)
embedder = shared_embedder("")
ready, computed = embedder.ready, embedder.computed
embedder.embed(first_turn_texts(graph))
print(json.dumps([ready, embedder.computed - computed]))
"""


def _ran(script: str) -> list[object]:
    done = ran([sys.executable, "-c", script])
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_a_provider_model_is_imported_checked_and_its_modes_found_ahead() -> None:
    before, imported, modes, first_call = _ran(LITELLM)  # first_call: a module of its first call
    assert (before, imported, modes, first_call) == (False, True, 1, True)


def test_the_offline_chooser_loads_its_model_and_embeds_the_first_turns_texts_ahead() -> None:
    ready, computed_after = _ran(OFFLINE)
    assert ready is True and computed_after == 0


def test_an_embedding_model_that_cannot_load_is_said_by_prepare(tmp_path: Path) -> None:
    graph = tmp_path / "talk.yaml"
    graph.write_text(TALK.read_text() + "embedding_model: no-such-embedder-package\n")
    with pytest.raises(ConfigError, match="the embedding model could not be loaded: "):
        Sessions().prepare(graph)
