"""`cgraph simulate` as a user runs it: exit codes, processes, the model user through a
local OpenAI-compatible server (which refuses what OpenAI refuses), and `--replay`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.commands import CGRAPH, environment, ran
from tests.conftest import FIXTURES, GRAPHS
from tests.servers.chat import OPENAI, serve

HELPDESK = FIXTURES / "sim" / "helpdesk.sim.yaml"


def simulate(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    done = ran([str(CGRAPH), "simulate", *args], env=env, timeout=300)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


def test_exit_codes_say_whether_the_thresholds_held(tmp_path: Path) -> None:
    code, out, _ = simulate(
        str(GRAPHS / "sims" / "medical_checkin.sim.yaml"), "-n", "2", "--out", str(tmp_path)
    )
    assert code == 0 and "thresholds held" in out
    code, out, _ = simulate(str(HELPDESK), "-n", "2", "--out", str(tmp_path))
    assert code == 1 and "below threshold: balance: success 0.000 < 1" in out
    code, _, err = simulate(
        str(HELPDESK), "-n", "2", "--out", str(tmp_path), "--fail-under", "sucess=1"
    )
    assert code == 2 and "--fail-under" in err
    bad = tmp_path / "bad.sim.yaml"
    bad.write_text("cgraph-sim: 1\ngraph: nowhere.yaml\npersonas: [{name: a}]\n")
    code, _, err = simulate(str(bad), "--out", str(tmp_path))
    assert code == 2 and "nowhere.yaml" in err


def test_processes_give_the_bytes_one_process_gives(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    simulate(str(HELPDESK), "-n", "3", "--out", str(one))
    simulate(str(HELPDESK), "-n", "3", "-j", "2", "--out", str(two))
    results = "helpdesk/results.jsonl"
    assert (one / results).read_bytes() == (two / results).read_bytes()
    assert len((one / results).read_bytes().splitlines()) == 12


def test_lint_of_sim_files_imports_no_heavy_package() -> None:
    done = ran([sys.executable, "-X", "importtime", "-m", "cgraph", "lint", str(GRAPHS / "sims")])
    assert done.returncode == 0, done.stdout + done.stderr
    imported = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in done.stderr.splitlines()}
    assert not imported & {"litellm", "chromadb", "torch"}


SIM = """\
cgraph-sim: 1
graph: {graph}
runs: 1
user: model
personas:
  - name: order that is found
    facts: {{order_number: AB1234}}
    goal: {{reach: [resolved], never: [operator]}}
    criteria: ["The agent asked for the order number."]
"""


def test_a_model_user_talks_through_an_openai_compatible_server_and_replays(tmp_path: Path) -> None:
    sim = tmp_path / "helpdesk.sim.yaml"
    sim.write_text(SIM.format(graph=FIXTURES / "sim" / "helpdesk.yaml"))
    said = ["My order hasn't arrived.", "It is AB1234.", "Thanks, bye.", "yes"]
    out = tmp_path / "out"
    with serve(OPENAI, texts=list(said)) as server:
        env = environment(OPENAI_API_BASE=server.base, OPENAI_API_KEY="sk-local")
        code, shown, err = simulate(
            str(sim), "--model", "openai/user-model", "--out", str(out), "-f", "json", env=env
        )
        bodies = list(server.bodies)
    assert code == 0, err
    assert len(bodies) == 4  # three lines, then the judge
    first = bodies[0]
    assert first["temperature"] == 0 and isinstance(first["seed"], int)
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert "order_number: AB1234" in first["messages"][0]["content"]
    roles = [m["role"] for m in bodies[2]["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    assert bodies[2]["messages"][-1]["content"].startswith("That is sorted")
    report = json.loads(shown)["simulations"][0]
    persona = report["personas"][0]
    assert persona["success"] == 1.0 and persona["user_calls"] == 4 and persona["tokens"] == 60
    assert persona["judged"] == {"The agent asked for the order number.": 1.0}
    live = [
        json.loads(line) for line in (out / "helpdesk" / "results.jsonl").read_text().splitlines()
    ]

    # No server now: every answer comes from the cache, with no call.
    again = tmp_path / "again"
    (again / "helpdesk").mkdir(parents=True)
    cache = out / "helpdesk" / "requests.jsonl"
    (again / "helpdesk" / "requests.jsonl").write_bytes(cache.read_bytes())
    env = environment(OPENAI_API_BASE="http://127.0.0.1:9/v1", OPENAI_API_KEY="sk-local")
    code, shown, err = simulate(
        str(sim),
        "--model",
        "openai/user-model",
        "--replay",
        "--out",
        str(again),
        "-f",
        "json",
        env=env,
    )
    assert code == 0, err
    replayed = [
        json.loads(line) for line in (again / "helpdesk" / "results.jsonl").read_text().splitlines()
    ]
    assert [r["transcript"] for r in replayed] == [r["transcript"] for r in live]
    assert json.loads(shown)["simulations"][0]["suite"]["model_calls"] == 0

    # A request the cache does not hold stops a replay: a usage error, said so.
    sim.write_text(
        SIM.format(graph=FIXTURES / "sim" / "helpdesk.yaml").replace("runs: 1", "runs: 2")
    )
    code, _, err = simulate(
        str(sim), "--model", "openai/user-model", "--replay", "--out", str(again), env=env
    )
    assert code == 2 and "--replay: no cached answer" in err


def test_the_fake_server_refuses_what_openai_refuses() -> None:
    from tests.servers.chat import conversation_problem

    good = {"messages": [{"role": "user", "content": "hi"}], "seed": 7, "temperature": 0}
    assert conversation_problem(good) is None
    assert "seed" in (conversation_problem({**good, "seed": "7"}) or "")
    assert "temperature" in (conversation_problem({**good, "temperature": 3}) or "")
    assert "messages" in (conversation_problem({**good, "messages": []}) or "")
    assert "role" in (
        conversation_problem({**good, "messages": [{"role": "bot", "content": "x"}]}) or ""
    )
