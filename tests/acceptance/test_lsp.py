"""`cgraph lsp` driven end to end by a real LSP client (pytest-lsp) over stdio.

One server per module, on a copy of `tests/fixtures/lsp/` (a graph, its sub-graph, its
tool module and its test file); each test opens the files it needs as an editor would.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as t
from pytest_lsp import ClientServerConfig, LanguageClient

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "lsp"
ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("desk")
    for item in FIXTURES.iterdir():
        shutil.copy(item, target / item.name)
    return target.resolve()


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "cgraph", "lsp"],
        server_env={**os.environ, "PYTHONPATH": str(ROOT)},
    ),
)
async def client(lsp_client: LanguageClient, folder: Path):  # type: ignore[no-untyped-def]
    registered: list[t.RegistrationParams] = []

    @lsp_client.feature(t.CLIENT_REGISTER_CAPABILITY)
    def register(params: t.RegistrationParams) -> None:
        registered.append(params)  # as an editor does: the server watches files from now on

    params = t.InitializeParams(
        capabilities=pytest_lsp.client_capabilities("visual-studio-code"),
        root_uri=folder.as_uri(),
        initialization_options={"debounce": 0.01},
    )
    await lsp_client.initialize_session(params)
    yield
    await lsp_client.shutdown_session()


def _uri(folder: Path, name: str) -> str:
    return (folder / name).as_uri()


async def _open(
    client: LanguageClient,
    folder: Path,
    name: str,
    text: str | None = None,
    codes: list[str] | None = None,
) -> tuple[str, list[t.Diagnostic]]:
    """Open a file (its text on disk unless given) and wait for its diagnostics."""
    uri = _uri(folder, name)
    body = (folder / name).read_text(encoding="utf-8") if text is None else text
    client.diagnostics.pop(uri, None)
    item = t.TextDocumentItem(uri, "yaml", 1, body)
    client.text_document_did_open(t.DidOpenTextDocumentParams(item))
    return uri, await _diagnostics(client, uri, codes)


async def _diagnostics(
    client: LanguageClient, uri: str, codes: list[str] | None = None
) -> list[t.Diagnostic]:
    """The next diagnostics published for `uri` (with `codes`: the first with those codes;
    a lint of an earlier text may still be under way)."""
    for _ in range(400):
        found = client.diagnostics.pop(uri, None)
        if found is not None and (codes is None or [d.code for d in found] == codes):
            return list(found)
        await asyncio.sleep(0.025)
    raise AssertionError(f"no diagnostics {codes or ''} published for {uri}")


def _change(client: LanguageClient, uri: str, version: int, text: str) -> None:
    change = t.TextDocumentContentChangeWholeDocument(text)
    identifier = t.VersionedTextDocumentIdentifier(uri=uri, version=version)
    client.text_document_did_change(t.DidChangeTextDocumentParams(identifier, [change]))


def _close(client: LanguageClient, uri: str) -> None:
    client.text_document_did_close(t.DidCloseTextDocumentParams(t.TextDocumentIdentifier(uri)))


def _position(text: str, needle: str, offset: int = 0) -> t.Position:
    index = text.index(needle) + offset
    line = text.count("\n", 0, index)
    return t.Position(line, index - (text.rfind("\n", 0, index) + 1))


async def test_diagnostics_on_open_change_and_save(client: LanguageClient, folder: Path) -> None:
    text = (folder / "desk.yaml").read_text(encoding="utf-8")
    uri, found = await _open(client, folder, "desk.yaml")
    assert found == []
    broken = text.replace("next_state: reserve", "next_state: reserv")
    _change(client, uri, 2, broken)
    found = await _diagnostics(client, uri)
    unknown = next(d for d in found if d.code == "unknown-state")
    assert unknown.severity == t.DiagnosticSeverity.Error
    assert unknown.range.start == _position(broken, "reserv\n")
    assert unknown.range.end == _position(broken, "reserv\n", len("reserv"))
    assert "did you mean `reserve`?" in unknown.message
    assert unknown.code_description is not None
    assert unknown.code_description.href.endswith("lint-rules/#unknown-state")
    assert unknown.data == {"old": "reserv", "new": "reserve"}
    # The quick fix lint proposes, applied through a code action.
    context = t.CodeActionContext(diagnostics=[unknown])
    actions = await client.text_document_code_action_async(
        t.CodeActionParams(t.TextDocumentIdentifier(uri), unknown.range, context)
    )
    assert actions is not None
    fix = next(a for a in actions if isinstance(a, t.CodeAction))
    assert fix.title == "Change to `reserve`"
    assert fix.edit is not None and fix.edit.changes is not None
    (edit,) = fix.edit.changes[uri]
    assert (edit.range, edit.new_text) == (unknown.range, "reserve")
    _change(client, uri, 3, text)
    assert await _diagnostics(client, uri) == []
    client.text_document_did_save(t.DidSaveTextDocumentParams(t.TextDocumentIdentifier(uri)))
    assert await _diagnostics(client, uri) == []
    _close(client, uri)


async def test_test_files_are_linted(client: LanguageClient, folder: Path) -> None:
    text = (folder / "desk.test.yaml").read_text(encoding="utf-8")
    broken = text.replace("graph: desk.yaml", "graph: desks.yaml")
    uri, found = await _open(client, folder, "desk.test.yaml", broken, ["graph-missing"])
    assert found[0].range.start == _position(broken, "desks.yaml")
    misspelt = text.replace("user:", "usr:", 1)
    _change(client, uri, 2, misspelt)
    found = await _diagnostics(client, uri)
    assert {d.code for d in found} == {"unknown-key", "missing-key"}
    unknown = next(d for d in found if d.code == "unknown-key")
    assert unknown.range.start == _position(misspelt, "usr:")
    assert unknown.data == {"old": "usr", "new": "user"}
    _close(client, uri)


async def test_sim_files_are_linted_against_the_graph_as_the_editor_holds_it(
    client: LanguageClient, folder: Path
) -> None:
    text = (folder / "desk.sim.yaml").read_text(encoding="utf-8")
    broken = text.replace("reach: [reserve]", "reach: [reserv]").replace("party: 4", "partyy: 4")
    uri, found = await _open(
        client, folder, "desk.sim.yaml", broken, ["unknown-slot", "unknown-state"]
    )
    slot, state = found
    assert slot.range == t.Range(
        _position(broken, "partyy"), _position(broken, "partyy", len("partyy"))
    )
    assert "did you mean `party`?" in slot.message and slot.data == {
        "old": "partyy",
        "new": "party",
    }
    assert state.range.start == _position(broken, "reserv]")
    assert state.severity == t.DiagnosticSeverity.Error and state.data["new"] == "reserve"
    _change(client, uri, 2, text)
    assert await _diagnostics(client, uri, []) == []
    # The graph renamed in its buffer, unsaved: the sim file's goal now names no state.
    desk_text = (folder / "desk.yaml").read_text(encoding="utf-8")
    desk, _ = await _open(client, folder, "desk.yaml")
    _change(client, desk, 2, desk_text.replace("reserve", "reserved"))
    (found_state,) = await _diagnostics(client, uri, ["unknown-state"])
    assert "did you mean `reserved`?" in found_state.message
    _change(client, desk, 3, desk_text)
    assert await _diagnostics(client, uri, []) == []
    _close(client, desk)
    _close(client, uri)


async def test_sim_file_completion(client: LanguageClient, folder: Path) -> None:
    text = (folder / "desk.sim.yaml").read_text(encoding="utf-8")
    uri, _ = await _open(client, folder, "desk.sim.yaml")

    async def at(edited: str, needle: str) -> list[str]:
        return await _complete(client, uri, edited, _position(edited, needle, len(needle)))

    states = ["greet", "reserve", "confirm", "bye"]
    assert await at(text.replace("reach: [reserve]", "reach: [r"), "reach: [r") == states
    assert await at(text.replace("never: []", "never: [b"), "never: [b") == states
    says = text.replace("      greet: [", "      g\n      greet: [")
    assert await at(says, "\n      g") == states
    facts = text.replace("facts: {party: 4}", "facts:\n      p")
    assert await at(facts, "facts:\n      p") == ["party"]
    keys = await _items(client, uri, text.replace("runs: 2", "ru"), "\nru")
    assert "runs" in keys and "max_turns" in keys and "cases" not in keys
    assert keys["runs"] == "Runs per persona, each with its own seed."
    _close(client, uri)


async def test_a_subgraph_change_relints_its_parent(client: LanguageClient, folder: Path) -> None:
    desk, _ = await _open(client, folder, "desk.yaml")
    desk_text = (folder / "desk.yaml").read_text(encoding="utf-8")
    sub_text = (folder / "sub.yaml").read_text(encoding="utf-8")
    sub, _ = await _open(client, folder, "sub.yaml")
    renamed = sub_text.replace("read_back", "read_it_back")
    _change(client, sub, 2, renamed)
    found = await _diagnostics(client, desk, ["unknown-graph-target"])
    assert "did you mean `read_it_back`?" in found[0].message
    assert found[0].range.start == _position(desk_text, "sub.yaml#read_back")
    _change(client, sub, 3, sub_text)
    assert await _diagnostics(client, desk, []) == []
    _close(client, sub)
    _close(client, desk)


async def _complete(client: LanguageClient, uri: str, text: str, at: t.Position) -> list[str]:
    identifier = t.VersionedTextDocumentIdentifier(uri=uri, version=9)
    change = t.TextDocumentContentChangeWholeDocument(text)
    client.text_document_did_change(t.DidChangeTextDocumentParams(identifier, [change]))
    found = await client.text_document_completion_async(
        t.CompletionParams(t.TextDocumentIdentifier(uri), at)
    )
    assert isinstance(found, t.CompletionList)
    return [item.label for item in found.items]


async def test_completion(client: LanguageClient, folder: Path) -> None:
    text = (folder / "desk.yaml").read_text(encoding="utf-8")
    uri, _ = await _open(client, folder, "desk.yaml")

    async def at(edited: str, needle: str) -> list[str]:
        return await _complete(client, uri, edited, _position(edited, needle, len(needle)))

    states = ["greet", "reserve", "confirm", "bye"]
    assert await at(text.replace("next_state: reserve", "next_state: re"), "next_state: re") == [
        *states,
        "END",
        "RESUME",
        "sub.yaml#",
    ]
    assert await at(text.replace("start: greet", "start: g"), "start: g") == states
    assert await at(text.replace("except: [bye]", "except: [b"), "except: [b") == states
    crossed = text.replace("next_state: sub.yaml#read_back", "next_state: sub.yaml#r")
    assert await at(crossed, "next_state: sub.yaml#r") == ["read_back"]
    topology = text.replace("  [A] bye\n    (The user", "  [A] b\n    (The user")
    assert await at(topology, "  [A] b") == states
    names = await at(text.replace("How many of you?", "How many {{ p"), "{{ p")
    assert names[:3] == ["party", "venue", "booking"] and "message" in names
    assert await at(text.replace("collect: [party]", "collect: [p"), "collect: [p") == ["party"]
    guarded = text.replace("        early: false\n", "        early: false\n        when: p\n")
    names = await at(guarded, "when: p")
    assert names[:3] == ["party", "venue", "booking"] and "message" in names
    assert await at(text.replace("    tool: book", "    tool: b"), "tool: b") == ["book"]
    arguments = text.replace('      venue: "{{ venue }}"\n', "      v\n")
    assert await at(arguments, "\n      v") == ["party", "venue"]
    keys = await _items(client, uri, text.replace("    result: booking", "    re"), "\n    re")
    assert "result" in keys and "on_error" in keys and "actions" not in keys
    assert keys["result"] == "The variable that receives the tool's result."
    _close(client, uri)


async def _items(client: LanguageClient, uri: str, text: str, needle: str) -> dict[str, str]:
    """Completion labels with their documentation, at the end of `needle`."""
    identifier = t.VersionedTextDocumentIdentifier(uri=uri, version=10)
    change = t.TextDocumentContentChangeWholeDocument(text)
    client.text_document_did_change(t.DidChangeTextDocumentParams(identifier, [change]))
    found = await client.text_document_completion_async(
        t.CompletionParams(t.TextDocumentIdentifier(uri), _position(text, needle, len(needle)))
    )
    assert isinstance(found, t.CompletionList)
    docs = {}
    for item in found.items:
        doc = item.documentation
        docs[item.label] = doc.value if isinstance(doc, t.MarkupContent) else str(doc or "")
    return docs


async def test_definition_references_and_hover(client: LanguageClient, folder: Path) -> None:
    text = (folder / "desk.yaml").read_text(encoding="utf-8")
    uri, _ = await _open(client, folder, "desk.yaml")
    document = t.TextDocumentIdentifier(uri)
    cross = _position(text, "sub.yaml#read_back", len("sub.yaml#r"))
    (found,) = await client.text_document_definition_async(t.DefinitionParams(document, cross))
    sub = (folder / "sub.yaml").read_text(encoding="utf-8")
    assert found.uri == _uri(folder, "sub.yaml")
    assert found.range.start == _position(sub, "read_back:")
    tool = _position(text, "tool: book", len("tool: b"))
    places = await client.text_document_definition_async(t.DefinitionParams(document, tool))
    assert [p.uri for p in places] == [uri, _uri(folder, "desk_tools.py")]
    assert places[0].range.start == _position(text, "book\n    description: Book")
    assert places[1].range.start.line == 3  # `def book(` in desk_tools.py
    for used, declared in (
        ("collect: [party]", "party:\n    type"),
        ("{{ venue }}!", "venue: the"),
    ):
        where = _position(text, used, used.index(declared[:2]) + 1)
        found = await client.text_document_definition_async(t.DefinitionParams(document, where))
        assert [(f.uri, f.range.start) for f in found] == [(uri, _position(text, declared))]
    party = _position(text, "party:\n    type")
    refs = await client.text_document_references_async(
        t.ReferenceParams(
            context=t.ReferenceContext(include_declaration=False),
            text_document=document,
            position=party,
        )
    )
    assert {r.range.start.line for r in refs} >= {
        _position(text, "collect: [party]").line,
        _position(text, 'party: "{{ party }}"').line,
    }
    reserve = _position(text, "reserve:")
    context = t.ReferenceContext(include_declaration=True)
    refs = await client.text_document_references_async(
        t.ReferenceParams(context=context, text_document=document, position=reserve)
    )
    tests = (folder / "desk.test.yaml").read_text(encoding="utf-8")
    sims = (folder / "desk.sim.yaml").read_text(encoding="utf-8")
    assert sorted((r.uri, r.range.start.line) for r in refs) == sorted(
        [
            (uri, _position(text, "next_state: reserve").line),
            (uri, reserve.line),
            (uri, _position(text, "[S] reserve\n").line),
            (uri, _position(text, "[S] reserve ->").line),
            (_uri(folder, "desk.test.yaml"), _position(tests, "[reserve]").line),
            (_uri(folder, "desk.test.yaml"), _position(tests, "[reserve, confirm]").line),
            (_uri(folder, "desk.sim.yaml"), _position(sims, "[reserve]").line),
        ]
    )
    hover = await client.text_document_hover_async(t.HoverParams(document, reserve))
    assert hover is not None and isinstance(hover.contents, t.MarkupContent)
    assert "**side_effect state** `reserve`" in hover.contents.value
    assert "Book the table." in hover.contents.value
    slot = await client.text_document_hover_async(
        t.HoverParams(document, _position(text, "collect: [party]", len("collect: [p")))
    )
    assert slot is not None and isinstance(slot.contents, t.MarkupContent)
    assert slot.contents.value == "**slot** `party`: integer\n\nHow many people the table is for."
    key = await client.text_document_hover_async(
        t.HoverParams(document, _position(text, "objective: Book", 2))
    )
    assert key is not None and isinstance(key.contents, t.MarkupContent)
    assert key.contents.value == "`objective`: What this state is for: every state has one."
    _close(client, uri)


async def test_hover_explains_a_diagnostic(client: LanguageClient, folder: Path) -> None:
    # An exit that says the party size is given means to wait: one that does not is asked.
    said = (folder / "desk.yaml").read_text(encoding="utf-8")
    written = said.replace("The user gave the party size.", "The user is ready to book.")
    text = written.replace("        early: false\n", "")
    uri, found = await _open(client, folder, "desk.yaml", text, ["exit-waits-for-slots"])
    (waits,) = found
    assert waits.code == "exit-waits-for-slots"
    document = t.TextDocumentIdentifier(uri)
    hover = await client.text_document_hover_async(t.HoverParams(document, waits.range.start))
    assert hover is not None and isinstance(hover.contents, t.MarkupContent)
    assert "`exit-waits-for-slots`: An exit of a state that collects slots" in hover.contents.value
    assert "(https://cgraph.dev/reference/lint-rules/#exit-waits-for-slots)" in hover.contents.value
    context = t.CodeActionContext(diagnostics=[waits])
    actions = await client.text_document_code_action_async(
        t.CodeActionParams(document, waits.range, context)
    )
    assert actions is not None
    titles = [a.title for a in actions]
    assert titles == [
        "Add `early: true` (may leave before the slots are filled)",
        "Add `early: false` (waits)",
    ]
    action = actions[1]
    assert isinstance(action, t.CodeAction) and action.edit and action.edit.changes
    (edit,) = action.edit.changes[uri]
    lines = text.split("\n")
    line = edit.range.start.line
    fixed = "\n".join([*lines[:line], edit.new_text.rstrip("\n"), *lines[line:]])
    assert fixed == written
    _close(client, uri)


async def test_rename_reaches_the_topology_the_tests_and_the_sims(
    client: LanguageClient, folder: Path
) -> None:
    text = (folder / "desk.yaml").read_text(encoding="utf-8")
    uri, _ = await _open(client, folder, "desk.yaml")
    document = t.TextDocumentIdentifier(uri)
    where = _position(text, "next_state: reserve", len("next_state: "))
    ready = await client.text_document_prepare_rename_async(t.PrepareRenameParams(document, where))
    assert ready == t.Range(where, t.Position(where.line, where.character + len("reserve")))
    edit = await client.text_document_rename_async(t.RenameParams(document, where, "book_table"))
    assert edit is not None and edit.changes is not None
    sim = _uri(folder, "desk.sim.yaml")
    assert sorted(edit.changes) == sorted([_uri(folder, "desk.test.yaml"), sim, uri])
    renamed = _apply(text, edit.changes[uri])
    assert "reserve" not in renamed
    assert renamed.count("book_table") == 4  # the key, the exit and the topology's two
    tests = (folder / "desk.test.yaml").read_text(encoding="utf-8")
    assert _apply(tests, edit.changes[_uri(folder, "desk.test.yaml")]) == tests.replace(
        "reserve", "book_table"
    )
    sims = (folder / "desk.sim.yaml").read_text(encoding="utf-8")
    assert _apply(sims, edit.changes[sim]) == sims.replace("reserve", "book_table")
    # The renamed graph lints clean: nothing was missed.
    _change(client, uri, 5, renamed)
    assert await _diagnostics(client, uri, []) == []
    _close(client, uri)


async def test_rename_a_slot_where_the_graph_the_tests_and_the_sims_name_it(
    client: LanguageClient, folder: Path
) -> None:
    text = (folder / "desk.yaml").read_text(encoding="utf-8")
    uri, _ = await _open(client, folder, "desk.yaml")
    document = t.TextDocumentIdentifier(uri)
    where = _position(text, "collect: [party]", len("collect: ["))
    edit = await client.text_document_rename_async(t.RenameParams(document, where, "guests"))
    assert edit is not None and edit.changes is not None
    renamed = _apply(text, edit.changes[uri])
    # The slot's key, `collect:` and the template; the tool's own parameter `party` stays.
    assert "  guests:\n    type: integer" in renamed and "collect: [guests]" in renamed
    assert 'party: "{{ guests }}"' in renamed and "required: [party]" in renamed
    assert renamed.count("guests") == 3
    tests = (folder / "desk.test.yaml").read_text(encoding="utf-8")
    renamed_tests = _apply(tests, edit.changes[_uri(folder, "desk.test.yaml")])
    assert renamed_tests == tests.replace("{party:", "{guests:")  # expected values, by slot
    assert "variables: {venue: the Lantern}" in renamed_tests  # a variable is not the slot
    sims = (folder / "desk.sim.yaml").read_text(encoding="utf-8")
    assert _apply(sims, edit.changes[_uri(folder, "desk.sim.yaml")]) == sims.replace(
        "{party:", "{guests:"
    )
    _change(client, uri, 7, renamed)
    assert await _diagnostics(client, uri, []) == []
    _close(client, uri)


def _apply(text: str, edits: list[t.TextEdit]) -> str:
    lines = text.split("\n")
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character))[::-1]:
        start, end = edit.range.start, edit.range.end
        assert start.line == end.line
        row = lines[start.line]
        lines[start.line] = row[: start.character] + edit.new_text + row[end.character :]
    return "\n".join(lines)


async def test_outline_and_code_lens(client: LanguageClient, folder: Path) -> None:
    uri, _ = await _open(client, folder, "desk.yaml")
    document = t.TextDocumentIdentifier(uri)
    symbols = await client.text_document_document_symbol_async(t.DocumentSymbolParams(document))
    assert symbols is not None
    outline = {
        s.name: [c.name for c in (s.children or [])]
        for s in symbols
        if isinstance(s, t.DocumentSymbol)
    }
    assert outline == {
        "action states": ["greet", "bye"],
        "side_effect states": ["reserve"],
        "graph states": ["confirm"],
        "slots": ["party"],
        "variables": ["venue"],
        "tools": ["book"],
    }
    lenses = await client.text_document_code_lens_async(t.CodeLensParams(document))
    assert lenses is not None
    shown = sorted((lens.range.start.line, lens.command.title) for lens in lenses if lens.command)
    text = (folder / "desk.yaml").read_text(encoding="utf-8")
    assert shown == sorted(
        [
            (_position(text, "greet:").line, "▶ run 1 test (desk.test.yaml)"),
            (_position(text, "reserve:").line, "▶ run 2 tests (desk.test.yaml)"),
            (_position(text, "confirm:").line, "▶ run 1 test (desk.test.yaml)"),
        ]
    )
    command = next(
        lens.command for lens in lenses if lens.command and "2 tests" in lens.command.title
    )
    result = await client.workspace_execute_command_async(
        t.ExecuteCommandParams(command.command, command.arguments)
    )
    assert result["exit_code"] == 0, result["output"]
    assert result["output"].endswith("2 passed, 0 failed")
    _close(client, uri)


async def test_a_tool_file_change_relints_the_graph(client: LanguageClient, folder: Path) -> None:
    uri, _ = await _open(client, folder, "desk.yaml")
    tools = folder / "desk_tools.py"
    source = tools.read_text(encoding="utf-8")
    tools.write_text(source.replace("def book(", "def booking("), encoding="utf-8")
    try:
        change = t.FileEvent(tools.as_uri(), t.FileChangeType.Changed)
        client.workspace_did_change_watched_files(t.DidChangeWatchedFilesParams([change]))
        (found,) = await _diagnostics(client, uri, ["tool-handler"])
        assert "did you mean `booking`?" in found.message
    finally:
        tools.write_text(source, encoding="utf-8")
    client.workspace_did_change_watched_files(t.DidChangeWatchedFilesParams([change]))
    assert await _diagnostics(client, uri, []) == []
    _close(client, uri)
