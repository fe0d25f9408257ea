"""`--minimise`: a failing run shrunk into a `*.test.yaml` case that fails now.

The run is replayed deterministically (its user lines, said again in a fresh session) and
shrunk while the same failure recurs: first it starts at the latest state the run
entered (with the variables it had there), then delta debugging drops lines (Zeller's
ddmin), then each line is swapped for the shortest one meant for the same exit. The case's
last turn expects what the failure broke (the `never` state not entered, the conversation
not ended, the planned state reached, no guard), so it fails now and passes once the graph
is fixed. The file is run through `cgraph test`'s runner before it is kept.

A failure is shrunk once per persona and failure kind (the first run that shows it); a
`max_turns` or `error` run shows no single turn to expect anything of and is left as is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import yaml

from cgraph.simulate.options import Options
from cgraph.simulate.run import Replay, RunRecord, Setup, Trace, simulate
from cgraph.simulate.setup import build
from cgraph.simulate.suite import SimResult
from cgraph.spec.names import START
from cgraph.spec.simfile import Persona
from cgraph.version import __version__

SHRINKABLE = ("entered_never", "wrong_end", "stuck", "abandoned", "guard")


@dataclass(frozen=True, slots=True)
class Failure:
    """What a run broke, as a replay can check it: its kind and where it shows."""

    kind: str
    detail: str | None
    """The `never` state entered, the exit the run ended by, the stuck state, the guard."""
    expect_target: str | None = None
    """For a stuck run: the state the user's plan went to next."""

    def shows(self, record: RunRecord) -> int | None:
        """The turn (1-based) of `record` where this failure shows, or None."""
        for turn in record.turns:
            if self.kind == "entered_never" and self.detail in turn.path:
                return turn.number
            last = turn.number == len(record.turns)
            if self.kind == "wrong_end" and record.ended_at == self.detail and last:
                return turn.number
            if self.kind == "guard" and turn.guard == self.detail:
                return turn.number
        stuck = self.kind in ("stuck", "abandoned") and record.turns
        if stuck and record.turns[-1].state == self.detail and not record.turns[-1].changed:
            return len(record.turns)
        return None

    def expect(self) -> dict[str, Any]:
        """What the case's last turn must hold once the graph is fixed."""
        if self.kind == "entered_never":
            return {"path_excludes": [self.detail]}
        if self.kind == "wrong_end":
            return {"completed": False}
        if self.kind == "guard":
            return {"guard": False}
        return {"path_includes": [self.expect_target]}


def failure_of(record: dict[str, Any], persona: Persona) -> Failure | None:
    """The failure of a `results.jsonl` run, when it is one a case can show."""
    kind = record["failure"]
    if kind == "entered_never":
        entered = [s for s in persona.goal.never if s in record["entered"]]
        return Failure(kind, entered[0]) if entered else None
    if kind == "wrong_end":
        return Failure(kind, record["ended_at"])
    if kind == "guard":
        guards = [t["guard"] for t in record["transcript"] if t["guard"]]
        return Failure(kind, guards[-1]) if guards else None
    if kind in ("stuck", "abandoned") and record["transcript"]:
        target = next((t["target"] for t in reversed(record["transcript"]) if t["target"]), None)
        return Failure(kind, record["stuck"], target) if target else None
    return None


def minimise_failures(result: SimResult, options: Options, err: IO[str]) -> list[dict[str, Any]]:
    """Shrink the first failing run of each persona and failure kind; the cases written."""
    firsts: dict[tuple[str, str], dict[str, Any]] = {}
    for record in result.records:
        if record["failure"] in SHRINKABLE:
            firsts.setdefault((record["persona"], record["failure"]), record)
    if not firsts:
        return []
    setup = build(result.sim, options, result.folder)
    personas = {p.name: p for p in result.sim.personas}
    written = []
    try:
        for record in firsts.values():
            persona = personas[record["persona"]]
            failure = failure_of(record, persona)
            if failure is None:
                continue
            case = shrink(setup, persona, record["run"], failure)
            if case is None:
                err.write(f"minimise: {persona.name} run {record['run']}: did not recur\n")
                continue
            path = write_case(result, persona, record, failure, case)
            if path is not None:
                written.append(
                    {
                        "persona": persona.name,
                        "run": record["run"],
                        "failure": failure.kind,
                        "turns": len(case.lines),
                        "test": str(path),
                    }
                )
    finally:
        setup.close()
    return written


def shrink(setup: Setup, persona: Persona, index: int, failure: Failure) -> Replay | None:
    """The smallest replay of run `index` that still shows `failure` (None if it does not)."""
    trace: Trace = []
    original = simulate(setup, persona, index, trace=trace)
    at = failure.shows(original)
    if at is None:
        return None
    lines = tuple(t.user for t in original.turns[:at])

    def recurs(replay: Replay) -> Replay | None:
        record = simulate(setup, persona, index, replay)
        shown = failure.shows(record)
        return (
            None if shown is None else Replay(replay.lines[:shown], replay.state, replay.variables)
        )

    best = Replay(lines)
    for start in range(len(lines) - 1, 0, -1):  # the latest state it entered, first
        state, variables = trace[start]
        found = recurs(Replay(lines[start:], state, variables)) if state != START else None
        if found is not None:
            best = found
            break
    best = _ddmin(best, recurs)
    return _shortest_lines(setup, best, original, recurs)


def _ddmin(replay: Replay, recurs: Callable[[Replay], Replay | None]) -> Replay:
    """Zeller's ddmin over the lines: drop chunks while the failure recurs."""
    lines, parts = list(replay.lines), 2
    while len(lines) >= 2:
        size = max(1, len(lines) // parts)
        for begin in range(0, len(lines), size):
            rest = lines[:begin] + lines[begin + size :]
            found = recurs(Replay(tuple(rest), replay.state, replay.variables)) if rest else None
            if found is not None:
                lines, parts = list(found.lines), max(parts - 1, 2)
                break
        else:
            if size == 1:
                break
            parts = min(len(lines), parts * 2)
    return Replay(tuple(lines), replay.state, replay.variables)


def _shortest_lines(
    setup: Setup, replay: Replay, original: RunRecord, recurs: Callable[[Replay], Replay | None]
) -> Replay:
    """Each line swapped for the shortest line meant for the same exit, where it still fails."""
    meant = {t.user: t.meant for t in original.turns}
    lines = list(replay.lines)
    for i, line in enumerate(lines):
        shorter = [s for s in _lines_for(setup, meant.get(line)) if len(s) < len(line)]
        for candidate in sorted(shorter, key=lambda s: (len(s), s)):
            trial = Replay((*lines[:i], candidate, *lines[i + 1 :]), replay.state, replay.variables)
            found = recurs(trial)
            if found is not None and len(found.lines) == len(lines):
                lines[i] = candidate
                break
    return Replay(tuple(lines), replay.state, replay.variables)


def _lines_for(setup: Setup, meant: str | None) -> Sequence[str]:
    if not meant or " -> " not in meant:
        return ()
    source, _, exit_id = meant.partition(" -> ")
    for step in setup.planner.steps(
        source if source != "ANY" else setup.planner.start_state(), None
    ):
        if step.key == (source, exit_id):
            return step.exit.examples
    return ()


def write_case(
    result: SimResult, persona: Persona, record: dict[str, Any], failure: Failure, case: Replay
) -> Path | None:
    """The case as `tests/<graph>.<persona>.<kind>.test.yaml` in the results folder, kept
    only if it fails now under `cgraph test`'s runner."""
    folder = result.folder / "tests"
    folder.mkdir(exist_ok=True)
    slug = re.sub(r"[^a-z0-9]+", "-", persona.name.lower()).strip("-") or "persona"
    path = folder / f"{result.sim.graph_path.stem}.{slug}.{failure.kind}.test.yaml"
    graph = Path(os.path.relpath(result.sim.graph_path.resolve(), folder.resolve())).as_posix()
    turns: list[dict[str, Any]] = [{"user": line} for line in case.lines]
    turns[-1]["expect"] = failure.expect()
    body: dict[str, Any] = {"cgraph-test": 1, "graph": graph}
    if result.sim.model != "semantic":
        body["model"] = result.sim.model
    named = f"{persona.name}: {failure.kind.replace('_', ' ')}"
    entry: dict[str, Any] = {"name": named}
    if case.state is not None:
        entry["start"] = {"state": case.state, "variables": _plain(case.variables)}
    entry["turns"] = turns
    body["cases"] = [entry]
    head = (
        f"# Minimised by cgraph simulate {__version__} from persona `{persona.name}`, run "
        f"{record['run']} (seed {record['seed']}): {failure.kind}"
        f"{f' ({failure.detail})' if failure.detail else ''}.\n"
        "# It fails now and passes once the graph is fixed.\n"
    )
    text = head + yaml.safe_dump(body, sort_keys=False, allow_unicode=True, width=96)
    path.write_text(text, encoding="utf-8")
    if not _fails_now(path):
        path.unlink()
        return None
    return path


def _plain(values: Any) -> Any:
    """Variables as YAML can write them (tuples as lists)."""
    if isinstance(values, dict):
        return {str(k): _plain(v) for k, v in values.items()}
    if isinstance(values, (list, tuple)):
        return [_plain(v) for v in values]
    return values


def _fails_now(path: Path) -> bool:
    from cgraph.testing.runner import Options as TestOptions
    from cgraph.testing.runner import Runner, count

    results = Runner(TestOptions()).run_paths([path])
    passed, failed, _ = count(results)
    return failed > 0 and passed == 0 and not any(f.problems for f in results)
