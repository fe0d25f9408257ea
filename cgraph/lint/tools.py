"""Checks of `tools:` and the side-effect states that call them.

Handlers are never imported: lint reads the handler's source file and parses it, so a
graph from an untrusted branch cannot run code in CI.
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cgraph.diagnostics import DataPath, Diagnostic
from cgraph.lint.structure import GraphContext, field_of
from cgraph.spec.files import Refusal, read_bytes
from cgraph.spec.limits import ReadLimits
from cgraph.spec.load import did_you_mean, fix_for
from cgraph.spec.tool_files import local_module
from cgraph.spec.trust import HANDLER_HINT, Trust


def check_tools(ctx: GraphContext) -> Iterator[Diagnostic]:
    yield from _declarations(ctx)
    yield from _calls(ctx)
    yield from _tool_exits(ctx)


def _tool_exits(ctx: GraphContext) -> Iterator[Diagnostic]:
    """An `on_tool:` exit names a tool its action state offers, and has no description
    (the engine takes it once the call succeeded; the model never chooses it)."""
    for index, exit_ in enumerate(ctx.graph.global_exits):
        if exit_.on_tool is not None:
            yield _tool_exit(ctx, ("global_exits", index, "on_tool"), "a global exit has one")
    for name, state in ctx.graph.states.items():
        offered = field_of(state, "tools") or ()
        for index, exit_ in enumerate(field_of(state, "exit_conditions") or ()):
            path = ("states", name, "exit_conditions", index, "on_tool")
            if exit_.on_tool is None:
                continue
            if exit_.on_tool not in offered:
                why = f"state `{name}` does not offer `{exit_.on_tool}` under `tools:`"
                yield _tool_exit(ctx, path, why)
            elif exit_.description is not None:
                yield _tool_exit(ctx, path, "it has a `description`, which no model reads")


def _tool_exit(ctx: GraphContext, path: DataPath, why: str) -> Diagnostic:
    return ctx.diag(
        path,
        "on-tool-exit",
        f"`on_tool:` exit: {why}",
        "an `on_tool:` exit belongs to an action state that offers the tool (`tools:`), "
        "without a `description`: the engine takes it once the model's call succeeded",
    )


def _declarations(ctx: GraphContext) -> Iterator[Diagnostic]:
    seen: set[str] = set()
    used = {field_of(s, "tool") for s in ctx.graph.states.values()}
    used.update(t for s in ctx.graph.states.values() for t in field_of(s, "tools") or ())
    folder = ctx.graph.source.parent if ctx.graph.source else Path.cwd()
    for index, tool in enumerate(ctx.graph.tools):
        path: DataPath = ("tools", index)
        if tool.name in seen:
            yield ctx.diag(
                (*path, "name"),
                "duplicate-tool",
                f"tool `{tool.name}` is declared twice",
                "remove one declaration or rename it",
            )
        seen.add(tool.name)
        if tool.name not in used:
            yield ctx.diag(
                (*path, "name"),
                "unused-tool",
                f"tool `{tool.name}` is declared but no state calls it or offers it",
                "call it from a `side_effect` state, list it under an action state's "
                "`tools:`, or remove the declaration",
                warning=True,
            )
        problem = handler_problem(tool.handler, folder, ctx.trust, ctx.limits)
        if problem:
            yield ctx.diag((*path, "handler"), *problem)


def handler_problem(
    handler: str, folder: Path, trust: Trust | None = None, limits: ReadLimits | None = None
) -> tuple[str, str, str] | None:
    """Why `module:function` cannot be found or may not run (code, message, hint), or
    None when it looks callable: a file under `folder`, or a module `trust` allows (its
    source read within `limits`)."""
    trust, limits = trust or Trust(), limits or ReadLimits()
    module, _, function = handler.partition(":")
    found, source = _module_file(module, folder, trust)
    if not found:
        return (
            "tool-handler",
            f"handler module `{module}` is found neither next to the graph nor on the Python path",
            did_you_mean(module, _modules_beside(module, folder))
            + f"put `{module.replace('.', '/')}.py` next to the graph file, or install the module",
        )
    if source is None and local_module(module, folder) is None and not trust.allows_module(module):
        return (
            "handler-not-allowed",
            f"handler `{handler}` is not a Python file in the graph's folder ({folder}), and "
            f"module `{module}` is not allowed: a graph may not run code from elsewhere",
            HANDLER_HINT,
        )
    return _source_problem(module, function, source, limits)


def _source_problem(
    module: str, function: str, source: Path | None, limits: ReadLimits
) -> tuple[str, str, str] | None:
    if source is None:
        return None  # present, but its contents cannot be read without importing it
    text = read_bytes(source, limits.file_size)  # read like a graph file: bounded
    if isinstance(text, Refusal):
        where = f"handler module `{module}` ({source})"
        return ("tool-handler", f"{where} cannot be read: {text.message}", text.hint)
    names = _top_level_names(text, source)
    if names is None:
        return (
            "tool-handler",
            f"handler module `{module}` ({source}) has a syntax error",
            "fix the module",
        )
    if function not in names:
        return (
            "tool-handler",
            f"handler module `{module}` defines no `{function}`",
            did_you_mean(function, sorted(names)) + f"define `def {function}(...)` in {source}",
        )
    return None


def _module_file(module: str, folder: Path, trust: Trust) -> tuple[bool, Path | None]:
    """Whether the module exists, and its source file when that can be read safely (a
    local file, or an allowed module's; another module is never read)."""
    local = local_module(module, folder)
    if local is not None:
        return True, local
    parts = module.split(".")
    # Only the top-level name is looked up on the path: finding `a.b` would import `a`.
    try:
        spec = importlib.util.find_spec(parts[0])
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return False, None
    origin = spec.origin or ""
    readable = len(parts) == 1 and origin.endswith(".py") and trust.allows_module(module)
    return True, Path(origin) if readable else None


def _modules_beside(module: str, folder: Path) -> list[str]:
    """The modules next to the graph in the folder `module` names (`tools.x` → `tools/*.py`)."""
    package, _, _ = module.rpartition(".")
    where = folder.joinpath(*package.split(".")) if package else folder
    prefix = f"{package}." if package else ""
    try:
        return sorted(prefix + p.stem for p in where.glob("*.py") if p.stem.isidentifier())
    except OSError:
        return []


def _top_level_names(text: bytes, source: Path) -> set[str] | None:
    try:
        tree = ast.parse(text.decode("utf-8"), str(source))
    except (SyntaxError, UnicodeDecodeError, ValueError, RecursionError, MemoryError):
        return None
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _calls(ctx: GraphContext) -> Iterator[Diagnostic]:
    declared = [t.name for t in ctx.graph.tools]
    for name, state in ctx.graph.states.items():
        if state.type == "action":
            yield from _offered(ctx, name, state.tools, declared)
        if state.type != "side_effect":
            continue
        tool = ctx.graph.tool(state.tool)
        if tool is None:
            yield ctx.diag(
                ("states", name, "tool"),
                "unknown-tool",
                f"state `{name}` calls tool `{state.tool}`, which is not declared under `tools`",
                did_you_mean(state.tool, declared)
                + "declare it under `tools:` with a name and a `module:function` handler",
                fix=fix_for(state.tool, declared),
            )
            continue
        yield from _arguments(ctx, name, state.arguments, tool.parameters)


def _arguments(
    ctx: GraphContext, name: str, arguments: dict[str, Any], schema: dict[str, Any]
) -> Iterator[Diagnostic]:
    """Required parameters present, unknown ones absent (when the schema closes them)."""
    properties = schema.get("properties")
    required = schema.get("required")
    path: DataPath = ("states", name, "arguments")
    if isinstance(required, list):
        for missing in (r for r in required if isinstance(r, str) and r not in arguments):
            yield ctx.diag(
                path if arguments else ("states", name, "tool"),
                "tool-arguments",
                f"state `{name}` does not pass `{missing}`, which the tool requires",
                f"add `{missing}:` under `arguments:`",
                key=bool(arguments),
            )
    if isinstance(properties, dict) and schema.get("additionalProperties") is False:
        for extra in (a for a in arguments if a not in properties):
            yield ctx.diag(
                (*path, extra),
                "tool-arguments",
                f"state `{name}` passes `{extra}`, which the tool does not take",
                did_you_mean(extra, list(properties)) + f"parameters are {', '.join(properties)}",
                key=True,
                fix=fix_for(extra, list(properties)),
            )


def _offered(
    ctx: GraphContext, name: str, tools: tuple[str, ...], declared: list[str]
) -> Iterator[Diagnostic]:
    """The tools an action state offers the model must be declared."""
    for index, tool in enumerate(tools):
        if ctx.graph.tool(tool) is None:
            yield ctx.diag(
                ("states", name, "tools", index),
                "unknown-tool",
                f"state `{name}` offers tool `{tool}`, which is not declared under `tools`",
                did_you_mean(tool, declared)
                + "declare it under `tools:` with a name and a `module:function` handler",
                fix=fix_for(tool, declared),
            )
