"""`cgraph run` refusing to start: a clear message, and nothing heavy imported before it.

An error must end the process as soon as it is printed. Timing that would be flaky on a
busy machine; what made these exits slow was a background import of torch or chromadb
(or litellm's handlers) still running at shutdown, so the tests check, with
`python -X importtime`, that the process never imported them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.errors import SessionError
from cgraph.session import Session
from tests.commands import environment, ran
from tests.conftest import GRAPHS

CHECKIN = GRAPHS / "medical_checkin.yaml"
HEAVY = ("litellm", "chromadb", "torch", "sentence_transformers")


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, set[str]]:
    """Exit code, stderr without the import lines, and the top-level packages imported."""
    command = [sys.executable, "-X", "importtime", "-m", "cgraph", "run", *args]
    done = ran(command, ["hi"], env=environment(**(env or {})), timeout=120)
    lines = done.stderr.splitlines()
    imported = {
        line.rsplit("|", 1)[-1].strip().split(".")[0]
        for line in lines
        if line.startswith("import time:")
    }
    message = "\n".join(line for line in lines if not line.startswith("import time:"))
    return done.returncode, message, imported


def started(store: Path, user: str) -> str:
    chat = ScriptedModel({"*": {"exit": "stay", "reason": "r", "reply": "Hello"}})
    session = Session.start(CHECKIN, model=chat, user_id=user, store=store)
    session.close()
    return session.id


def test_another_users_session_is_refused_before_anything_loads(tmp_path: Path) -> None:
    ann = started(tmp_path, "ann")
    code, message, imported = run(
        str(CHECKIN), "--store", str(tmp_path), "--user", "bob", "--session", ann
    )
    assert code == 1
    assert message == (
        f"error: session `{ann}` belongs to another user than `bob`; "
        "resume it as its own user, or start a new session"
    )
    assert imported.isdisjoint(HEAVY), imported & set(HEAVY)


def test_the_library_refuses_another_users_session_too(tmp_path: Path) -> None:
    ann = started(tmp_path, "ann")
    with pytest.raises(SessionError, match="belongs to another user than `bob`"):
        Session.resume(ann, store=tmp_path, model=ScriptedModel({}), user_id="bob")
    assert (
        Session.resume(ann, store=tmp_path, model=ScriptedModel({}), user_id="ann").user_id == "ann"
    )


def test_a_missing_key_is_found_at_start_without_litellm(tmp_path: Path) -> None:
    env = {"OPENAI_API_KEY": ""}
    code, message, imported = run(
        str(CHECKIN), "--store", str(tmp_path), "--model", "gpt-4o-mini", env=env
    )
    assert code == 1
    assert (
        message == "error: model `gpt-4o-mini` needs an API key: set OPENAI_API_KEY "
        "(or pass --api-base)"
    )
    assert imported.isdisjoint(HEAVY), imported & set(HEAVY)


def test_an_unknown_model_loads_no_embedding_model_and_no_memory(tmp_path: Path) -> None:
    code, message, imported = run(
        str(CHECKIN), "--store", str(tmp_path), "--model", "nosuchprovider/x"
    )
    assert code == 1 and message.startswith("error: unknown model `nosuchprovider/x`")
    assert imported.isdisjoint({"chromadb", "torch", "sentence_transformers"})


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["missing.yaml"], "error: missing.yaml: no such file"),
        ([str(CHECKIN), "--store", str(CHECKIN)], "cannot use it as a folder"),
        (  # a byte that is not UTF-8 in an id would reach the store's text
            [str(CHECKIN), "--session", "s\udcff"],
            "error: --session: the id holds a byte that is not UTF-8 (0xff) at character 2",
        ),
        ([str(CHECKIN), "--user", "u" * 201], "error: --user: the id is 201 characters"),
    ],
)
def test_argument_errors_import_nothing_heavy(args: list[str], expected: str) -> None:
    code, message, imported = run(*args)
    assert code == 1 and expected in message
    assert imported.isdisjoint(HEAVY), imported & set(HEAVY)
