"""Memories in a real Chroma server (`chroma run`, started here and stopped by PID), the
`cgraph memory` commands on a server and on an embedded folder, and a server that dies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from cgraph.backends.embed import Embedder, shared_embedder
from cgraph.backends.memory.chroma import ChromaMemory, memory_folder
from cgraph.errors import MemoryStoreError
from cgraph.runtime.memory.gateway import MemoryGateway
from cgraph.runtime.needs import drive
from cgraph.runtime.ports import NewMemory
from cgraph.spec.model import MemoryConfig
from tests.conftest import ROOT
from tests.unit.backends.memory.test_chroma import HashEmbedder, free_port

CHROMA = Path(sys.executable).with_name("chroma")


class Server:
    def __init__(self, path: Path) -> None:
        self.path, self.port = path, free_port()
        self.restart()

    def restart(self) -> None:
        """Start `chroma run` on this server's folder and port (again, after `stop`)."""
        self.process = subprocess.Popen(
            [
                str(CHROMA),
                "run",
                "--path",
                str(self.path),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
        )
        self._wait_for_heartbeat()

    def _wait_for_heartbeat(self, limit: float = 60.0) -> None:
        deadline = time.monotonic() + limit
        url = f"http://127.0.0.1:{self.port}/api/v2/heartbeat"
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"chroma run exited with {self.process.returncode}")
            try:
                with urllib.request.urlopen(url, timeout=1) as response:
                    response.read()
                return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("chroma run did not answer within a minute")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = Server(tmp_path_factory.mktemp("chroma-server"))
    try:
        yield running
    finally:
        running.stop()


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`cgraph memory …` as the lead registers it (`python -m cgraph.cli.memory` here)."""
    return subprocess.run(
        [sys.executable, "-m", "cgraph.cli.memory", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        input="",
    )


@pytest.mark.slow
def test_the_server_keeps_memories_per_user_and_tier(server: Server) -> None:
    mem = ChromaMemory(
        host="127.0.0.1", port=server.port, embedder=HashEmbedder(), collection="mechanics"
    )
    for n in range(20):
        mem.add(
            f"user{n}",
            [
                NewMemory(f"user{n} takes aspirin at night", "personal"),
                NewMemory("walk thirty minutes by June", "project"),
            ],
        )
    for n in range(20):
        got = mem.recall(f"user{n}", ["aspirin at night", "walk thirty minutes"], top_k=10)
        assert {m.user_id for m in got} == {f"user{n}"}
        assert {m.tier for m in got} == {"personal", "project"}
    assert {m.tier for m in mem.recall("user3", ["aspirin"], tiers=["project"])} == {"project"}
    assert mem.add("user3", [NewMemory("walk thirty minutes by June", "project")]) == []
    assert mem.count("user3") == 2
    assert mem.delete("user3") == 2 and mem.count("user4") == 2
    assert mem.recall("user3", ["aspirin"]) == [] and mem.count("nobody") == 0


@pytest.mark.slow
def test_the_server_recalls_by_meaning_with_the_real_model(server: Server) -> None:
    embedder: Embedder = shared_embedder()
    mem = ChromaMemory(host="127.0.0.1", port=server.port, embedder=embedder, collection="meaning")
    mem.add(
        "ann",
        [
            NewMemory("Ann is allergic to penicillin.", "personal"),
            NewMemory("Ann's daughter Lucy drives her to the clinic.", "personal"),
            NewMemory("Ann walked twenty minutes on the treadmill.", "project"),
        ],
    )
    [first, *_] = mem.recall("ann", ["Which antibiotics should we avoid?"], top_k=3)
    assert first.text == "Ann is allergic to penicillin."
    assert first.score is not None and first.score > 0.3


@pytest.mark.slow
def test_the_memory_commands_work_against_a_server(server: Server) -> None:
    mem = ChromaMemory(host="127.0.0.1", port=server.port, embedder=HashEmbedder())
    [kept, gone] = mem.add(
        "cleo",
        [
            NewMemory("Cleo is lactose intolerant", "personal"),
            NewMemory("Cleo wants to write 1000 words today", "task"),
        ],
    )
    where = ["--host", "127.0.0.1", "--port", str(server.port)]
    listed = cli("list", "--user", "cleo", *where)
    assert listed.returncode == 0, listed.stderr
    assert sorted(line.split("  ")[0] for line in listed.stdout.splitlines()) == sorted(
        [kept.id, gone.id]
    )
    deleted = cli("delete", "--user", "cleo", "--id", gone.id, *where)
    assert deleted.stdout.strip() == "deleted 1 memories of user 'cleo'"
    exported = json.loads(cli("export", "--user", "cleo", *where).stdout)
    assert [e["text"] for e in exported] == ["Cleo is lactose intolerant"]
    assert "cleo\t1" in cli("users", *where).stdout.splitlines()


@pytest.mark.slow
def test_the_memory_commands_work_on_an_embedded_store(tmp_path: Path) -> None:
    mem = ChromaMemory(memory_folder(tmp_path), embedder=HashEmbedder())
    mem.add("dan", [NewMemory("Dan is afraid of needles", "personal", "s9", "intake", 2)])
    mem.add("eve", [NewMemory("Eve runs on Sundays", "personal")])
    out = tmp_path / "dan.json"
    assert (
        cli("export", "--user", "dan", "--store", str(tmp_path), "--output", str(out)).returncode
        == 0
    )
    [record] = json.loads(out.read_text())
    assert (record["text"], record["session_id"], record["state"], record["turn"]) == (
        "Dan is afraid of needles",
        "s9",
        "intake",
        2,
    )
    refused = cli("delete", "--user", "dan", "--store", str(tmp_path))  # no --yes, answers no
    assert refused.returncode != 0
    assert cli("delete", "--user", "dan", "--store", str(tmp_path), "--yes").returncode == 0
    assert cli("list", "--user", "dan", "--store", str(tmp_path)).stdout == ""
    assert "Eve runs on Sundays" in cli("list", "--user", "eve", "--store", str(tmp_path)).stdout


def test_the_memory_commands_do_not_create_a_store(tmp_path: Path) -> None:
    result = cli("list", "--user", "ann", "--store", str(tmp_path / "none"))
    assert result.returncode == 0
    assert f"no memories in {tmp_path / 'none'}: " in result.stderr  # not "for user 'ann'"
    assert not (tmp_path / "none").exists()


def test_the_memory_commands_report_a_dead_server() -> None:
    result = cli("list", "--user", "ann", "--host", "127.0.0.1", "--port", str(free_port()))
    assert result.returncode == 1
    assert result.stderr.startswith("error: no Chroma server answers at 127.0.0.1:")


@pytest.mark.slow
def test_a_server_that_dies_means_no_memories_and_a_warning(tmp_path: Path) -> None:
    doomed = Server(tmp_path)
    try:
        mem = ChromaMemory(host="127.0.0.1", port=doomed.port, embedder=HashEmbedder(), timeout=2.0)
        mem.add("ann", [NewMemory("Ann likes gardening", "personal")])
        assert [m.text for m in mem.recall("ann", ["gardening"])] == ["Ann likes gardening"]
    finally:
        doomed.stop()
    with pytest.raises(MemoryStoreError, match="memory recall failed"):
        mem.recall("ann", ["gardening"])
    gateway = MemoryGateway(mem, MemoryConfig(), user_id="ann", session_id="s1")
    recalled = drive(gateway.recall("a", ["gardening"], (), 5))
    assert recalled.memories == () and [e.kind for e in recalled.events] == ["memory_error"]
    assert "memory recall failed" in recalled.events[0].data["error"]


@pytest.mark.slow
def test_a_conversation_goes_on_when_the_server_dies(tmp_path: Path) -> None:
    from cgraph.session import Session

    doomed = Server(tmp_path / "chroma")
    mem = ChromaMemory(host="127.0.0.1", port=doomed.port, timeout=2.0)
    session = Session.start(
        ROOT / "graphs" / "medical_checkin.yaml", model="semantic", user_id="ann", memory=mem
    )
    first = session.send("Hi, I'm ready")
    doomed.stop()
    second = session.send("Yes, I took all my pills")
    assert first.reply and second.reply
    assert second.number == first.number + 1
    errors = [e for e in session.events() if e.kind == "memory_error"]
    assert errors, [e.kind for e in session.events()]
    assert all(e.turn == second.number for e in errors)
    assert "memory" in str(errors[0].data.get("error", ""))
