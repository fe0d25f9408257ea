"""The names a Jinja template reads, found on its syntax tree alone.

`jinja2.meta.find_undeclared_variables` runs Jinja's code generator, which folds
constant expressions while it writes code: `{{ "a" * 10**9 }}` is computed at lint time.
A graph from an untrusted branch must run nothing, so this module only parses (Jinja's
parser builds nodes; it evaluates nothing) and walks the nodes with Jinja's scoping
rules: a `for`, macro, call block or `with` binds names for its body only, `set` binds
them for the rest of its scope.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from jinja2 import Environment, TemplateSyntaxError, nodes

_MACRO_NAMES = frozenset({"varargs", "kwargs", "caller"})
_UNEXPECTED_CHAR = re.compile(r"^unexpected char (.+) at (\d+)$")


class TemplateProblem(Exception):
    """A template that Jinja would refuse, with the template line it is on."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def read_names(env: Environment, source: str) -> frozenset[str]:
    """Names `source` reads before binding them (its free names), minus the globals.

    Raises `TemplateProblem` for anything Jinja would refuse to compile: a syntax error,
    an unknown filter or test, a number too long to read, nesting too deep to parse.
    """
    try:
        tree = env.parse(source)
    except TemplateSyntaxError as err:
        message = readable(err.message or "invalid template", source)
        raise TemplateProblem(err.lineno or 1, message) from err
    except ValueError as err:  # an integer literal over Python's 4,300-digit limit
        raise TemplateProblem(1, "a number in the template has more than 4,300 digits") from err
    except RecursionError as err:
        raise TemplateProblem(1, "the template is nested too deeply to read") from err
    walker = _Walker(env)
    try:
        walker.visit(tree, set())
    except RecursionError as err:
        raise TemplateProblem(1, "the template is nested too deeply to read") from err
    return frozenset(walker.free - set(env.globals))


def readable(message: str, source: str) -> str:
    """Jinja's "unexpected char "'" at 25" counts characters from the template's start:
    quote what comes before it, so the designer finds the spot (often a tag left open)."""
    found = _UNEXPECTED_CHAR.match(message)
    if found is None:
        return message
    offset = int(found.group(2))
    before = " ".join(source[max(0, offset - 30) : offset].split())
    return (
        f"unexpected {found.group(1)} inside a tag, right after `{before}`"
        " (is a `}}` or `%}` missing before it?)"
    )


class _Walker:
    def __init__(self, env: Environment) -> None:
        self.env = env
        self.free: set[str] = set()
        self.blocks: set[str] = set()

    def visit(self, node: nodes.Node, bound: set[str]) -> None:
        method = getattr(self, f"visit_{type(node).__name__}", None)
        if method is not None:
            method(node, bound)
        else:
            self.visit_all(node.iter_child_nodes(), bound)

    def visit_all(self, children: Iterable[nodes.Node], bound: set[str]) -> None:
        for child in children:
            self.visit(child, bound)

    def visit_Name(self, node: nodes.Name, bound: set[str]) -> None:
        if node.ctx == "load":
            if node.name not in bound:
                self.free.add(node.name)
        else:  # "store" or "param"
            bound.add(node.name)

    def visit_NSRef(self, node: nodes.NSRef, bound: set[str]) -> None:
        if node.name not in bound:
            self.free.add(node.name)

    def visit_Assign(self, node: nodes.Assign, bound: set[str]) -> None:
        self.visit(node.node, bound)  # the value is read before the target is bound
        self.visit(node.target, bound)

    def visit_AssignBlock(self, node: nodes.AssignBlock, bound: set[str]) -> None:
        inner = set(bound)
        if node.filter is not None:
            self.visit(node.filter, inner)
        self.visit_all(node.body, inner)
        self.visit(node.target, bound)

    def visit_For(self, node: nodes.For, bound: set[str]) -> None:
        self.visit(node.iter, bound)
        inner = bound | {"loop"}
        self.visit(node.target, inner)
        if node.test is not None:
            self.visit(node.test, inner)
        self.visit_all(node.body, inner)
        self.visit_all(node.else_, set(bound))

    def visit_Macro(self, node: nodes.Macro, bound: set[str]) -> None:
        bound.add(node.name)  # bound first: a macro may call itself
        self._callable(node.args, node.defaults, node.body, bound)

    def visit_CallBlock(self, node: nodes.CallBlock, bound: set[str]) -> None:
        self.visit(node.call, bound)
        self._callable(node.args, node.defaults, node.body, bound)

    def _callable(
        self,
        args: list[nodes.Name],
        defaults: list[nodes.Expr],
        body: list[nodes.Node],
        bound: set[str],
    ) -> None:
        self.visit_all(defaults, bound)
        inner = bound | _MACRO_NAMES
        self.visit_all(args, inner)
        self.visit_all(body, inner)

    def visit_With(self, node: nodes.With, bound: set[str]) -> None:
        self.visit_all(node.values, bound)
        inner = set(bound)
        self.visit_all(node.targets, inner)
        self.visit_all(node.body, inner)

    def visit_If(self, node: nodes.If, bound: set[str]) -> None:
        """A name set in some branches only may be undefined after the `if`."""
        self.visit(node.test, bound)
        branches = [node.body]
        for elif_ in node.elif_:
            self.visit(elif_.test, bound)
            branches.append(elif_.body)
        branches.append(node.else_)
        after = []
        for body in branches:
            inner = set(bound)
            self.visit_all(body, inner)
            after.append(inner)
        bound.update(set.intersection(*after))

    def visit_FilterBlock(self, node: nodes.FilterBlock, bound: set[str]) -> None:
        self.visit(node.filter, bound)
        self.visit_all(node.body, set(bound))

    def visit_Block(self, node: nodes.Block, bound: set[str]) -> None:
        if node.name in self.blocks:
            raise TemplateProblem(node.lineno, f"block {node.name!r} defined twice")
        self.blocks.add(node.name)
        self.visit_all(node.body, bound | {"super"})

    def visit_Import(self, node: nodes.Import, bound: set[str]) -> None:
        self.visit(node.template, bound)
        bound.add(node.target)

    def visit_FromImport(self, node: nodes.FromImport, bound: set[str]) -> None:
        self.visit(node.template, bound)
        for name in node.names:
            bound.add(name if isinstance(name, str) else name[1])

    def visit_Filter(self, node: nodes.Filter, bound: set[str]) -> None:
        if node.name not in self.env.filters:
            raise TemplateProblem(node.lineno, f"No filter named {node.name!r}.")
        self.visit_all(node.iter_child_nodes(), bound)

    def visit_Test(self, node: nodes.Test, bound: set[str]) -> None:
        if node.name not in self.env.tests:
            raise TemplateProblem(node.lineno, f"No test named {node.name!r}.")
        self.visit_all(node.iter_child_nodes(), bound)
