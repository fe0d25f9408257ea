"""The wiring's name tables: every kind of store and memory by name, the unknown ones
answered with the valid forms."""

from __future__ import annotations

from pathlib import Path

import pytest

from cgraph.errors import ConfigError, StoreError
from cgraph.runtime.ports import NullMemory
from cgraph.spec.load import load_graph
from cgraph.wiring.memories import MEMORIES, memory_kind, open_memory_store
from cgraph.wiring.stores import STORES, open_store, store_kind
from tests.conftest import GRAPHS


def test_each_form_of_store_names_its_kind(tmp_path: Path) -> None:
    assert store_kind(None) == "memory"
    assert store_kind("postgresql://u@localhost/db") == "postgresql"
    assert store_kind("postgres://u@localhost/db") == "postgresql"
    assert store_kind(tmp_path) == store_kind(str(tmp_path / "a.sqlite")) == "sqlite"
    assert set(STORES) == {"memory", "postgresql", "sqlite"}


def test_a_url_no_store_serves_lists_the_valid_forms_and_creates_nothing(tmp_path: Path) -> None:
    where = tmp_path / "mysql:" / "host"
    with pytest.raises(StoreError, match=r"no store for `mysql://` URLs: .*a postgresql:// URL"):
        open_store(f"mysql://{where}")
    assert not (tmp_path / "mysql:").exists()


def test_memories_by_name_and_an_unknown_one_lists_the_valid_ones() -> None:
    graph = load_graph(GRAPHS / "medical_checkin.yaml")
    assert isinstance(open_memory_store(graph, "off", None), NullMemory)
    assert memory_kind(None) == memory_kind("chroma://localhost:8000") == "chroma"
    assert set(MEMORIES) == {"off", "chroma"}
    with pytest.raises(ConfigError, match=r"--memory redis://x: expected `off` or chroma://"):
        open_memory_store(graph, "redis://x", None)
