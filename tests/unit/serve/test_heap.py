"""A served process sizes its garbage collector for a server's live set once its app is
built: the heap it imported and loaded frozen, the young generation larger."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cgraph.serve import heap, main
from cgraph.serve.options import ServeOptions
from cgraph.serve.service import Service
from tests.conftest import GRAPHS

SETTLED = """\
import gc
from cgraph.serve import heap
before = gc.get_freeze_count()
heap.settle()
print(before, gc.get_freeze_count(), *gc.get_threshold())
"""


def test_settling_freezes_what_the_process_holds_and_widens_the_young_generation() -> None:
    # In a process of its own: the collector's settings are the whole process's.
    out = subprocess.run(
        [sys.executable, "-c", SETTLED], capture_output=True, text=True, check=True
    ).stdout.split()
    before, frozen, *thresholds = map(int, out)
    assert before == 0 and frozen > 1_000  # what the process imported, out of sight
    assert thresholds == [heap.YOUNG, *heap.OLDER]
    assert gc.get_threshold()[0] < heap.YOUNG  # this process keeps Python's defaults


@pytest.mark.parametrize("entry", ["one process", "a --workers process"])
def test_a_served_process_settles_after_building_its_app_and_before_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str
) -> None:
    import uvicorn

    order: list[str] = []
    monkeypatch.setattr(heap, "settle", lambda: order.append("settled"))

    def build(service: Service, *_: Any) -> str:
        service.store.close()
        order.append("built")
        return "app"

    monkeypatch.setattr(main, "build", build)
    monkeypatch.setattr(uvicorn, "run", lambda app, **_: order.append(f"served {app}"))
    options = ServeOptions(
        graphs=(str(GRAPHS / "medical_checkin.yaml"),), store=str(tmp_path / "s"), memory="off"
    )
    if entry == "one process":
        main.run(Service(options))
        assert order == ["built", "settled", "served app"]
    else:  # uvicorn serves what the factory returns
        monkeypatch.setenv(main.OPTIONS_VARIABLE, options.to_json())
        assert main.worker_app() == "app"
        assert order == ["built", "settled"]
