"""Recall speed: 10,000 memories across 50 users in an embedded Chroma (or a server).

    python bench/bench_recall.py [--memories 10000] [--users 50] [--queries 200] [--server]

Prints: memories stored per second (embedding + batched writes, and writes alone), the
p50/p95 latency of one filtered recall split into embedding the query and the Chroma
query, the latency of storing one turn's memories (with the duplicate check), and peak RSS.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cgraph.backends.embed import LocalEmbedder
from cgraph.backends.memory.chroma import ChromaMemory
from cgraph.backends.memory.layout import metadata as _metadata
from cgraph.runtime.ports import Memory, NewMemory
from cgraph.spec.model import TIERS, Tier

NAMES = ["Ann", "Bob", "Cleo", "Dan", "Eve", "Femi", "Gus", "Hana", "Ivo", "Jun"]
FACTS = [
    "takes {med} every {time}",
    "is allergic to {thing}",
    "wants to {goal} by {month}",
    "walked {n} minutes on {day} before feeling tired",
    "felt {symptom} after {activity} on {day}",
    "prefers to talk about {topic} in the {time}",
    "has a {pet} called {pet_name}",
    "is saving for {thing} and has put aside {n} euros",
    "slept {n} hours on {day} night",
    "is learning {topic} with a friend on {day}",
]
FILL = {
    "med": ["metoprolol", "aspirin", "metformin", "statins", "an inhaler", "vitamin D"],
    "time": ["morning", "evening", "night", "lunchtime"],
    "thing": ["penicillin", "peanuts", "cats", "a bicycle", "a used car", "pollen", "shellfish"],
    "goal": ["run a 10k", "walk thirty minutes", "lose five kilos", "finish the novel"],
    "month": ["June", "September", "the new year", "spring"],
    "n": [str(n) for n in range(5, 95, 5)],
    "day": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"],
    "symptom": ["dizzy", "breathless", "tired", "a tight chest", "knee pain", "a headache"],
    "activity": ["the stairs", "gardening", "a long walk", "swimming", "work"],
    "topic": ["gardening", "guitar", "Spanish", "cooking", "chess", "birdwatching"],
    "pet": ["dog", "cat", "parrot", "rabbit"],
    "pet_name": ["Biscuit", "Pepper", "Mango", "Olive", "Rex"],
}
QUERIES = [
    "What medication does the user take?",
    "symptoms and exercise tolerance",
    "allergies",
    "How is the user progressing towards their goal?",
    "How did they sleep?",
    "pets and family",
    "hobbies and what they are learning",
    "money and savings",
]


SESSIONS = 20
"""Sessions per user the memories were told in (a session recalls its own task memories)."""


def session(n: int) -> str:
    return f"s{n % SESSIONS}"


def fact(rng: random.Random, user: str) -> str:
    template = rng.choice(FACTS)
    words = {key: rng.choice(values) for key, values in FILL.items()}
    return f"{NAMES[hash(user) % len(NAMES)]} {template.format(**words)}."


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = fn()
    return result, (time.perf_counter() - start) * 1000.0


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def fill(mem: ChromaMemory, embedder: LocalEmbedder, total: int, users: int) -> dict[str, float]:
    """Store `total` memories: embedded in one batch, written per user in batched adds."""
    rng = random.Random(7)
    rows = [(f"user{n % users:02d}", rng.choice(TIERS)) for n in range(total)]
    texts = [fact(rng, user) for user, _ in rows]
    vectors, embed_ms = timed(lambda: embedder.embed(texts))

    def write() -> None:
        now = time.time()
        for user in sorted({u for u, _ in rows}):
            mine = [n for n, (u, _) in enumerate(rows) if u == user]
            # add() checks duplicates one turn at a time; a bulk load writes directly.
            mem._user_coll(user, create=True).add(
                ids=[f"m{n}" for n in mine],
                embeddings=[vectors[n] for n in mine],
                documents=[texts[n] for n in mine],
                metadatas=[
                    _metadata(Memory(f"m{n}", texts[n], rows[n][1], user, session(n), "s", 0, now))
                    for n in mine
                ],
            )

    _, write_ms = timed(write)
    return {"embed_ms": embed_ms, "write_ms": write_ms}


def recall_latency(
    mem: ChromaMemory, embedder: LocalEmbedder, queries: int, users: int
) -> dict[str, list[float]]:
    """Per recall: embedding a never-seen message, then the filtered Chroma query."""
    rng = random.Random(11)
    out: dict[str, list[float]] = {k: [] for k in ("embed", "query", "total", "all", "scoped")}
    for n in range(queries):
        user = f"user{rng.randrange(users):02d}"
        message = f"{rng.choice(QUERIES)} (turn {n})"  # unique: the cache cannot help
        tiers: Sequence[Tier] = rng.choice([(), ("personal",), ("personal", "project")])
        _, embed_ms = timed(lambda m=message: embedder.embed([m]))  # type: ignore[misc]
        got, query_ms = timed(lambda m=message, u=user, t=tiers: mem.recall(u, [m], tiers=t))  # type: ignore[misc]
        assert got and all(g.user_id == user for g in got)
        both = all_tiers(mem, user, message, session(rng.randrange(SESSIONS)), first=n % 2)
        out["all"].append(both[0])
        out["scoped"].append(both[1])
        out["embed"].append(embed_ms)
        out["query"].append(query_ms)
        out["total"].append(embed_ms + query_ms)
    return out


def all_tiers(mem: ChromaMemory, user: str, message: str, mine: str, first: int) -> list[float]:
    """One recall in every tier, as no session and as session `mine` (task memories only
    its own: an `$or` filter), in turns first so that neither gains from a warm cache."""
    calls = [
        lambda: mem.recall(user, [message]),
        lambda: mem.recall(user, [message], session_id=mine),
    ]
    times = [0.0, 0.0]
    for index in (first, 1 - first):
        got, times[index] = timed(calls[index])
        assert got and all(g.tier != "task" or index == 0 or g.session_id == mine for g in got)
    return times


def turn_store_latency(mem: ChromaMemory, rounds: int, users: int) -> list[float]:
    """`add` of three memories (one per tier), as after one turn: embed + dedup + write."""
    rng = random.Random(13)
    times = []
    for n in range(rounds):
        user = f"user{rng.randrange(users):02d}"
        items = [NewMemory(f"{fact(rng, user)} ({n})", tier) for tier in TIERS]
        _, ms = timed(lambda u=user, i=items: mem.add(u, i))  # type: ignore[misc]
        times.append(ms)
    return times


def start_server(path: Path) -> tuple[subprocess.Popen[bytes], int]:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    chroma = Path(sys.executable).with_name("chroma")
    cmd = [str(chroma), "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1).read()
            return proc, port
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("chroma run did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--server", action="store_true", help="use `chroma run`, not a folder")
    args = parser.parse_args()

    embedder, load_ms = timed(lambda: LocalEmbedder(background=False, cache_size=20_000))
    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(Path(tmp)) if args.server else None
        try:
            if server:
                mem = ChromaMemory(host="127.0.0.1", port=server[1], embedder=embedder)
            else:
                mem = ChromaMemory(Path(tmp), embedder=embedder)
            report(mem, embedder, args, load_ms)
        finally:
            if server:
                server[0].terminate()
                server[0].wait(10)


def row(label: str, *values: float, fmt: str = "8.1f") -> None:
    print(f"  {label:<42}" + "".join(f" {v:{fmt}}" for v in values))


def report(
    mem: ChromaMemory, embedder: LocalEmbedder, args: argparse.Namespace, load_ms: float
) -> None:
    filled = fill(mem, embedder, args.memories, args.users)
    mem.recall("user00", ["warm-up"])
    lat = recall_latency(mem, embedder, args.queries, args.users)
    turns = turn_store_latency(mem, 50, args.users)
    assert sum(mem.count(u) for u in mem.users()) >= args.memories
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    n = args.memories
    mode = "Chroma server (HTTP)" if args.server else "embedded Chroma (PersistentClient)"
    threads = os.environ.get("CGRAPH_EMBED_THREADS", "1")
    print(f"\nrecall bench: {n:,} memories, {args.users} users, {args.queries} recalls, {mode}")
    print(f"  torch threads for embedding: {threads}")
    row("model load (once), s", load_ms / 1000)
    row(
        "stored/s, embedding + batched writes",
        n / ((filled["embed_ms"] + filled["write_ms"]) / 1000),
        fmt="8.0f",
    )
    row("stored/s, batched writes alone", n / (filled["write_ms"] / 1000), fmt="8.0f")
    print(f"  {'one recall, ms':<42} {'p50':>8} {'p95':>8}")
    row("embedding the message", pct(lat["embed"], 0.5), pct(lat["embed"], 0.95))
    row("filtered Chroma query", pct(lat["query"], 0.5), pct(lat["query"], 0.95))
    row("all tiers, no session", pct(lat["all"], 0.5), pct(lat["all"], 0.95))
    row(
        "all tiers, as a session (task: its own)", pct(lat["scoped"], 0.5), pct(lat["scoped"], 0.95)
    )
    row("embedding + query", pct(lat["total"], 0.5), pct(lat["total"], 0.95))
    row("storing one turn (3 memories, dedup), ms", pct(turns, 0.5), pct(turns, 0.95))
    row("peak RSS, MB", rss_mb, fmt="8.0f")


if __name__ == "__main__":
    from record import recorded  # bench/record.py: the docs' copy of what is printed

    name = "recall_server" if "--server" in sys.argv else "recall"
    with recorded(name):
        main()
