"""The session's tool runner: real worker processes, reused, killed, replaced."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from cgraph.errors import ToolError
from cgraph.runtime.tools.process import how_it_ended
from cgraph.runtime.tools.runner import ToolRunner
from cgraph.spec.model import Isolation, Tool
from tests.conftest import FIXTURES

FOLDER = FIXTURES / "runtime"


@pytest.fixture
def runner() -> Iterator[ToolRunner]:
    made = ToolRunner()
    yield made
    made.close()


def tool(function: str, timeout: float = 30, isolation: Isolation = "process") -> Tool:
    return Tool(
        name="charge_card",
        handler=f"runner_tools:{function}",
        timeout=timeout,
        isolation=isolation,
    )


def run(runner: ToolRunner, function: str, key: str = "k", **arguments: Any) -> Any:
    return runner.call(tool(function), FOLDER, arguments, key)


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_calls_run_in_one_worker_process_reused_and_get_the_key(runner: ToolRunner) -> None:
    first = run(runner, "where", key="S:1:2")
    second = run(runner, "where", key="S:2:2")
    assert first["pid"] == second["pid"] != os.getpid()
    assert (first["key"], second["key"]) == ("S:1:2", "S:2:2")
    assert run(runner, "no_key", value=4) == 8  # no key for a handler without the parameter
    assert runner.workers() == (first["pid"],)


def test_a_timeout_kills_the_worker_and_the_next_call_gets_a_fresh_one(
    runner: ToolRunner,
) -> None:
    before = run(runner, "where")["pid"]
    with pytest.raises(ToolError, match=r"tool `charge_card` timed out after 0\.2s"):
        runner.call(tool("slow", timeout=0.2), FOLDER, {"seconds": 30}, "k")
    assert gone(before)
    assert run(runner, "where")["pid"] not in (before, os.getpid())


def test_a_segfault_is_a_tool_error_and_the_session_goes_on(runner: ToolRunner) -> None:
    before = run(runner, "where")["pid"]
    with pytest.raises(
        ToolError, match="tool `charge_card` crashed the tool worker: killed by signal SIGSEGV"
    ):
        run(runner, "segfault")
    assert gone(before)
    assert run(runner, "no_key", value=1) == 2


@pytest.mark.parametrize(
    ("function", "message"),
    [
        ("not_json", "tool `charge_card` returned a value that is not JSON"),
        ("not_a_number", "tool `charge_card` returned a value that is not JSON"),
        ("missing", "`runner_tools` has no function `missing`"),
    ],
)
def test_a_result_that_is_not_json_or_a_missing_handler_is_a_tool_error(
    runner: ToolRunner, function: str, message: str
) -> None:
    with pytest.raises(ToolError, match=message):
        run(runner, function)
    assert len(runner.workers()) == 1  # the worker answered: it is kept


def test_failures_in_the_handler_name_the_tool_and_the_exception(runner: ToolRunner) -> None:
    with pytest.raises(ToolError, match=r"tool `charge_card` failed: TypeError: .*seconds"):
        run(runner, "slow")


def test_calls_made_at_once_get_a_worker_each(runner: ToolRunner, tmp_path: Path) -> None:
    def meet(me: str, other: str) -> int:
        arguments = {"folder": str(tmp_path), "me": me, "other": other}
        return int(runner.call(tool("meet", timeout=20), FOLDER, arguments, me))

    with ThreadPoolExecutor(2) as pool:
        pids = list(pool.map(meet, ["a", "b"], ["b", "a"]))
    assert len(set(pids)) == 2 and sorted(runner.workers()) == sorted(pids)


def test_close_stops_the_workers_and_a_later_call_starts_one(runner: ToolRunner) -> None:
    runner.warm()
    [warm] = runner.workers()
    assert run(runner, "where")["pid"] == warm  # the call took the worker started early
    runner.close()
    assert gone(warm) and runner.workers() == ()
    assert run(runner, "where")["pid"] != warm


def test_the_thread_isolation_runs_in_this_process(runner: ToolRunner) -> None:
    found = runner.call(tool("where", isolation="thread"), FOLDER, {}, "k")
    assert found == {"pid": os.getpid(), "key": "k"} and runner.workers() == ()
    with pytest.raises(ToolError, match="returned a value that is not JSON"):
        runner.call(tool("not_json", isolation="thread"), FOLDER, {}, "k")


def test_return_codes_in_words() -> None:
    assert how_it_ended(-11) == "killed by signal SIGSEGV"
    assert how_it_ended(-9) == "killed by signal SIGKILL"
    assert how_it_ended(3) == "exited with status 3"


SLOW_IMPORT = """\
import os
import signal
import time
import time
from pathlib import Path

Path(os.environ.get("MARK_DIR", "."), "imported").write_text(str(os.getpid()))
time.sleep({seconds})


def quick() -> str:
    return "quick"
"""


def slow_module(folder: Path, seconds: float) -> Tool:
    (folder / "slow_import.py").write_text(SLOW_IMPORT.format(seconds=seconds))
    return Tool(name="quick", handler="slow_import:quick", timeout=0.5)


@pytest.mark.slow
def test_the_timeout_counts_the_handler_not_the_import_of_its_module(
    runner: ToolRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MARK_DIR", str(tmp_path))
    assert runner.call(slow_module(tmp_path, 1.0), tmp_path, {}, "k") == "quick"


def test_warm_imports_the_handlers_before_the_first_call(
    runner: ToolRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MARK_DIR", str(tmp_path))
    quick = slow_module(tmp_path, 0.0)
    runner.warm([(quick, tmp_path)])
    [worker] = runner.workers()
    deadline = time.monotonic() + 60
    while not (tmp_path / "imported").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert (tmp_path / "imported").read_text() == str(worker)  # no call made yet
    assert runner.call(quick, tmp_path, {}, "k") == "quick"


def test_arguments_that_are_not_json_are_refused_before_any_worker_runs(
    runner: ToolRunner,
) -> None:
    with pytest.raises(ToolError, match="tool `charge_card` got arguments that are not JSON"):
        run(runner, "no_key", value={1, 2})
    assert runner.workers() == ()


def test_ctrl_c_during_a_call_stops_its_worker(runner: ToolRunner) -> None:
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    before = run(runner, "where")["pid"]
    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.3)
    try:
        with pytest.raises(KeyboardInterrupt):
            run(runner, "slow", seconds=30)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert gone(before) and runner.workers() == ()
