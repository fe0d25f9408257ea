"""A studio on a small graph and the instant scripted model, without a server process."""

from __future__ import annotations

from pathlib import Path

import pytest

from cgraph.serve.options import ServeOptions
from cgraph.serve.service import Service
from cgraph.studio.workspace import Workspace
from tests.conftest import FIXTURES

TALK = (FIXTURES / "serve" / "graphs" / "talk.yaml").read_text()
SCRIPT = "talk: {exit: stay, reason: stays, reply: ok}\n"


@pytest.fixture
def graph_file(tmp_path: Path) -> Path:
    (tmp_path / "script.yaml").write_text(SCRIPT)
    file = tmp_path / "talk.yaml"
    file.write_text(TALK)
    return file


@pytest.fixture
def workspace(graph_file: Path) -> Workspace:
    folder = graph_file.parent
    options = ServeOptions(
        graphs=(str(graph_file),),
        store=str(folder / "store"),
        memory="off",
        model=f"scripted:{folder / 'script.yaml'}",
    )
    return Workspace(Service(options, served={}), options.graphs)
