"""`cgraph --help` and each command's help read like a well-made command line's."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.commands import CGRAPH, ran

USAGE = {
    "lint": "cgraph lint [OPTIONS] PATH...",
    "topology": "cgraph topology [OPTIONS] GRAPH",
    "render": "cgraph render [OPTIONS] GRAPH",
    "run": "cgraph run [OPTIONS] GRAPH",
    "test": "cgraph test [OPTIONS] [PATH]...",
    "simulate": "cgraph simulate [OPTIONS] SIM...",
    "studio": "cgraph studio [OPTIONS] GRAPH",
    "serve": "cgraph serve [OPTIONS] GRAPH_OR_FOLDER...",
    "lsp": "cgraph lsp [OPTIONS]",
    "store": "cgraph store [OPTIONS] COMMAND [ARGS]...",
    "store migrate": "cgraph store migrate [OPTIONS] STORE",
    "schema": "cgraph schema [OPTIONS]",
    "memory": "cgraph memory [OPTIONS] COMMAND [ARGS]...",
    "memory list": "cgraph memory list [OPTIONS]",
    "memory export": "cgraph memory export [OPTIONS]",
    "memory delete": "cgraph memory delete [OPTIONS]",
    "memory users": "cgraph memory users [OPTIONS]",
}
# A metavar names what an option takes (`--store DIR`), not a Python type (`<path>`); a
# flag is one plain option (`--jsonl`, `--no-browser`), not typer's `--x/--no-x` pair.
ODD = re.compile(r"[{}]|<(str|int|float|path)[^>]*>|/--no-")


def cgraph(*args: str) -> subprocess.CompletedProcess[str]:
    return ran([str(CGRAPH), *args], timeout=120)


def test_the_commands_are_listed_in_the_order_of_the_work() -> None:
    done = cgraph("--help")
    assert done.returncode == 0 and done.stdout.startswith(
        "Usage: cgraph [OPTIONS] COMMAND [ARGS]...\n"
    )
    listed = done.stdout.split("Commands:\n", 1)[1].splitlines()
    names = [line.split()[0] for line in listed if line.strip()]
    assert names == [
        "lint",
        "topology",
        "render",
        "run",
        "test",
        "simulate",
        "studio",
        "serve",
        "lsp",
        "schema",
        "memory",
        "store",
    ]
    assert not any(line.endswith("...") for line in listed), listed  # no summary cut short


@pytest.mark.parametrize("command", sorted(USAGE))
def test_each_help_has_a_plain_usage_line_and_named_metavars(command: str) -> None:
    done = cgraph(*command.split(), "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Usage: {USAGE[command]}\n"), done.stdout
    odd = [line for line in done.stdout.splitlines() if ODD.search(line)]
    assert odd == [], odd


def test_run_takes_jsonl_as_a_plain_flag() -> None:
    assert "--jsonl " in cgraph("run", "--help").stdout
    refused = cgraph("run", "--no-jsonl", "graphs/medical_checkin.yaml")
    assert refused.returncode == 2 and "No such option: --no-jsonl" in refused.stderr


def test_a_usage_error_names_the_argument_as_the_usage_line_does() -> None:
    done = cgraph("run")
    assert done.returncode == 2
    assert done.stderr.startswith("Usage: cgraph run [OPTIONS] GRAPH\n")
    assert "Missing argument 'GRAPH'" in done.stderr and "Traceback" not in done.stderr
