"""The code lens's `cgraph test` command: the cases asked for, allowed what the server is."""

from __future__ import annotations

from pathlib import Path

from cgraph.lsp import outline
from cgraph.lsp.files import Files
from cgraph.spec.limits import ReadLimits
from cgraph.spec.trust import Trust


def test_the_test_run_is_allowed_what_the_server_lints_with() -> None:
    files = Files(trust=Trust(("mytools",), (Path("/srv/shared"),)), limits=ReadLimits(500))
    assert outline.test_command(Path("a.test.yaml"), ["one", "two"], files) == [
        *("test", "a.test.yaml", "-k", "one", "-k", "two"),
        *("--allow-module", "mytools", "--allow-path", "/srv/shared", "--max-file-size", "500"),
    ]
    plain = outline.test_command(Path("a.test.yaml"), [], Files())
    assert plain == ["test", "a.test.yaml", "--max-file-size", str(ReadLimits().file_size)]
