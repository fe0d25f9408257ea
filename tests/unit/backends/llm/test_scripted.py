"""`scripted:FILE`: a script that cannot be read says where and why, in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from cgraph.backends.llm.scripted import load_script
from cgraph.errors import CgraphError


def test_a_missing_script_names_the_file_and_the_reason(tmp_path: Path) -> None:
    with pytest.raises(CgraphError) as raised:
        load_script(tmp_path / "nope.yaml")
    assert (
        raised.value.message
        == f"cannot read model script {tmp_path / 'nope.yaml'}: No such file or directory"
    )


def test_a_yaml_error_in_a_script_is_located_with_a_hint(tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text('ask:\n  - {exit: stay, reply: "Hello}\n')
    with pytest.raises(CgraphError) as raised:
        load_script(script)
    message = raised.value.message
    assert message.startswith(f"model script {script}:2:25: YAML syntax: the quoted text")
    assert "\n" not in message
