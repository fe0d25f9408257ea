"""`cgraph render` and `cgraph test --html` as a person sees them: the PNG is decoded, the
report is opened in headless Chromium and its screenshot decoded too."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.session import Session
from tests.commands import CGRAPH, ran
from tests.conftest import GRAPHS

MEDICAL = GRAPHS / "medical_checkin.yaml"
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


def cgraph(*args: str) -> subprocess.CompletedProcess[str]:
    return ran([str(CGRAPH), *args])


def decode_png(data: bytes) -> tuple[int, int, bytes]:
    """Width, height and the raw scanlines of an 8-bit RGB(A) PNG (a real decode: a
    truncated or corrupt file fails here)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert zlib.crc32(kind + body) == crc, f"bad CRC in {kind!r}"
        header = body if kind == b"IHDR" else header
        idat += body if kind == b"IDAT" else b""
        pos += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour in (2, 6), (depth, colour)
    raw = zlib.decompress(idat)
    assert len(raw) == height * (1 + width * (3 if colour == 2 else 4))
    return width, height, raw


def drawn(raw: bytes) -> int:
    """How many distinct byte values the image holds: a blank page has a handful."""
    return len(set(raw[:: max(1, len(raw) // 200_000)]))


def test_render_png_is_a_real_picture_of_the_graph(tmp_path: Path) -> None:
    out = tmp_path / "medical.png"
    done = cgraph("render", str(MEDICAL), "--format", "png", "-o", str(out))
    assert done.returncode == 0, done.stderr
    width, height, raw = decode_png(out.read_bytes())
    assert width > 400 and height > 1000  # 17 states, top to bottom
    assert drawn(raw) > 50


def test_render_dot_and_mermaid_show_every_state_start_and_end() -> None:
    dot = cgraph("render", str(MEDICAL), "--format", "dot").stdout
    mermaid = cgraph("render", str(MEDICAL), "--format", "mermaid").stdout
    assert dot.startswith('digraph "medical_checkin"') and mermaid.startswith("flowchart TD")
    for state in ("welcome_patient", "determine_exercise_clearance", "START", "END"):
        assert f'"{state}"' in dot and state in mermaid
    assert '"determine_exercise_clearance" [shape=diamond' in dot


def test_render_highlights_what_a_stored_conversation_did(tmp_path: Path) -> None:
    script = {
        "welcome_patient": {"exit": "end_session", "reason": "leaving", "reply": ""},
        "end_session": {"exit": "stay", "reason": "said", "reply": "Goodbye"},
    }
    session = Session.start(MEDICAL, model=ScriptedModel(script), store=tmp_path)
    session.send("I have to go.")
    session.close()
    done = cgraph(
        "render", str(MEDICAL), "-f", "dot", "--session", session.id, "--store", str(tmp_path)
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    taken = next(x for x in lines if x.startswith('  "welcome_patient" -> "end_session"'))
    other = next(x for x in lines if x.startswith('  "welcome_patient" -> "medication_'))
    assert "penwidth=2.4" in taken and "style=dashed" in other
    missing = cgraph("render", str(MEDICAL), "--session", "x", "--store", str(tmp_path / "no"))
    assert missing.returncode == 2 and "no such store folder" in missing.stderr
    other = GRAPHS / "restaurant_reservation.yaml"
    wrong = cgraph("render", str(other), "--session", session.id, "--store", str(tmp_path))
    assert wrong.returncode == 2 and wrong.stdout == ""
    assert "ran graph `medical_checkin`, not `restaurant_reservation`" in wrong.stderr


def test_render_of_a_broken_graph_is_a_located_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("cgraph: 1\nname: x\nstart: a\nstates: {a: {type: nope}}\n")
    done = cgraph("render", str(bad))
    assert done.returncode == 2 and f"{bad}:4:" in done.stderr and "Traceback" not in done.stderr


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail("Chromium is missing: `make test` installs it (apt-get install chromium)")
    return found


def test_the_html_report_opens_in_chromium_with_the_pictures(tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    tests = GRAPHS / "tests" / "research.test.yaml"
    done = cgraph("test", str(tests), "-k", "unknown topic", "--html", str(report))
    assert done.returncode == 0, done.stdout + done.stderr
    browser = [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(
        [*browser, "--dump-dom", report.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    ).stdout
    assert "1 passed, 0 failed, 3 skipped" in dom
    assert dom.count("<svg") == 1 and "present_findings" in dom
    assert "exit <b>END</b> of <b>present_findings</b> is taken by no case" in dom
    shot = tmp_path / "shot.png"
    subprocess.run(
        [*browser, "--window-size=1200,1400", f"--screenshot={shot}", report.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    width, height, raw = decode_png(shot.read_bytes())
    assert (width, height) == (1200, 1400) and drawn(raw) > 50


def report_dom(tmp_path: Path, *selected: str) -> str:
    """`cgraph test --html` on the patient intake's cases named, opened in Chromium."""
    report = tmp_path / "report.html"
    tests = GRAPHS / "tests" / "patient_intake.test.yaml"
    done = cgraph(
        "test", str(tests), *(a for k in selected for a in ("-k", k)), "--html", str(report)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    browser = [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    return subprocess.run(
        [*browser, "--dump-dom", report.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout


ROUTE_EDGE = re.compile(r"<title>verify_birthday-&gt;identity_failed</title>\s*<path[^>]*>")


def test_the_html_report_shows_whether_three_tries_ran_out(tmp_path: Path) -> None:
    missed = report_dom(tmp_path / "missed", "front desk can")
    named = "on limit max_visits of <b>verify_birthday</b> → <b>identity_failed</b>"
    assert f"{named} is taken by no case" in missed
    (edge,) = ROUTE_EDGE.findall(missed.replace("&#45;", "-"))
    assert 'stroke="#dc2626"' in edge and "stroke-dasharray" in edge
    taken = report_dom(tmp_path / "taken", "three wrong birthdays")
    assert named not in taken
    (edge,) = ROUTE_EDGE.findall(taken.replace("&#45;", "-"))
    assert 'stroke="#15803d"' in edge and "stroke-dasharray" in edge
