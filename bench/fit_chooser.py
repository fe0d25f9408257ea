"""Fit the offline chooser's scorer on the development sets and write its weights.

    python bench/fit_chooser.py [--heldout] [--reading] [--folds 5] [--dry-run]

1. Every case of the development sets (check-in, dev, dev2, dev3, dev4: `FIT_SETS`) that
   an action state decides by its scorer becomes a choice: a feature row per candidate
   (`cgraph.backends.offline.features`) and the candidate expected. Each is asked as a
   session asks it, the graph's global exits offered (the check-in's emergency exit
   included, which its figures are measured without).
2. A conditional logit (a softmax over a choice's candidates, one weight per feature, L2
   penalty) is fitted with numpy and scipy; features are standardised for the fit and the
   weights folded back, so the chooser reads raw features.
3. Cross-validation by graph (no graph in both the fitting and the judged folds) chooses
   the penalty (the lowest log loss: confidences the bars can rely on) and gives every
   development case an out-of-fold confidence; the ask policy's bars (`Calibration`) are
   chosen on those: the fewest wrong moves (a wrongly ended session, into END or into a
   silent state that goes on to END, and a wrong move into a side effect, which cannot be
   taken back either, counting ten) plus a third of each clarifying
   question that names the exit meant (its answer gets there) and three quarters of one
   that does not (a question about exits the user never meant), with at most 9 % of turns
   asking.
4. With `--reading`, the reading constants that shape the features (`Calibration.far`,
   `denied_near`, `act_floor`: `READING`) are chosen first, each in turn, by the lowest
   out-of-fold log loss of features read with it (every value costs a reading of the
   development sets; without the flag they stay as shipped).
5. The weights, bars and constants are written to `cgraph/backends/offline/weights.json`
   (`Calibration.fitted` reads them). The remaining thresholds (`answer_floor`,
   `decisive_lead`, `enum_threshold`) judge what no development choice exercises (an
   answer to a clarifying question, a silent state, an enum slot) and are not fitted.

The held-out sets (`HELD_OUT`: the global-exit set and held-out 1-5) are never fitted or
tuned on; `--heldout` prints their figures (aggregates only, never a miss) once the
weights are written.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cgraph.backends.offline import features
from cgraph.backends.offline.calibration import Calibration
from cgraph.backends.offline.chooser import OfflineChooser
from cgraph.backends.offline.policy import decide, irreversible_ids
from cgraph.backends.offline.scorer import WEIGHTS, Scorer, from_data
from cgraph.runtime.ports import Question
from cgraph.testing.labelled import Case, question_for
from cgraph.testing.labelled_eval import breakdown, outcome, run_chooser
from tests.support.labelled_sets import FIT_SETS, HELD_OUT, LABELS, load_cases, set_name

OUT = Path(__file__).resolve().parent.parent / "cgraph" / "backends" / "offline" / WEIGHTS
PENALTIES = (0.3, 1.0, 3.0, 10.0)
MAX_ASKING = 0.09
ENDED_COST = 10.0
ASK_COST = 1 / 3
MISASK_COST = 3 / 4
CHECK_IN_WEIGHT = 6.0


@dataclass
class Sample:
    """One choice of a development case: its rows, candidates and the one expected."""

    case: Case
    question: Question
    ids: tuple[str, ...]
    matrix: np.ndarray
    expected: int
    group: str
    weight: float = 1.0
    """How much the case counts in the fit: the check-in, the first graph a new user
    meets (`make demo`), counts `CHECK_IN_WEIGHT` times."""


READING = {
    "far": (0.4, 0.45, 0.5),
    "denied_near": (0.25, 0.3, 0.35),
    "act_floor": (0.55, 0.6, 0.65),
}
"""The values each reading constant may take with `--reading`."""


def samples(chooser: OfflineChooser, paths: tuple[Path, ...]) -> list[Sample]:
    found = []
    for path in paths:
        for case in load_cases(path, global_exits=True):
            question = question_for(case)
            scored_here = (
                question.kind == "action"
                and question.user_messages
                and (not question.entered_this_turn or question.opening)
            )
            if not scored_here or not question.options:
                continue
            texts = {o.id: chooser.option_texts(o) for o in question.options}
            rows = features.rows(question, texts, chooser.embed, chooser.calibration)
            if case.expect not in rows.ids:
                continue
            group = f"{set_name(path)}:{case.graph}"
            weight = CHECK_IN_WEIGHT if path == LABELS else 1.0
            expected = rows.ids.index(case.expect)
            found.append(Sample(case, question, rows.ids, rows.matrix, expected, group, weight))
    return found


def fit(data: list[Sample], penalty: float) -> np.ndarray:
    """The raw weights of a conditional logit fitted on `data` (L2 `penalty`)."""
    from scipy.optimize import minimize

    stacked = np.vstack([s.matrix for s in data])
    mean, scale = stacked.mean(axis=0), stacked.std(axis=0)
    scale[scale < 1e-9] = 1.0
    standard = [(s.matrix - mean) / scale for s in data]
    weight = np.array([s.weight for s in data])
    chosen = np.array([m[s.expected] * s.weight for m, s in zip(standard, data, strict=True)])
    bounds = np.cumsum([0] + [len(m) for m in standard])
    rows = np.vstack(standard)

    starts, counts = bounds[:-1], np.diff(bounds)
    chosen_sum = chosen.sum(axis=0)

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        logits = rows @ w
        top = np.maximum.reduceat(logits, starts)
        odds = np.exp(logits - np.repeat(top, counts))
        sums = np.add.reduceat(odds, starts)
        total = penalty * w @ w - chosen_sum @ w + float(weight @ (top + np.log(sums)))
        share = odds / np.repeat(sums, counts) * np.repeat(weight, counts)
        grad = 2 * penalty * w - chosen_sum + share @ rows
        return float(total), grad

    result = minimize(loss, np.zeros(rows.shape[1]), jac=True, method="L-BFGS-B")
    return np.asarray(result.x / scale)


def confidences(weights: np.ndarray, sample: Sample) -> dict[str, float]:
    logits = sample.matrix @ weights
    odds = np.exp(logits - logits.max())
    return dict(zip(sample.ids, (odds / odds.sum()).tolist(), strict=True))


def log_loss(data: list[Sample], oof: list[dict[str, float]]) -> float:
    """The mean negative log-probability of the candidate expected (how well the
    confidences are calibrated, which the policy's bars rely on)."""
    found = [max(c[s.case.expect], 1e-9) for s, c in zip(data, oof, strict=True)]
    return float(-np.mean(np.log(found)))


def out_of_fold(data: list[Sample], penalty: float, folds: int) -> list[dict[str, float]]:
    groups = sorted({s.group for s in data})
    fold_of = {g: i % folds for i, g in enumerate(np.random.default_rng(7).permutation(groups))}
    found: list[dict[str, float]] = [{} for _ in data]
    for fold in range(folds):
        train = [s for s in data if fold_of[s.group] != fold]
        weights = fit(train, penalty)
        for index, sample in enumerate(data):
            if fold_of[sample.group] == fold:
                found[index] = confidences(weights, sample)
    return found


def cost(data: list[Sample], oof: list[dict[str, float]], cal: Calibration) -> tuple[float, ...]:
    """(cost, wrong, asking) of the policy with `cal` on the out-of-fold confidences."""
    wrong = ended = asked = misasked = 0
    for sample, confidence in zip(data, oof, strict=True):
        decided = decide(sample.question, confidence, cal)
        verdict = outcome(sample.case, sample.question, decided.exit)
        asked += verdict.verdict == "clarify"
        misasked += verdict.verdict == "clarify" and sample.case.expect not in decided.candidates
        wrong += verdict.verdict == "wrong"
        ended += verdict.wrongly_ended or (
            verdict.verdict == "wrong" and decided.exit in irreversible_ids(sample.question.options)
        )
    n = len(data)
    asking = ASK_COST * (asked - misasked) + MISASK_COST * misasked
    total = (wrong + (ENDED_COST - 1) * ended + asking) / n
    return (total if asked / n <= MAX_ASKING else 9.0, wrong / n, asked / n, ended)


GRID = {
    "take_floor": (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6),
    "ask_margin": (0.0, 0.05, 0.1, 0.15, 0.2, 0.3),
    "irreversible_floor": (0.5, 0.6, 0.7, 0.8, 0.9, 0.95),
    "end_floor": (0.0, 0.7, 0.8, 0.9, 0.95),
    "stay_margin": (0.0, 0.05, 0.1, 0.15, 0.2),
    "global_floor": (0.0, 0.4, 0.5, 0.6, 0.7, 0.8),
    "ask_floor": (0.0, 0.1, 0.2, 0.25, 0.3, 0.35, 0.4),
    "candidate_floor": (0.1, 0.15, 0.2, 0.25),
}
"""The values each bar of the ask policy may take."""
TUNED = tuple(GRID)


def tune(data: list[Sample], oof: list[dict[str, float]], base: Calibration) -> Calibration:
    """The policy's bars with the lowest cost on the out-of-fold confidences: each bar in
    turn set to its best value on `GRID`, the others held, until none moves (from a few
    starting points; `base`'s reading constants kept)."""
    starts = (
        replace(base, take_floor=0.5, ask_margin=0.1, irreversible_floor=0.8, stay_margin=0.1),
        replace(base, take_floor=0.4, ask_margin=0.05, irreversible_floor=0.7, stay_margin=0.0),
        replace(base, take_floor=0.6, ask_margin=0.2, irreversible_floor=0.9, stay_margin=0.2),
    )
    best: tuple[tuple[float, ...], Calibration] | None = None
    for start in starts:
        cal, scored = start, cost(data, oof, start)
        for _ in range(6):
            moved = False
            for name, values in GRID.items():
                for value in values:
                    tried = replace(cal, **{name: value})
                    found = cost(data, oof, tried)
                    if found < scored:
                        cal, scored, moved = tried, found, True
            if not moved:
                break
        if best is None or scored < best[0]:
            best = (scored, cal)
    assert best is not None
    cost_, wrong, asking, ended = best[0]
    print(
        f"policy, out of fold: cost {cost_:.3f}, wrong {wrong:.1%}, asking {asking:.1%}, "
        f"wrongly ended {ended}"
    )
    return best[1]


def report(chooser: OfflineChooser, paths: tuple[Path, ...], title: str) -> None:
    every = []
    print(f"\n== {title}")
    for path in paths:
        outcomes = run_chooser(chooser, load_cases(path))
        every += outcomes
        print(f"  {set_name(path):12s} {breakdown(outcomes)['overall'].line()}")
    for key, figures in sorted(breakdown(every).items()):
        print(f"  {key:28s} {figures.line()}")


def best_penalty(
    data: list[Sample], folds: int, quiet: bool = False
) -> tuple[float, tuple[float, int, list[dict[str, float]]]]:
    """The penalty with the lowest out-of-fold log loss, with (loss, right, confidences)."""
    scored = {}
    for penalty in PENALTIES:
        oof = out_of_fold(data, penalty, folds)
        right = sum(
            max(c, key=lambda k: c[k]) == s.case.expect for s, c in zip(data, oof, strict=True)
        )
        loss = log_loss(data, oof)
        scored[penalty] = (loss, right, oof)
        if not quiet:
            print(
                f"penalty {penalty}: out-of-fold top-1 {right}/{len(data)} "
                f"({right / len(data):.1%}), log loss {loss:.4f}"
            )
    penalty = min(scored, key=lambda p: scored[p][0])
    return penalty, scored[penalty]


def read_constants(chooser: OfflineChooser, folds: int) -> OfflineChooser:
    """The chooser with each reading constant (`READING`) set in turn to the value whose
    features give the lowest out-of-fold log loss, the others held."""
    cal = chooser.calibration
    for name, values in READING.items():
        losses = {}
        for value in values:
            tried = OfflineChooser(
                embedder=chooser.embedder, calibration=replace(cal, **{name: value})
            )
            losses[value] = best_penalty(samples(tried, FIT_SETS), folds, quiet=True)[1][0]
        cal = replace(cal, **{name: min(losses, key=losses.__getitem__)})
        print(f"{name}: " + ", ".join(f"{v} → {loss:.4f}" for v, loss in losses.items()))
    return OfflineChooser(embedder=chooser.embedder, calibration=cal)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--heldout", action="store_true", help="print the held-out figures")
    parser.add_argument("--dry-run", action="store_true", help="do not write the weights")
    parser.add_argument("--reading", action="store_true", help="choose the reading constants")
    args = parser.parse_args()
    started = time.perf_counter()
    chooser = OfflineChooser()
    if args.reading:
        chooser = read_constants(chooser, args.folds)
    data = samples(chooser, FIT_SETS)
    print(
        f"{len(data)} choices from {len(FIT_SETS)} development sets "
        f"({time.perf_counter() - started:.0f} s)"
    )
    penalty, (loss, right, oof) = best_penalty(data, args.folds)
    read = {k: getattr(chooser.calibration, k) for k in READING}
    cal = tune(data, oof, Calibration(**read))
    weights = fit(data, penalty)
    about = {
        "fitted_on": [set_name(p) for p in FIT_SETS],
        "choices": len(data),
        "penalty": penalty,
        "out_of_fold_top1": round(right / len(data), 4),
        "out_of_fold_log_loss": round(loss, 4),
    }
    calibration = {k: v for k, v in asdict(cal).items() if k in TUNED or k in READING}
    data_out = {
        "features": list(features.NAMES),
        "weights": [round(float(w), 6) for w in weights],
        "calibration": calibration,
        "about": about,
    }
    print(json.dumps({"calibration": calibration, "about": about}, indent=1))
    for name, weight in sorted(zip(features.NAMES, weights, strict=True), key=lambda x: -abs(x[1])):
        print(f"  {name:22s} {weight:+.3f}")
    if not args.dry_run:
        OUT.write_text(json.dumps(data_out, indent=1) + "\n", encoding="utf-8")
    fitted = OfflineChooser(
        embedder=chooser.embedder,
        calibration=cal,
        weights=from_data(data_out, features.NAMES),
    )
    report(fitted, FIT_SETS, "development sets (fitted on: in-sample)")
    if args.heldout:
        report(fitted, HELD_OUT, "held-out sets (never fitted or tuned on)")


def with_scorer(chooser: OfflineChooser, scorer: Scorer) -> OfflineChooser:
    return OfflineChooser(embedder=chooser.embedder, weights=scorer)


if __name__ == "__main__":
    main()
