"""The command-line reference, generated from the typer app (`cgraph/cli/app.py`).

Every command and sub-command the app has, in the order `cgraph --help` lists them, with
its usage line, its help text and a row per argument and option (names, what it takes,
its default, its help), read from the click command typer builds, so a command or an
option added to the app is documented at the next build. typer carries its own copy of
click, so the commands are read by what they have (`list_commands`, `param_type_name`),
not by click's classes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import typer.main

from cgraph.cli.app import app

INTRO = (
    "Every command of `cgraph` and every option, generated at each build from the "
    "command-line app itself (`cgraph/cli/app.py`): the same text as `cgraph COMMAND "
    "--help`. Exit codes: `0` success, `1` problems found (lint errors, failed tests, a "
    "run that could not start), `2` a usage error or a file that cannot be read."
)


def page() -> str:
    root = typer.main.get_command(app)
    lines = ["# Command line", "", INTRO, ""]
    lines += [f"- [`{path}`](#{anchor(path)}): {short}" for path, short, _ in commands(root)]
    lines.append("")
    for path, _short, command in commands(root):
        lines += section(path, command)
    return "\n".join(lines) + "\n"


def commands(root: Any) -> Iterator[tuple[str, str, Any]]:
    """(`cgraph lint`, its one-line help, the command), sub-commands after their group."""
    yield from _walk(_context(root, "cgraph"), root, "cgraph")


def _context(command: Any, name: str, parent: Any = None) -> Any:
    return command.context_class(command, info_name=name, parent=parent)


def _is_group(command: Any) -> bool:
    return hasattr(command, "list_commands")


def _walk(ctx: Any, group: Any, path: str) -> Iterator[tuple[str, str, Any]]:
    if not _is_group(group):
        return
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        full = f"{path} {name}"
        yield full, command.get_short_help_str(limit=120), command
        yield from _walk(_context(command, name, ctx), command, full)


def anchor(path: str) -> str:
    return path.replace(" ", "-")


def section(path: str, command: Any) -> list[str]:
    ctx = _context(command, path)
    usage = " ".join([path, *command.collect_usage_pieces(ctx)])
    lines = [f"## `{path}` {{#{anchor(path)}}}", "", "```text", usage, "```", ""]
    if command.help:
        lines += [_paragraphs(command.help), ""]
    if _is_group(command):
        subs = [f"`{path} {name}`" for name in command.list_commands(ctx)]
        lines += ["Sub-commands: " + ", ".join(subs) + ".", ""]
        return lines
    rows = list(parameters(ctx, command))
    if rows:
        lines += ["| argument or option | takes | default | meaning |", "|---|---|---|---|"]
        lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
        lines.append("")
    return lines


def parameters(ctx: Any, command: Any) -> Iterator[tuple[str, str, str, str]]:
    """(names, what it takes, default, help) per argument and option, `--help` left out."""
    for param in command.get_params(ctx):
        if param.name == "help":
            continue
        if param.param_type_name == "argument":
            many = " (one or more)" if param.nargs != 1 else ""
            need = "required" if param.required else "optional"
            name = param.metavar or (param.name or "").upper()
            yield f"`{name}`", f"{need}{many}", "", getattr(param, "help", "") or ""
            continue
        names = ", ".join(f"`{n}`" for n in [*param.opts, *param.secondary_opts])
        takes = "" if param.is_flag else f"`{param.make_metavar(ctx)}`"
        yield names, takes, _default(param), param.help or ""


def _default(param: Any) -> str:
    if param.is_flag:
        return "off" if not param.default else "on"
    if param.default is None or param.default == () or not param.show_default:
        return ""
    value = getattr(param.default, "value", param.default)
    return f"`{value}`"


def _paragraphs(text: str) -> str:
    """Click's help text (paragraphs split by blank lines) as Markdown paragraphs."""
    parts = [" ".join(p.split()) for p in text.split("\n\n")]
    return "\n\n".join(escape(p) for p in parts if p and not p.startswith("\b"))


def _cell(text: str) -> str:
    return escape(" ".join(text.split())).replace("|", "\\|")


def escape(text: str) -> str:
    """`*` outside code spans as a literal star (`*.test.yaml` is not emphasis)."""
    parts = text.split("`")
    return "`".join(p if i % 2 else p.replace("*", "\\*") for i, p in enumerate(parts))


if __name__ == "__main__":
    print(page())
