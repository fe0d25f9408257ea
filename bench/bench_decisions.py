"""Right, wrong and clarifying decisions on the labelled sets, offline or with any model.

    python bench/bench_decisions.py [--model NAME] [--api-base URL] [--sets NAME ...]
                                    [--heldout] [--misses]

Without `--model`, the offline chooser (`OfflineChooser`, the shipped weights) answers each
case's `Question`; with `--model gpt-4o-mini` (or `openai/x --api-base URL`, any litellm
name) the model is asked through cgraph's own LLM path: the request a session would send
(`request_for`), its answer parsed by the runtime's `parse_answer`. Printed per set and
overall: right / wrong / clarify (a wrong move is a wrong exit or staying when an exit was
meant; a clarifying question is neither), per labelled kind (negated, correction,
not_leaving, multi, …), exits expected with and without `examples:`, and wrongly ended
sessions (END taken when it was not expected).

By default only the development sets run. The held-out sets (`--heldout`, or named with
`--sets`) print aggregates only: their misses are never shown, even with `--misses`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cgraph.errors import CgraphError
from cgraph.runtime.ports import ChatModel, ExitChooser
from cgraph.testing.labelled import Case, question_for, request_for
from cgraph.testing.labelled_eval import Figures, Outcome, breakdown, outcome
from tests.support.labelled_sets import FIT_SETS, HELD_OUT, load_cases, set_name

KINDS = ("negated", "correction", "not_leaving", "multi", "hedge", "question", "opening")
"""The labelled kinds printed first, in this order."""
SETS = {set_name(p): p for p in (*FIT_SETS, *HELD_OUT)}


def offline_outcomes(
    chooser: ExitChooser, cases: Sequence[Case]
) -> tuple[list[Outcome], list[float]]:
    found, times = [], []
    for case in cases:
        question = question_for(case)
        started = time.perf_counter()
        chosen = chooser.choose(question).exit
        times.append((time.perf_counter() - started) * 1000)
        found.append(outcome(case, question, chosen))
    return found, times


def model_outcomes(model: ChatModel, cases: Sequence[Case]) -> tuple[list[Outcome], list[float]]:
    """Each case asked of a language model as a session asks it."""
    from cgraph.runtime.ask.answers import parse_answer

    found, times = [], []
    for case in cases:
        request = request_for(case)
        started = time.perf_counter()
        try:
            chosen = parse_answer(model.complete(request), request).exit or "?"
        except (CgraphError, ValueError) as err:
            chosen = f"error: {type(err).__name__}"
        times.append((time.perf_counter() - started) * 1000)
        found.append(outcome(case, question_for(case), chosen))
    return found, times


def print_figures(title: str, per_set: dict[str, list[Outcome]], misses: bool) -> None:
    held = {set_name(p) for p in HELD_OUT}
    print(f"\n== {title}")
    for name, outcomes in per_set.items():
        print(f"  {name:28s} {breakdown(outcomes)['overall'].line()}")
    for label, wanted in (("development", False), ("held-out", True)):
        every = [o for name, got in per_set.items() if (name in held) == wanted for o in got]
        if every:
            print(f"  -- the {label} sets together")
            print_table(breakdown(every))
    for name, outcomes in per_set.items() if misses else ():
        for o in outcomes if name not in held else ():
            if o.verdict != "right":
                print(
                    f"  {o.verdict:7s} {name} {o.case.state}: {o.case.message!r} → {o.chosen} "
                    f"(expected {o.case.expect})"
                )


def print_table(table: dict[str, Figures]) -> None:
    order = ["overall", *(f"kind {k}" for k in KINDS), "exit with examples"]
    order += ["exit without examples", "stay expected"]
    for key in [*order, *sorted(k for k in table if k not in order)]:
        if key in table:
            print(f"  {key:28s} {table[key].line()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a litellm model name (default: the offline chooser)")
    parser.add_argument("--api-base", help="the model's server (an OpenAI-compatible URL)")
    parser.add_argument("--sets", nargs="+", choices=sorted(SETS), help="the sets to run")
    parser.add_argument("--heldout", action="store_true", help="also run the held-out sets")
    parser.add_argument("--misses", action="store_true", help="print the development misses")
    args = parser.parse_args()
    names = args.sets or [set_name(p) for p in FIT_SETS]
    if args.heldout and not args.sets:
        names += [set_name(p) for p in HELD_OUT]
    per_set: dict[str, list[Outcome]] = {}
    times: list[float] = []
    if args.model:
        from cgraph.wiring.models import resolve_model

        model = resolve_model(args.model, api_base=args.api_base)
        run = lambda cases: model_outcomes(model, cases)  # noqa: E731
        title = f"{args.model}"
    else:
        from cgraph.backends.offline.chooser import OfflineChooser

        chooser = OfflineChooser()
        started = time.perf_counter()
        chooser.choose(question_for(load_cases(SETS[names[0]])[0]))
        print(f"offline chooser: model load + first decision {time.perf_counter() - started:.1f} s")
        run = lambda cases: offline_outcomes(chooser, cases)  # noqa: E731
        title = "offline chooser"
    for name in names:
        outcomes, spent = run(load_cases(SETS[name]))
        per_set[name] = outcomes
        times += spent
    print_figures(title, per_set, args.misses)
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    print(f"  per decision: p50 {statistics.median(ordered):.1f} ms, p95 {p95:.1f} ms")


if __name__ == "__main__":
    from record import recorded  # bench/record.py: the docs' copy of what is printed

    name = "decisions_model" if "--model" in sys.argv else "decisions"
    with recorded(name):
        main()
