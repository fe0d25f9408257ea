"""The memory store of `cgraph run`: Chroma only when a memory may be read, an outbox for
what is stored before, drained into Chroma by whichever run opens it first."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cgraph.backends.memory.background import BackgroundMemory, Reading
from cgraph.backends.memory.chroma import memory_folder, open_memory
from cgraph.backends.memory.pending import Outbox
from cgraph.runtime.ports import NewMemory
from cgraph.spec.model import MemoryConfig
from tests.conftest import ROOT

ALLERGY = NewMemory("I am allergic to penicillin", "personal", "s1", "intake", 2)


def test_a_new_user_is_answered_without_chroma_and_stores_into_the_outbox(
    tmp_path: Path,
) -> None:
    code = f"""
import sys
from pathlib import Path
from cgraph.backends.memory.background import BackgroundMemory
from cgraph.runtime.ports import NewMemory
from cgraph.spec.model import MemoryConfig
memory = BackgroundMemory(MemoryConfig(), Path({str(tmp_path)!r}), user_id="ann")
assert memory.recall("ann", ["penicillin"]) == [] and memory.count("ann") == 0
stored = memory.add("ann", [NewMemory("I am allergic to penicillin", "personal")])
assert [m.text for m in stored] == ["I am allergic to penicillin"], stored
assert memory.recall("bob", ["penicillin"]) == [] and memory.list("bob") == []
print(sorted(m for m in ("chromadb", "onnxruntime") if m in sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    assert Outbox(memory_folder(tmp_path)).holds("ann")
    assert not (memory_folder(tmp_path) / "chroma.sqlite3").exists()


def test_a_waiting_memory_deleted_before_chroma_opens_is_gone(tmp_path: Path) -> None:
    memory = BackgroundMemory(MemoryConfig(), tmp_path, user_id="ann")
    kept, dropped = memory.add("ann", [ALLERGY, NewMemory("walks the dog daily", "personal")])
    assert memory.delete("ann", [dropped.id]) == 1
    waiting = Outbox(memory_folder(tmp_path)).waiting()
    assert [(m.id, m.text, m.created_at) for m in waiting["ann"]] == [
        (kept.id, kept.text, kept.created_at)
    ]
    assert not memory.opened


def test_store_off_keeps_nothing_waiting(tmp_path: Path) -> None:
    memory = BackgroundMemory(MemoryConfig(store="off"), tmp_path, user_id="ann")
    assert memory.add("ann", [ALLERGY]) == []
    assert not Outbox(memory_folder(tmp_path)).holds("ann")


@pytest.mark.slow
def test_waiting_memories_reach_chroma_with_their_ids_when_it_opens(tmp_path: Path) -> None:
    first = BackgroundMemory(MemoryConfig(), tmp_path, user_id="ann")
    stored = first.add("ann", [ALLERGY])
    again = first.add("ann", [ALLERGY])  # the same words: one memory once in Chroma
    assert not first.opened
    found = first.recall("ann", ["Which antibiotics can she not take?"])  # opens Chroma
    assert first.opened and [m.id for m in found] == [stored[0].id]
    # The later twin wins, as in a batch (Chroma keeps the time to a microsecond or so).
    assert found[0].created_at == pytest.approx(again[0].created_at, abs=1e-3)
    assert found[0].state == "intake" and found[0].turn == 2
    assert again[0].id not in [m.id for m in first.list("ann")]
    assert Outbox(memory_folder(tmp_path)).waiting() == {}


@pytest.mark.slow
def test_the_next_run_opens_chroma_at_launch_and_drains_the_outbox(tmp_path: Path) -> None:
    BackgroundMemory(MemoryConfig(), tmp_path, user_id="ann").add("ann", [ALLERGY])
    assert not BackgroundMemory(MemoryConfig(), tmp_path, user_id="bob").opened
    returning = BackgroundMemory(MemoryConfig(), tmp_path, user_id="ann")
    assert returning.opened  # she has memories: they load while the first prompt shows
    assert [m.text for m in returning.list("ann")] == [ALLERGY.text]


@pytest.mark.slow
def test_the_memory_commands_see_waiting_memories(tmp_path: Path) -> None:
    BackgroundMemory(MemoryConfig(), tmp_path, user_id="ann").add("ann", [ALLERGY])
    store = open_memory(MemoryConfig(), tmp_path)
    assert [m.text for m in store.list("ann")] == [ALLERGY.text]
    assert not Outbox(memory_folder(tmp_path)).holds("ann")


@pytest.mark.slow
def test_a_graph_that_recalls_opens_chroma_once_a_memory_waits(tmp_path: Path) -> None:
    reading = Reading(tiers=frozenset({"personal"}))
    memory = BackgroundMemory(MemoryConfig(), tmp_path, user_id="ann", reading=reading)
    assert not memory.opened
    memory.recall("ann", ["penicillin"])  # nothing stored yet: still no Chroma
    memory.add("ann", [NewMemory("we talked about the weather", "task")])
    assert memory.recall("ann", ["weather"], tiers=["personal"]) == []  # none of that tier
    assert not memory.opened
    memory.add("ann", [ALLERGY])
    assert memory.opened  # opening while the user types the next message
    assert [m.text for m in memory.list("ann", tiers=["personal"])] == [ALLERGY.text]


@pytest.mark.slow
def test_with_chroma_open_a_memory_waits_until_the_next_read(tmp_path: Path) -> None:
    memory = BackgroundMemory(MemoryConfig(), tmp_path, user_id="ann")
    memory.add("ann", [ALLERGY])
    assert [m.text for m in memory.list("ann")] == [ALLERGY.text]  # opens Chroma
    dog = NewMemory("my dog Biscuit walks with me every morning", "personal")
    memory.add("ann", [dog])
    assert Outbox(memory_folder(tmp_path)).holds("ann")  # no Chroma write in the turn
    assert [m.text for m in memory.list("ann")] == [ALLERGY.text, dog.text]
    assert not Outbox(memory_folder(tmp_path)).holds("ann")


@pytest.mark.slow
def test_at_launch_chroma_opens_for_a_memory_the_run_may_read_or_count(tmp_path: Path) -> None:
    BackgroundMemory(MemoryConfig(), tmp_path, user_id="ann").add(
        "ann", [NewMemory("we talked about the weather", "task", "s1")]
    )
    tasks = frozenset({"task"})
    other = BackgroundMemory(
        MemoryConfig(), tmp_path, user_id="ann", reading=Reading(tiers=tasks, session_id="s2")
    )
    assert not other.opened  # another session's context
    counting = Reading(tiers=tasks, session_id="s2", counts=True)
    assert BackgroundMemory(MemoryConfig(), tmp_path, user_id="ann", reading=counting).opened
    own = Reading(tiers=tasks, session_id="s1")
    assert BackgroundMemory(MemoryConfig(), tmp_path, user_id="ann", reading=own).opened


def test_a_chroma_server_is_opened_at_launch_whatever_the_run_reads(tmp_path: Path) -> None:
    server = MemoryConfig(host="127.0.0.1", port=9)  # every write goes to it: no outbox
    memory = BackgroundMemory(server, tmp_path, user_id="ann", reading=Reading())
    assert memory.opened
