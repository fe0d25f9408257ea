"""Who recalls what: the task tier is one session's context, the other tiers the user's.

Real Chroma (in-process and on disk); the bag-of-words embedder of `test_chroma` where a
test is about filtering rather than meaning.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from cgraph.backends.memory.background import BackgroundMemory, Reading
from cgraph.backends.memory.chroma import ChromaMemory, memory_folder
from cgraph.backends.memory.layout import (
    DEFAULT_COLLECTION,
    collection_name,
    may_hold,
    owner_where,
)
from cgraph.backends.memory.pending import Outbox
from cgraph.runtime.ports import Memory, NewMemory
from cgraph.spec.model import MemoryConfig, Tier
from tests.unit.backends.memory.test_chroma import HashEmbedder, store

DIZZY = "Today Ann felt dizzy when she stood up"
ALLERGY = "Ann is allergic to penicillin"
MARATHON = "Ann is training for the Berlin marathon"


def told(mem: ChromaMemory, session: str, *items: tuple[str, str]) -> None:
    mem.add("ann", [NewMemory(text, tier, session) for text, tier in items])  # type: ignore[arg-type]


def seen(memories: list[Memory]) -> set[tuple[str, str, str]]:
    return {(m.text, m.tier, m.session_id) for m in memories}


def test_a_session_recalls_only_its_own_task_memories_and_all_the_users_others() -> None:
    mem = store()
    told(mem, "s1", (DIZZY, "task"), (ALLERGY, "personal"))
    told(mem, "s2", (MARATHON, "project"))
    everything = {(DIZZY, "task", "s1"), (ALLERGY, "personal", "s1"), (MARATHON, "project", "s2")}
    query = [DIZZY, ALLERGY, MARATHON]
    in_s2 = mem.recall("ann", query, top_k=10, session_id="s2")
    assert seen(in_s2) == everything - {(DIZZY, "task", "s1")}
    assert seen(mem.recall("ann", query, top_k=10, session_id="s1")) == everything
    assert mem.recall("ann", [DIZZY], tiers=["task"], session_id="s2") == []
    assert seen(mem.recall("ann", query, top_k=10)) == everything  # no session: the owner's view
    assert seen(mem.list("ann", session_id="s2")) == everything - {(DIZZY, "task", "s1")}
    assert seen(mem.list("ann", tiers=["task"], session_id="s1")) == {(DIZZY, "task", "s1")}
    assert seen(mem.list("ann")) == everything
    assert mem.count("ann") == 3  # a returning user, whichever session asks


def test_the_same_task_context_in_two_sessions_is_kept_for_each() -> None:
    mem = store()
    told(mem, "s1", (DIZZY, "task"), (ALLERGY, "personal"))
    told(mem, "s2", (DIZZY, "task"), (ALLERGY, "personal"))  # the allergy is the user's: once
    assert sorted((m.tier, m.session_id) for m in mem.list("ann")) == [
        ("personal", "s1"),
        ("task", "s1"),
        ("task", "s2"),
    ]
    for session in ("s1", "s2"):
        [got] = mem.recall("ann", [DIZZY], tiers=["task"], session_id=session)
        assert got.session_id == session


def test_a_reworded_task_memory_replaces_only_its_own_sessions() -> None:
    mem = store(duplicate_similarity=0.8)
    told(mem, "s1", ("Ann's knee hurts after 25 km", "task"))
    told(mem, "s2", ("Ann's knee hurts after 30 km", "task"))
    told(mem, "s1", ("Ann's knee hurts after 20 km", "task"))  # replaces s1's, not s2's
    assert sorted((m.session_id, m.text) for m in mem.list("ann")) == [
        ("s1", "Ann's knee hurts after 20 km"),
        ("s2", "Ann's knee hurts after 30 km"),
    ]


def test_one_batch_from_two_sessions_keeps_each_sessions_task_context() -> None:
    mem = store()
    mem.add("ann", [NewMemory(DIZZY, "task", "s1"), NewMemory(DIZZY, "task", "s2")])
    assert sorted(m.session_id for m in mem.list("ann")) == ["s1", "s2"]


def test_the_filter_joins_the_session_to_the_task_tier_only() -> None:
    owners = {"owner": {"$in": ["personal|ann", "project|ann"]}}
    task = {"$and": [{"owner": "task|ann"}, {"session_id": "s1"}]}
    assert owner_where("ann", (), "s1") == {"$or": [owners, task]}
    assert owner_where("ann", ["task"], "s1") == task
    assert owner_where("ann", ["personal", "project"], "s1") == owners
    assert owner_where("ann", ["task"]) == {"owner": {"$in": ["task|ann"]}}


def test_memories_stored_before_the_tiers_were_scoped_follow_the_new_rule(
    tmp_path: Path,
) -> None:
    """An earlier version wrote the same records (every memory carried its session id)
    and recalled task memories in every session; written here as it wrote them."""
    import chromadb
    from chromadb.config import Settings

    embedder = HashEmbedder()
    client = chromadb.PersistentClient(
        path=str(memory_folder(tmp_path)), settings=Settings(anonymized_telemetry=False)
    )
    old = client.get_or_create_collection(
        collection_name(DEFAULT_COLLECTION, "ann"),
        embedding_function=None,
        configuration={"hnsw": {"space": "cosine"}},
        metadata={"cgraph": "memories", "user_id": "ann"},
    )
    rows = [
        ("m1", DIZZY, "task", "s1"),
        ("m2", ALLERGY, "personal", "s1"),
        ("m3", MARATHON, "task", ""),
    ]
    old.add(
        ids=[r[0] for r in rows],
        embeddings=embedder.embed([r[1] for r in rows]),
        documents=[r[1] for r in rows],
        metadatas=[
            {
                "user_id": "ann",
                "session_id": session,
                "tier": tier,
                "state": "chat",
                "turn": 1,
                "created_at": 1_700_000_000.0,
                "owner": f"{tier}|ann",
            }
            for _, _, tier, session in rows
        ],
    )
    mem = ChromaMemory(memory_folder(tmp_path), embedder=embedder)
    query = [DIZZY, ALLERGY, MARATHON]
    assert {m.id for m in mem.recall("ann", query, top_k=10, session_id="s1")} == {"m1", "m2"}
    assert {m.id for m in mem.recall("ann", query, top_k=10, session_id="s2")} == {"m2"}
    # a task memory stored with no session (the library's `add` without one) is listed and
    # exported, but no session recalls it
    assert {m.id for m in mem.list("ann")} == {"m1", "m2", "m3"}


def test_memories_waiting_in_the_outbox_keep_their_session(tmp_path: Path) -> None:
    memory = BackgroundMemory(MemoryConfig(), tmp_path, user_id="ann")
    memory.add("ann", [NewMemory(DIZZY, "task", "s1"), NewMemory(ALLERGY, "personal", "s1")])
    assert Outbox(memory_folder(tmp_path)).holds("ann", ["task"])
    in_s2 = memory.recall("ann", [DIZZY, ALLERGY], top_k=5, min_score=-1.0, session_id="s2")
    assert [m.text for m in in_s2] == [ALLERGY]
    in_s1 = memory.recall("ann", [DIZZY], tiers=["task"], min_score=-1.0, session_id="s1")
    assert [m.text for m in in_s1] == [DIZZY]
    with sqlite3.connect(memory_folder(tmp_path) / "pending.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM pending").fetchone() == (0,)  # drained


def test_chromas_file_tells_which_memories_a_session_may_see_without_chromadb(
    tmp_path: Path,
) -> None:
    mem = ChromaMemory(memory_folder(tmp_path), embedder=HashEmbedder())
    told(mem, "s1", (DIZZY, "task"), (ALLERGY, "personal"))
    told(mem, "s2", (MARATHON, "project"))
    folder, name = memory_folder(tmp_path), collection_name(DEFAULT_COLLECTION, "ann")

    def may_see(tiers: list[Tier], session: str | None) -> bool:
        return may_hold(folder, name, "ann", tiers, session)

    assert may_see(["task"], "s1") and not may_see(["task"], "s2")
    assert may_see(["task"], None)  # no session: every task memory counts
    assert may_see(["personal"], "s2") and may_see([], "s3")
    assert may_see(["project"], "s3")  # the user's, seen by every session
    marathon = [m.id for m in mem.list("ann", tiers=["project"])]
    mem.delete("ann", marathon)
    assert not may_see(["project"], "s1")
    assert not may_hold(folder, collection_name(DEFAULT_COLLECTION, "bob"), "bob")
    with sqlite3.connect(folder / "chroma.sqlite3") as db:  # a write logged, not applied
        (collection,) = db.execute("SELECT id FROM collections WHERE name = ?", (name,)).fetchone()
        db.execute(
            "INSERT INTO embeddings_queue (seq_id, operation, topic, id) VALUES (?, 0, ?, 'x')",
            (10**9, f"persistent://default/default/{collection}"),
        )
    assert may_see(["project"], "s1")  # it may be a match: Chroma is asked


def test_the_outbox_tells_which_waiting_memories_a_session_may_see(tmp_path: Path) -> None:
    memory = BackgroundMemory(MemoryConfig(), tmp_path, user_id="ann")
    memory.add("ann", [NewMemory(DIZZY, "task", "s1"), NewMemory(MARATHON, "project", "s1")])
    outbox = Outbox(memory_folder(tmp_path))
    assert outbox.holds("ann", ["task"], "s1") and not outbox.holds("ann", ["task"], "s2")
    assert outbox.holds("ann", [], "s2")  # the project memory
    assert not outbox.holds("ann", ["task", "personal"], "s2")
    assert not memory.opened
    assert memory.recall("ann", [DIZZY], tiers=["task"], session_id="s2") == []
    assert not memory.opened  # another session's context: nothing to open Chroma for


@pytest.mark.parametrize(
    ("reading", "tiers"),
    [
        (Reading(), None),  # a graph that recalls nothing reads nothing
        (Reading(tiers=frozenset({"task"})), None),  # a new session has no context yet
        (Reading(tiers=frozenset({"task", "personal"})), ("personal",)),
        (Reading(tiers=frozenset({"task"}), session_id="s1"), ("task",)),
        (Reading(counts=True), ()),  # a conditional start counts them all
    ],
)
def test_what_a_run_may_read_at_launch(reading: Reading, tiers: tuple[Tier, ...] | None) -> None:
    assert reading.launch_tiers() == tiers
