"""Results the conversation can use: a model's call of a tool stores its `result:` and
its `sets:` (checked against their slots) for the state's `when:` exits on the same turn,
and an `on_tool:` exit moves the state because the tool was called, with no side-effect
state per function."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.lint.walk import lint_paths
from cgraph.session import Session
from tests.unit.runtime._runtime import stay, write

TOOLS = """
def check_funds(amount: float) -> dict:
    return {"balance": 50, "enough": amount <= 50, "note": "checked"}


def send_money(amount: float, recipient: str) -> dict:
    return {"reference": "T-1", "sent": amount}


def bad_balance(amount: float) -> dict:
    return {"balance": "fifty"}
"""
GRAPH = """\
cgraph: 1
name: transfer
start: ask
slots:
  balance: {type: number, minimum: 0}
tools:
  - name: check_funds
    description: Check whether the account holds the amount.
    handler: bank:check_funds
    result: funds
    sets: [balance]
    parameters:
      type: object
      properties: {amount: {type: number}}
      required: [amount]
  - name: send_money
    description: Send the money.
    handler: bank:send_money
    result: receipt
    parameters:
      type: object
      properties: {amount: {type: number}, recipient: {type: string}}
      required: [amount, recipient]
  - name: bad_balance
    description: A handler that disagrees with the declaration.
    handler: bank:bad_balance
    sets: [balance]
    parameters: {type: object, properties: {amount: {type: number}}}
states:
  ask:
    type: action
    objective: Help the user send money.
    actions: [Ask for the amount and the recipient.]
    intra_state_navigation_guidelines: [Check the funds, then send.]
    action_guidelines: [Be brief.]
    boundary_constraints: [Never send without checking.]
    tools: [check_funds, send_money, bad_balance]
    say: How much, and to whom?
    exit_conditions:
      - on_tool: send_money
        next_state: sent
      - on_tool: check_funds
        when: not funds.enough
        next_state: short
      - description: The user says goodbye.
        next_state: END
  short:
    type: action
    objective: Say the funds are short.
    actions: ["Say the balance, {{ balance }}, is not enough."]
    intra_state_navigation_guidelines: [Finish when they are done.]
    action_guidelines: [Be brief.]
    boundary_constraints: [Never lend money.]
    exit_conditions:
      - description: The user is done.
        next_state: END
  sent:
    type: action
    objective: Confirm the transfer.
    actions: ["Say: sent {{ receipt.sent }} (reference {{ receipt.reference }})."]
    intra_state_navigation_guidelines: [Finish when they are done.]
    action_guidelines: [Be brief.]
    boundary_constraints: [Never send twice.]
    exit_conditions:
      - description: The user is done.
        next_state: END
"""


def _graph(tmp_path: Path) -> Path:
    (tmp_path / "bank.py").write_text(textwrap.dedent(TOOLS))
    return write(tmp_path, GRAPH)


def calls(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"id": "c0", "name": name, "arguments": arguments}]}


def test_the_graph_lints_clean(tmp_path: Path) -> None:
    found = lint_paths([_graph(tmp_path)]).diagnostics
    assert found == [], "\n".join(d.render() for d in found)


def test_a_call_s_result_and_sets_are_stored_and_a_when_exit_reads_them(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(
        {"ask": [calls("check_funds", amount=80), stay("Let me check.")], "short": stay("Short.")}
    )
    session = Session.start(_graph(tmp_path), model=model)
    turn = session.send("Send 80 to Mary")
    assert turn.path == ("ask", "short")
    assert "the model called `check_funds` and `when: not funds.enough` holds" in (
        turn.transitions[-1].reason
    )
    assert session.variables["funds"] == {"balance": 50, "enough": False, "note": "checked"}
    assert session.variables["balance"] == 50 and "note" not in session.variables
    assert turn.reply == "Short."
    prompt = model.requests_for("short")[0].messages[0]["content"]
    assert "Say the balance, 50, is not enough." in prompt


def test_a_call_whose_when_does_not_hold_stays_and_the_model_replies(tmp_path: Path) -> None:
    model = ScriptedModel({"ask": [calls("check_funds", amount=20), stay("You can send 20.")]})
    session = Session.start(_graph(tmp_path), model=model)
    turn = session.send("Can I send 20?")
    assert (turn.state, turn.reply) == ("ask", "You can send 20.")
    assert session.variables["funds"]["enough"] is True


def test_an_on_tool_exit_moves_the_state_because_the_tool_was_called(tmp_path: Path) -> None:
    send = calls("send_money", amount=20, recipient="Mary")
    model = ScriptedModel({"ask": [send, stay("Done!")], "sent": stay("Sent.")})
    session = Session.start(_graph(tmp_path), model=model)
    turn = session.send("Send 20 to Mary")
    assert turn.path == ("ask", "sent")
    assert turn.reply == "Sent."
    prompt = model.requests_for("sent")[0].messages[0]["content"]
    assert "Say: sent 20 (reference T-1)." in prompt
    assert turn.transitions[-1].reason == "the model called `send_money`"


def test_a_call_that_failed_takes_no_on_tool_exit(tmp_path: Path) -> None:
    wrong = calls("send_money", amount=20)  # the recipient is required: refused
    model = ScriptedModel({"ask": [wrong, stay("To whom?")]})
    session = Session.start(_graph(tmp_path), model=model)
    turn = session.send("Send 20")
    assert (turn.state, turn.reply) == ("ask", "To whom?")
    assert "receipt" not in session.variables


def test_a_value_its_slot_refuses_is_a_located_failure_never_stored(tmp_path: Path) -> None:
    model = ScriptedModel({"ask": [calls("bad_balance", amount=1), stay("ok")]})
    session = Session.start(_graph(tmp_path), model=model)
    turn = session.send("What is my balance?")
    assert turn.fallback and session.variables.get("balance") is None
    [failed] = [e.data for e in session.events() if e.kind == "render_failed"]
    assert failed["field"] == "tools.bad_balance"
    assert "tool `bad_balance`: slot `balance`: `'fifty'` is not a number" in failed["error"]
    assert "g.yaml:27:11:" in failed["error"]  # the tool's `sets:` in the graph file


def test_lint_refuses_an_on_tool_exit_its_state_cannot_take(tmp_path: Path) -> None:
    text = GRAPH.replace("      - on_tool: send_money\n", "      - on_tool: transfer\n")
    text = text.replace(
        "      - on_tool: check_funds\n", "      - on_tool: check_funds\n        description: x\n"
    )
    (tmp_path / "bank.py").write_text(textwrap.dedent(TOOLS))
    found = lint_paths([write(tmp_path, text)]).diagnostics
    assert [(d.code, d.line) for d in found] == [("on-tool-exit", 40), ("on-tool-exit", 42)]
    assert "does not offer `transfer`" in found[0].message
    assert "has a `description`" in found[1].message


def test_a_side_effect_state_s_call_sets_what_the_tool_sets(tmp_path: Path) -> None:
    (tmp_path / "bank.py").write_text(textwrap.dedent(TOOLS))
    start = "start: ask\n"
    silent = """\
  check:
    type: side_effect
    objective: Check the funds.
    tool: check_funds
    arguments: {amount: 80}
    next_state: short
"""
    text = GRAPH.replace(start, "start: check\n").replace("  short:\n", silent + "  short:\n")
    model = ScriptedModel({"short": stay("Short.")})
    session = Session.start(write(tmp_path, text), model=model)
    session.send("hello")
    assert session.variables["balance"] == 50 and "funds" not in session.variables
