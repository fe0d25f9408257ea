"""`when:` conditions: Jinja expressions over variables and slots, parsed without running.

Lint reads only the expression's syntax tree (`parse`); the runtime evaluates it in the
same sandbox and under the same budget as every graph template (`holds`). An expression
that fails for want of a value (a name still unset, a comparison of None with a number)
does not hold yet; any other failure (a sandbox refusal, a limit, the time, a division
by zero) is the template's, a `RenderError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from jinja2 import TemplateSyntaxError, nodes
from jinja2.parser import Parser

from cgraph.errors import RenderError
from cgraph.spec.templating import CLARIFICATIONS, text_env, truth


@lru_cache(maxsize=2048)
def parse(source: str) -> tuple[str | None, frozenset[str]]:
    """(the syntax error, or None; the names the expression reads)."""
    env = text_env()
    try:
        parser = Parser(env, source, state="variable")
        expression = parser.parse_expression()
        if not parser.stream.eos:
            token = parser.stream.current
            return f"unexpected `{token.value}` after the expression", frozenset()
    except TemplateSyntaxError as err:
        return err.message or "invalid expression", frozenset()
    except ValueError:  # an integer literal over Python's 4,300-digit limit
        return "a number in it has more than 4,300 digits", frozenset()
    except RecursionError:
        return "it is nested too deeply to read", frozenset()
    # Jinja reports an unknown filter or test only when it compiles; lint never compiles.
    for node in (expression, *expression.find_all((nodes.Filter, nodes.Test))):
        if not isinstance(node, nodes.Filter | nodes.Test):
            continue
        known = env.filters if isinstance(node, nodes.Filter) else env.tests
        if node.name not in known:
            kind = "filter" if isinstance(node, nodes.Filter) else "test"
            return f"no {kind} named {node.name!r}", frozenset()
    # `find_all` walks below the node only: a lone name (`when: has_allergies`) is the root.
    found = (expression, *expression.find_all(nodes.Name))
    names = {n.name for n in found if isinstance(n, nodes.Name) and n.ctx == "load"}
    return None, frozenset(names) - frozenset(env.globals)


def reads_clarifications(source: str) -> bool:
    """Whether the condition reads `clarifications`: a rule about asking once more ("after
    two questions, hand off"), which is evaluated only on a step about to ask one."""
    return CLARIFICATIONS in parse(source)[1]


# Failures that mean "not yet": a slot still unset, None compared with a number.
_NOT_YET = frozenset({"UndefinedError", "TypeError"})


def holds(source: str, context: Mapping[str, Any]) -> bool:
    """Whether the condition holds: False while a value it reads is missing or of the
    wrong type; `RenderError` on any other failure."""
    try:
        return truth(source, context)
    except RenderError as err:
        if err.cause in _NOT_YET:
            return False
        raise
