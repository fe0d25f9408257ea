"""`cgraph simulate`: talk to a graph as simulated users, report, and map the thresholds
to an exit code (0 held, 1 one failed, 2 bad input)."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from cgraph.cli.shown import shown
from cgraph.cli.usage import AllowModule, AllowPath, MaxFileSize, choices, read_limits, trust


class SimFormat(StrEnum):
    """Report formats of `cgraph simulate`."""

    text = "text"
    json = "json"
    junit = "junit"
    html = "html"


class UserKind(StrEnum):
    """Who plays the personas."""

    offline = "offline"
    model = "model"


def simulate(
    paths: Annotated[
        list[Path],
        typer.Argument(help="Sim files and folders (searched for *.sim.yaml).", metavar="SIM"),
    ],
    runs: Annotated[
        int | None, typer.Option("-n", "--runs", min=1, metavar="RUNS", help="Runs per persona.")
    ] = None,
    seed: Annotated[int | None, typer.Option(metavar="S", help="The master seed.")] = None,
    user: Annotated[
        UserKind | None,
        typer.Option(
            metavar=choices(UserKind), help="Who plays the personas (default: the file's)."
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(metavar="M", help="The litellm model that plays the personas (--user model)."),
    ] = None,
    jobs: Annotated[int, typer.Option("-j", "--jobs", min=1, metavar="N", help="Processes.")] = 1,
    explore: Annotated[
        bool, typer.Option("--explore", help="No personas: walk the least-taken exits first.")
    ] = False,
    minimise: Annotated[
        bool, typer.Option("--minimise", help="Shrink each failure into a *.test.yaml case.")
    ] = False,
    replay: Annotated[
        bool, typer.Option("--replay", help="Model users from the request cache only (no call).")
    ] = False,
    output: Annotated[
        SimFormat, typer.Option("--format", "-f", metavar=choices(SimFormat), help="Report format.")
    ] = SimFormat.text,
    out: Annotated[
        Path, typer.Option(metavar="DIR", help="Where results.jsonl and the reports go.")
    ] = Path("sim-results"),
    store: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="Keep each run's session here (cgraph studio --store)."),
    ] = None,
    fail_under: Annotated[
        str | None,
        typer.Option(metavar="NAME=V,...", help="Per-persona floors, e.g. success=0.9,pass^3=0.8."),
    ] = None,
    baseline: Annotated[
        Path | None, typer.Option(metavar="FILE", help="Compare with an earlier summary.json.")
    ] = None,
    budget: Annotated[
        str | None, typer.Option(metavar="calls=N", help="Stop after N model calls.")
    ] = None,
    gate_on_judge: Annotated[
        bool, typer.Option("--gate-on-judge", help="Judged criteria decide success too.")
    ] = False,
    max_file_size: MaxFileSize = None,
    allow_module: AllowModule = None,
    allow_path: AllowPath = None,
) -> None:
    """Talk to graphs as simulated users; exit 1 under a threshold, 2 on bad input."""
    from cgraph.errors import InputError
    from cgraph.simulate.options import Options, budget_calls
    from cgraph.simulate.simulation import SimRequest, simulate_paths

    try:
        calls = budget_calls(budget)
    except InputError as err:
        sys.stderr.write(f"error: {err.message}\n")
        raise typer.Exit(2) from err
    options = Options(
        runs=runs,
        seed=seed,
        user=user.value if user else None,
        user_model=model,
        jobs=jobs,
        explore=explore,
        replay=replay,
        budget_calls=calls,
        out=out,
        store=store,
        trust=trust(allow_module, allow_path),
        limits=read_limits(max_file_size),
    )
    request = SimRequest(
        paths=tuple(paths),
        options=options,
        output=output.value,
        fail_under=fail_under,
        baseline=baseline,
        minimise=minimise,
        gate_on_judge=gate_on_judge,
    )
    try:
        code = simulate_paths(
            request, shown(sys.stdout, json=output.value == "json"), shown(sys.stderr)
        )
    except OSError as err:
        sys.stderr.write(f"error: cannot write {err.filename}: {err.strerror or err}\n")
        raise typer.Exit(2) from err
    raise typer.Exit(code)
