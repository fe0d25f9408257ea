"""A weak guess never ends the conversation: through the real `cgraph run --jsonl`.

"I took all my pills, no side effects" at the check-in's "Are you ready to begin?" lies a
little nearer "asks to end the session" than anything else; the check-in does not end but
asks (again, or which was meant), and goes on when the patient says they are ready; `/why`
shows confidences that agree with the choice.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.commands import CGRAPH, environment, finished
from tests.conftest import GRAPHS

CHECKIN = GRAPHS / "medical_checkin.yaml"
ENV = environment(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
MESSAGES = ["I took all my pills, no side effects", "/why", "Yes, I'm ready.", "/why"]


def test_a_weak_ending_asks_again_and_the_reason_agrees(tmp_path: Path) -> None:
    command = [str(CGRAPH), "run", str(CHECKIN), "--jsonl", "--store", str(tmp_path)]
    done = finished(command, MESSAGES, env=ENV)
    first, why, ready, why_ready = (json.loads(line) for line in done.stdout.splitlines())
    assert first["state"] == "welcome_patient" and first["path"] == ["welcome_patient"]
    assert not first["completed"] and first["reply"].endswith("?")
    decided = [d for d in why["decisions"] if d["state"] == "welcome_patient"][-1]
    assert decided["chosen"] in ("stay", "clarify")  # asked again, or asked which
    assert ready["state"] == "medication_adherence_check"
    moved = [d for d in why_ready["decisions"] if d["state"] == "welcome_patient"][-1]
    scores = moved["scores"]
    assert max(scores, key=scores.get) == "medication_adherence_check"
