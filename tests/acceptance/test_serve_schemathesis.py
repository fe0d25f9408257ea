"""`/openapi.json` is the truth: schemathesis, a tool nobody on the project wrote, drives a
real `cgraph serve` (SQLite, then PostgreSQL) from the description alone with every check
on: examples, coverage, fuzzing and the stateful phase (a created session's id followed
into every `/v1/sessions/{id}` operation). It must find nothing, and the server must log
no traceback. `CGRAPH_SCHEMATHESIS_EXAMPLES` sets the examples per operation (10 in
`make test`, 200 in `make stress`). OpenAI's chat protocol (`/v1/models`,
`/v1/chat/completions`) is run with the rest; its conversation rules are not a JSON
Schema, so a valid request it refuses is allowed there, and every other check holds
(`tests/fixtures/serve/schemathesis.toml` says which refusals it allows)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.commands import environment
from tests.serving import GRAPHS, SCRIPT, SERVE, Server, serving, store_of, tokens_file

pytestmark = pytest.mark.slow

TOKEN = "ann-token-0123456789"
EXAMPLES = os.environ.get("CGRAPH_SCHEMATHESIS_EXAMPLES", "10")


@pytest.fixture(params=["sqlite", "postgresql"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Server]:
    store = store_of(request, tmp_path)
    tokens = tokens_file(tmp_path, {TOKEN: "ann"})
    with serving(
        str(GRAPHS / "talk.yaml"), "--store", store, "--memory", "off",
        "--model", f"scripted:{SCRIPT}", "--tokens", str(tokens),
        "--turns-per-minute", "1000000", "--sessions-per-user", "1000000", folder=tmp_path,
    ) as running:  # fmt: skip
        yield running


def test_schemathesis_finds_nothing(server: Server, tmp_path: Path) -> None:
    found = shutil.which("schemathesis", path=str(Path(sys.executable).parent))
    assert found is not None, "schemathesis is a dev dependency (pyproject.toml)"
    command = [
        found, "--config-file", str(SERVE / "schemathesis.toml"), "run",
        f"{server.url}/openapi.json", "-H", f"Authorization: Bearer {TOKEN}",
        "--checks", "all", "--max-examples", EXAMPLES, "--seed", "32",
        "--phases", "examples,coverage,fuzzing,stateful",
        "--max-failures", "20",
    ]  # fmt: skip
    done = subprocess.run(
        command, cwd=tmp_path, env=environment(), capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    paths = server.client(TOKEN).get("/openapi.json").json()["paths"]
    # every operation but `GET /openapi.json`, which schemathesis leaves out when it loads
    # the description from there
    described = sum(len(operations) for operations in paths.values())
    assert f"Tested: {described - 1}\n" in done.stdout, done.stdout[-3000:]
    assert "Traceback" not in server.output(), server.output()[-4000:]
