"""The Chroma memory store: filtering, isolation, retention, duplicates, persistence,
degradation, and recall quality with the real embedding model on a labelled set."""

from __future__ import annotations

import hashlib
import math
import re
import socket
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
import yaml

from cgraph.backends.embed import Embedder, Vector, shared_embedder
from cgraph.backends.memory.chroma import ChromaMemory, memory_folder, open_memory
from cgraph.backends.memory.layout import collection_name, owner_where
from cgraph.backends.memory.policy import ReadOnlyMemory, best
from cgraph.errors import ConfigError, MemoryStoreError
from cgraph.runtime.ports import Memory, MemoryStore, NewMemory
from cgraph.spec.model import MemoryConfig
from tests.conftest import FIXTURES, ROOT

pytestmark = pytest.mark.slow  # real `cgraph` processes, models or Chroma


DAY = 86_400.0


class HashEmbedder:
    """Deterministic bag-of-words vectors: texts sharing words are similar. A stand-in
    for the real model where a test is about storage, not about meaning."""

    name = "hash"
    dimension = 384

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        self.calls.append(list(texts))
        return [self._one(t) for t in texts]

    def _one(self, text: str) -> Vector:
        vector = [0.0] * self.dimension
        for word in re.findall(r"\w+", text.casefold()):
            digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
            vector[int.from_bytes(digest, "big") % self.dimension] += 1.0
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        return [x / norm for x in vector]


class BrokenEmbedder:
    name = "broken"
    dimension = 384

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        raise ConfigError("the embedding model could not be loaded: gone")


class Clock:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_collections = iter(range(10**6))


def store(path: Path | None = None, **kwargs: object) -> ChromaMemory:
    """A fresh store; in-process stores share one Chroma, so each gets its own collection."""
    kwargs.setdefault("embedder", HashEmbedder())
    kwargs.setdefault("collection", f"test_{next(_collections)}")
    return ChromaMemory(path, **kwargs)  # type: ignore[arg-type]


def texts(memories: Sequence[Memory]) -> list[str]:
    return [m.text for m in memories]


@pytest.fixture(scope="session")
def real_embedder() -> Embedder:
    """The real model, loaded once per test process (the same instance the engine uses)."""
    embedder = shared_embedder()
    assert embedder.wait(120)
    return embedder


# --- storing and recalling -------------------------------------------------------------


def test_a_stored_memory_comes_back_with_its_record_and_a_score() -> None:
    clock = Clock()
    mem = store(clock=clock)
    [stored] = mem.add(
        "ann", [NewMemory("Ann is allergic to penicillin", "personal", "s1", "intake", 3)]
    )
    [got] = mem.recall("ann", ["allergic to penicillin"])
    assert got.id == stored.id
    assert (got.text, got.tier, got.user_id) == ("Ann is allergic to penicillin", "personal", "ann")
    assert (got.session_id, got.state, got.turn, got.created_at) == ("s1", "intake", 3, clock.now)
    assert got.score is not None and 0.5 < got.score <= 1.0


def test_recall_is_filtered_by_tier_and_empty_tiers_mean_all() -> None:
    mem = store()
    mem.add(
        "ann",
        [
            NewMemory("walking goal thirty minutes", "project"),
            NewMemory("walking made her dizzy today", "task"),
            NewMemory("walking is her favourite hobby", "personal"),
        ],
    )
    assert {m.tier for m in mem.recall("ann", ["walking"], tiers=["task"])} == {"task"}
    assert {m.tier for m in mem.recall("ann", ["walking"], tiers=["personal", "project"])} == {
        "personal",
        "project",
    }
    assert {m.tier for m in mem.recall("ann", ["walking"])} == {"personal", "project", "task"}


def test_several_queries_give_distinct_memories_best_first_within_top_k() -> None:
    mem = store()
    mem.add("bob", [NewMemory(f"fact {word} about running", "personal") for word in "abcdefgh"])
    got = mem.recall("bob", ["fact a about running", "fact b about running", "running"], top_k=4)
    assert len(got) == 4
    assert len({m.id for m in got}) == 4
    scores = [m.score or 0.0 for m in got]
    assert scores == sorted(scores, reverse=True)
    assert {"fact a about running", "fact b about running"} <= set(texts(got))


def test_min_score_drops_weak_matches() -> None:
    mem = store()
    mem.add(
        "bob",
        [NewMemory("marathon in Berlin", "project"), NewMemory("a dog named Biscuit", "personal")],
    )
    got = mem.recall("bob", ["marathon in Berlin"], min_score=0.5)
    assert texts(got) == ["marathon in Berlin"]
    assert mem.recall("bob", ["completely unrelated words"], min_score=0.5) == []


def test_blank_queries_and_blank_memories_do_nothing() -> None:
    embedder = HashEmbedder()
    mem = store(embedder=embedder)
    assert mem.add("ann", [NewMemory("   ", "task")]) == []
    assert mem.recall("ann", ["", "  "]) == []
    assert embedder.calls == []
    assert mem.count("ann") == 0


def test_fifty_users_with_near_identical_memories_never_see_each_other() -> None:
    mem = store()
    users = [f"user{n:02d}" for n in range(50)]
    for user in users:
        mem.add(
            user,
            [
                NewMemory(f"{user} takes metoprolol every morning", "personal"),
                NewMemory(f"{user} wants to walk thirty minutes", "project"),
                NewMemory("felt dizzy today after standing up", "task"),
            ],
        )
    for user in users:
        for query in ("takes metoprolol every morning", "walk thirty minutes", "felt dizzy today"):
            got = mem.recall(user, [query, "user00 user49"], top_k=10)
            assert got, (user, query)
            assert {m.user_id for m in got} == {user}
            assert all(m.text.startswith(user) or m.tier == "task" for m in got)
        assert mem.count(user) == 3
        assert {m.user_id for m in mem.list(user)} == {user}


# --- duplicates ------------------------------------------------------------------------


def test_a_restated_memory_is_not_stored_twice() -> None:
    mem = store()
    mem.add("ann", [NewMemory("Ann is allergic to penicillin.", "personal")])
    assert mem.add("ann", [NewMemory("ann is allergic to  penicillin", "personal")]) == []
    assert mem.count("ann") == 1


def test_a_near_duplicate_replaces_the_older_memory_keeping_its_id() -> None:
    clock = Clock()
    mem = store(clock=clock, duplicate_similarity=0.8)
    [old] = mem.add("bob", [NewMemory("Bob longest run so far is 25 kilometres", "project")])
    clock.now += 60
    [new] = mem.add("bob", [NewMemory("Bob longest run so far is 30 kilometres", "project", "s2")])
    assert new.id == old.id
    assert texts(mem.list("bob")) == ["Bob longest run so far is 30 kilometres"]
    assert mem.list("bob")[0].created_at == clock.now


def test_duplicates_are_judged_per_user_and_per_tier() -> None:
    mem = store()
    mem.add("ann", [NewMemory("likes green tea", "personal")])
    assert len(mem.add("ann", [NewMemory("likes green tea", "task")])) == 1
    assert len(mem.add("bob", [NewMemory("likes green tea", "personal")])) == 1
    assert mem.count("ann") == 2 and mem.count("bob") == 1


def test_duplicates_inside_one_batch_keep_the_last_version() -> None:
    mem = store(duplicate_similarity=0.8)
    stored = mem.add(
        "ann",
        [
            NewMemory("Ann slept six hours last night", "task"),
            NewMemory("Ann slept seven hours last night", "task"),
            NewMemory("Ann is a retired teacher", "personal"),
        ],
    )
    assert sorted(texts(stored)) == ["Ann is a retired teacher", "Ann slept seven hours last night"]
    assert mem.count("ann") == 2


# --- retention -------------------------------------------------------------------------


def test_expired_memories_are_not_listed_and_prune_deletes_them() -> None:
    clock = Clock()
    mem = store(clock=clock, ttl_days={"task": 1})
    mem.add(
        "ann",
        [
            NewMemory("dizzy this morning", "task"),
            NewMemory("dizzy spells run in the family", "personal"),
        ],
    )
    clock.now += 2 * DAY
    assert {m.tier for m in mem.list("ann")} == {"personal"}
    assert mem.count("ann") == 2  # expired but not yet pruned
    assert mem.prune() == 1
    assert mem.count("ann") == 1


def test_recall_skips_expired_memories_and_deletes_them() -> None:
    clock = Clock()
    mem = store(clock=clock, ttl_days={"task": 1, "project": 30})
    mem.add("ann", [NewMemory("dizzy this morning", "task"), NewMemory("dizzy goal", "project")])
    clock.now += 2 * DAY
    assert {m.tier for m in mem.recall("ann", ["dizzy"])} == {"project"}
    assert mem.count("ann") == 1


def test_adding_prunes_expired_memories_of_everyone() -> None:
    clock = Clock()
    mem = store(clock=clock, ttl_days={"task": 1}, prune_interval=DAY)
    mem.add("ann", [NewMemory("ann task", "task")])
    mem.add("bob", [NewMemory("bob task", "task")])
    clock.now += 2 * DAY
    mem.add("cleo", [NewMemory("cleo fact", "personal")])
    assert (mem.count("ann"), mem.count("bob"), mem.count("cleo")) == (0, 0, 1)


def test_a_count_cap_keeps_the_newest_memories_of_each_user() -> None:
    clock = Clock()
    mem = store(clock=clock, max_items={"task": 3})
    for n in range(5):
        clock.now += 1
        mem.add("ann", [NewMemory(f"ann task number {n} {'x' * n}", "task")])
        mem.add("bob", [NewMemory(f"bob task number {n} {'y' * n}", "task")])
    mem.add("ann", [NewMemory("a personal fact is not capped", "personal")])
    assert [m.text.split()[3] for m in mem.list("ann", tiers=["task"])] == ["2", "3", "4"]
    assert len(mem.list("bob")) == 3
    assert mem.count("ann") == 4


# --- list, export, delete --------------------------------------------------------------


def test_list_export_and_delete_touch_only_one_user() -> None:
    mem = store()
    ann = mem.add("ann", [NewMemory("ann fact one", "personal"), NewMemory("ann goal", "project")])
    bob = mem.add("bob", [NewMemory("bob fact one", "personal")])
    exported = mem.export("ann")
    assert sorted(e["text"] for e in exported) == ["ann fact one", "ann goal"]
    assert set(exported[0]) == {
        "id",
        "text",
        "tier",
        "user_id",
        "session_id",
        "state",
        "turn",
        "created_at",
    }
    assert mem.delete("ann", [bob[0].id]) == 0  # not ann's
    assert mem.delete("ann", [ann[0].id]) == 1
    assert texts(mem.list("ann")) == [next(m.text for m in ann[1:] + ann[:1] if m.id != ann[0].id)]
    assert mem.delete("ann") == 1
    assert mem.count("ann") == 0 and mem.count("bob") == 1
    assert mem.users() == ["bob"]


# --- persistence, configuration, degradation -------------------------------------------

_WRITER = """
import sys
from cgraph.backends.memory.chroma import ChromaMemory
from cgraph.runtime.ports import NewMemory
from tests.unit.backends.memory.test_chroma import HashEmbedder
mem = ChromaMemory(sys.argv[1], embedder=HashEmbedder())
mem.add("ann", [NewMemory("Ann prefers to be called Annie", "personal", "s1", "welcome", 1)])
"""
_READER = """
import sys
from cgraph.backends.memory.chroma import ChromaMemory
from tests.unit.backends.memory.test_chroma import HashEmbedder
mem = ChromaMemory(sys.argv[1], embedder=HashEmbedder())
for m in mem.recall("ann", ["called Annie"]):
    print(m.user_id, m.session_id, m.text)
print(mem.count("bob"))
"""


def test_memories_persist_across_processes(tmp_path: Path) -> None:
    run = [sys.executable, "-c"]
    subprocess.run([*run, _WRITER, str(tmp_path)], check=True, cwd=ROOT, timeout=120)
    out = subprocess.run(
        [*run, _READER, str(tmp_path)],
        check=True,
        cwd=ROOT,
        timeout=120,
        capture_output=True,
        text=True,
    ).stdout
    assert out.splitlines() == ["ann s1 Ann prefers to be called Annie", "0"]


def test_open_memory_follows_the_graph_settings(tmp_path: Path) -> None:
    embedded = open_memory(MemoryConfig(ttl_days={"task": 1}, max_items={"project": 9}), tmp_path)
    assert isinstance(embedded, ChromaMemory)
    assert embedded.path == memory_folder(tmp_path) == tmp_path / "memory"
    assert (embedded.ttl_days, embedded.max_items) == ({"task": 1}, {"project": 9})
    server = open_memory(MemoryConfig(host="10.0.0.7", port=9000), tmp_path)
    assert isinstance(server, ChromaMemory)
    assert (server.host, server.port, server.path) == ("10.0.0.7", 9000, None)
    assert not (tmp_path / "memory").exists()  # nothing is opened before it is used
    open_memory(MemoryConfig(), tmp_path, connect=True)
    assert (tmp_path / "memory" / "chroma.sqlite3").exists()
    with pytest.raises(MemoryStoreError, match="no Chroma server answers"):
        open_memory(MemoryConfig(host="127.0.0.1", port=free_port()), None, connect=True)


def test_two_in_process_stores_keep_their_memories_apart() -> None:
    first = ChromaMemory(embedder=HashEmbedder())
    second = ChromaMemory(embedder=HashEmbedder())
    first.add("ann", [NewMemory("Ann likes gardening", "personal")])
    assert (first.count("ann"), second.count("ann")) == (1, 0)
    assert second.recall("ann", ["gardening"]) == []


def test_store_off_still_recalls_but_stores_nothing(tmp_path: Path) -> None:
    writer = ChromaMemory(memory_folder(tmp_path), embedder=HashEmbedder())
    writer.add("ann", [NewMemory("Ann likes gardening", "personal")])
    reader = open_memory(MemoryConfig(store="off"), tmp_path, embedder=HashEmbedder())
    assert isinstance(reader, ReadOnlyMemory) and isinstance(reader, MemoryStore)
    assert reader.add("ann", [NewMemory("Ann likes opera", "personal")]) == []
    assert texts(reader.recall("ann", ["gardening"])) == ["Ann likes gardening"]
    assert reader.count("ann") == 1


def test_a_dead_server_raises_memory_store_error() -> None:
    mem = store(host="127.0.0.1", port=free_port(), timeout=1.0)
    with pytest.raises(MemoryStoreError, match="no Chroma server answers"):
        mem.recall("ann", ["anything"])
    with pytest.raises(MemoryStoreError):
        mem.add("ann", [NewMemory("something", "task")])


def test_an_embedder_failure_is_a_memory_store_error() -> None:
    mem = store(embedder=BrokenEmbedder())
    with pytest.raises(MemoryStoreError, match="could not be loaded"):
        mem.recall("ann", ["anything"])


# --- pure helpers ----------------------------------------------------------------------


def test_the_filter_names_the_user_and_the_tiers() -> None:
    assert owner_where("ann", ["personal"]) == {"owner": {"$in": ["personal|ann"]}}
    assert owner_where("a|b") == {"owner": {"$in": ["personal|a|b", "project|a|b", "task|a|b"]}}


def test_each_user_gets_a_collection_named_by_a_digest() -> None:
    assert collection_name("mem", "ann") != collection_name("mem", "Ann")
    assert re.fullmatch(r"mem-[0-9a-f]{32}", collection_name("mem", "ann/../x y"))


def test_best_keeps_each_memory_once_at_its_highest_score() -> None:
    def m(id_: str, score: float) -> Memory:
        return Memory(id_, id_, "task", "ann", "", "", 0, 0.0, score)

    ranked = best([m("a", 0.3), m("b", 0.9), m("a", 0.8), m("c", 0.1)], top_k=2, min_score=0.2)
    assert [(x.id, x.score) for x in ranked] == [("b", 0.9), ("a", 0.8)]


# --- with the real embedding model -----------------------------------------------------

RECALL_AT_5_FLOOR = 0.9
"""Measured 30/31 = 0.968 (only "writer's block" misses); the floor leaves room for one
more miss so a model or Chroma upgrade that degrades retrieval is caught."""


@pytest.fixture(scope="module")
def labelled() -> dict[str, list[dict[str, object]]]:
    with (FIXTURES / "recall_set.yaml").open() as f:
        data: dict[str, list[dict[str, object]]] = yaml.safe_load(f)
    return data


@pytest.fixture(scope="module")
def labelled_store(
    real_embedder: Embedder, labelled: dict[str, list[dict[str, object]]]
) -> Iterator[ChromaMemory]:
    ids = iter(str(m["id"]) for m in labelled["memories"])
    mem = store(embedder=real_embedder, new_id=lambda: next(ids))
    for m in labelled["memories"]:
        mem.add(str(m["user"]), [NewMemory(str(m["text"]), m["tier"])])  # type: ignore[arg-type]
    yield mem


@pytest.mark.slow
def test_recall_at_5_on_the_labelled_set(
    labelled_store: ChromaMemory, labelled: dict[str, list[dict[str, object]]]
) -> None:
    found = wanted = 0
    for q in labelled["queries"]:
        got = labelled_store.recall(
            str(q["user"]), [str(q["text"])], tiers=q.get("tiers", ()), top_k=5
        )  # type: ignore[arg-type]
        assert {m.user_id for m in got} <= {q["user"]}
        if "tiers" in q:
            assert {m.tier for m in got} <= set(q["tiers"])  # type: ignore[arg-type]
        expected = set(q["expect"])  # type: ignore[arg-type]
        found += len(expected & {m.id for m in got})
        wanted += len(expected)
    recall_at_5 = found / wanted
    print(f"\nrecall@5 = {found}/{wanted} = {recall_at_5:.3f}")
    assert recall_at_5 >= RECALL_AT_5_FLOOR


@pytest.mark.slow
def test_recall_with_several_queries_finds_what_each_query_alone_finds(
    labelled_store: ChromaMemory,
) -> None:
    queries = ["Which antibiotics should we avoid for her?", "How did she sleep?"]
    together = {m.id for m in labelled_store.recall("ann", queries, top_k=5)}
    assert {"ann-1", "ann-11"} <= together


@pytest.mark.slow
def test_restated_facts_replace_and_distinct_facts_are_kept(
    real_embedder: Embedder, labelled: dict[str, list[list[str]]]
) -> None:
    duplicates: dict[str, list[list[str]]] = labelled["duplicates"]  # type: ignore[assignment]
    for kind, pairs in duplicates.items():
        for first, second in pairs:
            mem = store(embedder=real_embedder)
            mem.add("ann", [NewMemory(first, "personal")])
            mem.add("ann", [NewMemory(second, "personal")])
            kept = texts(mem.list("ann"))
            if kind == "restated":
                assert kept == [second], (first, second)
            else:
                assert sorted(kept) == sorted([first, second]), (first, second)


@pytest.mark.slow
def test_a_turns_message_is_embedded_once_for_recall_and_storing(real_embedder: Embedder) -> None:
    message = "I walked for twenty-five minutes today without chest pain"
    mem = store(embedder=real_embedder)
    before = real_embedder.computed  # type: ignore[attr-defined]
    mem.recall("ann", [message])
    mem.add("ann", [NewMemory(message, "task")])
    mem.recall("ann", [message], tiers=["task"])
    assert real_embedder.computed - before == 1  # type: ignore[attr-defined]
