"""Shared test settings: never reach the network, never phone home."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.postgres import Server, server_fixture

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parent.parent
GRAPHS = ROOT / "graphs"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


SLOW_FOLDERS = ("acceptance", "robustness", "providers")
"""Tests that run the real `cgraph` command, servers or crash campaigns: slow by nature."""


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    """`make test-fast` (`-m "not slow"`) leaves out what runs real processes and models:
    every test in the slow folders, and those marked `slow` where they are written."""
    import pytest

    for item in items:
        path = Path(str(item.fspath))
        if not path.is_relative_to(ROOT / "tests"):
            continue  # the bench's own tests (`bench/tests`)
        parts = path.relative_to(ROOT / "tests").parts
        if parts and parts[0] in SLOW_FOLDERS:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A real PostgreSQL server, one per test process (`tests/postgres.py`)."""
    yield from server_fixture(lambda: tmp_path_factory.mktemp("postgres"))


@pytest.fixture
def pg_url(postgres: Server) -> str:
    """A fresh, empty database on that server."""
    return postgres.database()
