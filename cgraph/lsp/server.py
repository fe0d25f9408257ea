"""The protocol side of `cgraph lsp` (pygls over stdio): requests in, the answers of
`complete`, `hover`, `edits` and `outline` out, and lint's diagnostics published.

Lint runs in one worker thread, so requests stay answered while a big graph is linted.
A change waits `debounce` seconds (0.05 unless the client's `initializationOptions` say
otherwise) for the next keystroke; a lint under way is never cancelled, and its result is
dropped when the buffer changed meanwhile (the newer text's lint follows).
"""

from __future__ import annotations

import asyncio
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from lsprotocol import types as t
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from cgraph.lint.walk import looks_like_graph_text
from cgraph.lsp import cursor, edits, hover, outline
from cgraph.lsp.complete import complete
from cgraph.lsp.files import Files, resolved
from cgraph.lsp.report import to_lsp
from cgraph.spec.limits import ReadLimits
from cgraph.spec.trust import Trust
from cgraph.version import __version__

DEBOUNCE = 0.05
TRIGGERS = ["#", "{", " ", "[", ",", ":"]


class Server(LanguageServer):
    def __init__(self) -> None:
        super().__init__("cgraph", __version__)
        self.files = Files()
        self.debounce = DEBOUNCE
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cgraph-lint")
        self.waiting: dict[Path, asyncio.Task[None]] = {}
        """Lints still waiting out the debounce, by file (a lint under way is not here)."""
        self.published: dict[Path, list[t.Diagnostic]] = {}


server = Server()


def _path(uri: str) -> Path:
    return resolved(to_fs_path(uri) or uri)


def _ours(path: Path, text: str) -> bool:
    """A graph, test or other cgraph file; the editor's other YAML is left alone."""
    return looks_like_graph_text(text)


def schedule(ls: Server, path: Path, delay: float) -> None:
    """Lint `path` after `delay`, replacing a lint still waiting for it."""
    waiting = ls.waiting.pop(path, None)
    if waiting is not None:
        waiting.cancel()
    ls.waiting[path] = asyncio.ensure_future(_lint(ls, path, delay))


async def _lint(ls: Server, path: Path, delay: float) -> None:
    await asyncio.sleep(delay)
    ls.waiting.pop(path, None)
    loop = asyncio.get_running_loop()
    before = ls.files.open.get(path)
    linted = await loop.run_in_executor(ls.worker, ls.files.lint, path)
    if ls.files.open.get(path) != before:
        return  # the buffer changed while it was linted; that change's lint follows
    found = [to_lsp(d, linted.text) for d in linted.diagnostics]
    ls.published[path] = found
    ls.text_document_publish_diagnostics(t.PublishDiagnosticsParams(path.as_uri(), found))


def _changed(ls: Server, path: Path, delay: float) -> None:
    if path in ls.files.open:
        schedule(ls, path, delay)
    for other in ls.files.dependents(path):
        schedule(ls, other, delay)


@server.feature(t.INITIALIZE)
def initialize(ls: Server, params: t.InitializeParams) -> None:
    folders = params.workspace_folders or []
    root = folders[0].uri if folders else params.root_uri
    if root:
        ls.files.root = _path(root)
    options = params.initialization_options
    if isinstance(options, dict) and isinstance(options.get("debounce"), int | float):
        ls.debounce = max(0.0, float(options["debounce"]))


@server.feature(t.INITIALIZED)
def initialized(ls: Server, params: t.InitializedParams) -> None:
    """Ask to hear of graph and tool files changed on disk, where the client can tell."""
    watching = ls.client_capabilities.workspace
    changes = watching.did_change_watched_files if watching else None
    if changes is None or not changes.dynamic_registration:
        return
    watchers = [t.FileSystemWatcher(glob) for glob in ("**/*.yaml", "**/*.yml", "**/*.py")]
    options = t.DidChangeWatchedFilesRegistrationOptions(watchers)
    registration = t.Registration(
        "cgraph-files", t.WORKSPACE_DID_CHANGE_WATCHED_FILES, register_options=options
    )
    ls.client_register_capability(t.RegistrationParams([registration]))


@server.feature(t.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: Server, params: t.DidOpenTextDocumentParams) -> None:
    path = _path(params.text_document.uri)
    if _ours(path, params.text_document.text):
        ls.files.open[path] = params.text_document.text
        _changed(ls, path, 0)


@server.feature(t.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: Server, params: t.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    path = _path(uri)
    text = ls.workspace.get_text_document(uri).source
    if path in ls.files.open or _ours(path, text):
        ls.files.open[path] = text
        _changed(ls, path, ls.debounce)


@server.feature(t.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: Server, params: t.DidSaveTextDocumentParams) -> None:
    _changed(ls, _path(params.text_document.uri), 0)


@server.feature(t.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: Server, params: t.DidCloseTextDocumentParams) -> None:
    path = _path(params.text_document.uri)
    if ls.files.open.pop(path, None) is not None:
        ls.published.pop(path, None)
        ls.worker.submit(ls.files.kept.forget, str(path))  # the thread that reads
        ls.text_document_publish_diagnostics(t.PublishDiagnosticsParams(path.as_uri(), []))
        for other in ls.files.dependents(path):  # they read it from disk again
            schedule(ls, other, 0)


@server.feature(t.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def watched(ls: Server, params: t.DidChangeWatchedFilesParams) -> None:
    for change in params.changes:
        _changed(ls, _path(change.uri), 0)


@server.feature(t.TEXT_DOCUMENT_COMPLETION, t.CompletionOptions(trigger_characters=TRIGGERS))
def completion(ls: Server, params: t.CompletionParams) -> t.CompletionList:
    path = _path(params.text_document.uri)
    text = ls.workspace.get_text_document(params.text_document.uri).source
    line, column = params.position.line, params.position.character
    items = complete(ls.files, path, cursor.at(text, line, column), line, column)
    return t.CompletionList(is_incomplete=False, items=items)


@server.feature(t.TEXT_DOCUMENT_HOVER)
def on_hover(ls: Server, params: t.HoverParams) -> t.Hover | None:
    path = _path(params.text_document.uri)
    where = params.position
    return hover.hover(ls.files, path, where.line, where.character, ls.published.get(path, []))


@server.feature(t.TEXT_DOCUMENT_DEFINITION)
def definition(ls: Server, params: t.DefinitionParams) -> list[t.Location]:
    where = params.position
    return edits.definition(ls.files, _path(params.text_document.uri), where.line, where.character)


@server.feature(t.TEXT_DOCUMENT_REFERENCES)
def references(ls: Server, params: t.ReferenceParams) -> list[t.Location]:
    where = params.position
    found = edits.symbol_at(ls.files, _path(params.text_document.uri), where.line, where.character)
    if found is None:
        return []
    declaration = params.context.include_declaration
    return edits.references(ls.files, found.symbol, declaration=declaration)


@server.feature(t.TEXT_DOCUMENT_PREPARE_RENAME)
def prepare_rename(ls: Server, params: t.PrepareRenameParams) -> t.Range | None:
    where = params.position
    path = _path(params.text_document.uri)
    return edits.prepare_rename(ls.files, path, where.line, where.character)


@server.feature(t.TEXT_DOCUMENT_RENAME)
def rename(ls: Server, params: t.RenameParams) -> t.WorkspaceEdit | None:
    where = params.position
    path = _path(params.text_document.uri)
    return edits.rename(ls.files, path, where.line, where.character, params.new_name)


@server.feature(
    t.TEXT_DOCUMENT_CODE_ACTION, t.CodeActionOptions(code_action_kinds=[t.CodeActionKind.QuickFix])
)
def code_action(ls: Server, params: t.CodeActionParams) -> list[t.CodeAction]:
    uri = params.text_document.uri
    text = ls.workspace.get_text_document(uri).source
    return edits.fixes(text, uri, list(params.context.diagnostics))


@server.feature(t.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
def document_symbol(ls: Server, params: t.DocumentSymbolParams) -> list[t.DocumentSymbol]:
    path = _path(params.text_document.uri)
    index = ls.files.index(path)
    text = ls.files.text(path) or ""
    return outline.symbols(index, text) if index is not None else []


@server.feature(t.TEXT_DOCUMENT_CODE_LENS)
def code_lens(ls: Server, params: t.CodeLensParams) -> list[t.CodeLens]:
    index = ls.files.index(_path(params.text_document.uri))
    return outline.lenses(ls.files, index) if index is not None else []


@server.command(outline.RUN_TESTS)
async def run_tests(ls: Server, test_file: str, cases: list[str]) -> dict[str, Any]:
    """`cgraph test` on those cases, in a process of its own (the server imports no runtime)."""
    arguments = outline.test_command(Path(test_file), cases, ls.files)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cgraph",
        *arguments,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=str(Path(test_file).parent),
    )
    output, _ = await process.communicate()
    text = output.decode("utf-8", "replace").strip()
    summary = text.splitlines()[-1] if text else "no output"
    kind = t.MessageType.Info if process.returncode == 0 else t.MessageType.Error
    ls.window_show_message(t.ShowMessageParams(kind, f"cgraph test: {summary}"))
    return {"exit_code": process.returncode, "output": text}


def serve(trust: Trust | None = None, limits: ReadLimits | None = None) -> None:
    """Answer one client over stdin and stdout until it exits, linting with `trust` and
    `limits` (what `cgraph lint` would be given)."""
    server.files = Files(trust=trust, limits=limits)
    server.start_io()
