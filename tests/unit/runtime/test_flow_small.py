"""The small things a ported flow needs: an exit's `label:` names it in a clarifying
question instead of its whole description, and an annotation's `set:` is visible to its
own `say:`."""

from __future__ import annotations

from pathlib import Path

from cgraph.backends.offline.asking import clarifying_question
from cgraph.runtime.ports import CLARIFY, Choice, ExitOption, Question, Reason
from cgraph.session import Session
from tests.unit.runtime._runtime import write

GRAPH = """\
cgraph: 1
name: bank
start: ask
states:
  ask:
    type: action
    objective: Help with the account.
    actions: [Ask what they want to do.]
    intra_state_navigation_guidelines: [Move on once it is clear.]
    action_guidelines: [Be brief.]
    boundary_constraints: [Never guess.]
    say: What would you like to do?
    exit_conditions:
      - description: The user wants to send money to someone (transfer money).
        label: send money
        next_state: stopping
      - description: The user says goodbye.
        next_state: END
  stopping:
    type: annotation
    objective: Stop the flow.
    set: {active_flow: transfer}
    say: "Stopping {{ active_flow }}."
    next_state: END
"""


def _option(exit_id: str, description: str, label: str = "") -> ExitOption:
    return ExitOption(id=exit_id, description=description, target=exit_id, label=label)


def test_offline_a_label_is_said_instead_of_the_description() -> None:
    send = _option(
        "send", "The user wants to send money to someone (transfer money).", "send money"
    )
    bye = _option("END", "The user wants to say goodbye.")
    assert clarifying_question([send, bye]) == "Do you want to send money, or say goodbye?"
    assert clarifying_question([send]) == "Do you want to send money?"


class _Unsure:
    """A chooser that asks which exit was meant, writing no question of its own."""

    name = "unsure"

    def choose(self, question: Question) -> Choice:
        ids = tuple(o.id for o in question.options)
        return Choice(CLARIFY, Reason("unsure"), candidates=ids)


def test_the_engine_s_own_question_names_the_label(tmp_path: Path) -> None:
    session = Session.start(write(tmp_path, GRAPH), model=_Unsure())
    turn = session.send("Hmm, money things")
    assert turn.reply == "Before I go on, which do you mean: send money, or the user says goodbye?"


def test_an_annotation_s_say_reads_what_its_set_sets(tmp_path: Path) -> None:
    session = Session.start(write(tmp_path, GRAPH))
    turn = session.send("I want to transfer money to Mary")
    assert turn.path == ("ask", "stopping") and turn.reply == "Stopping transfer."


DROP = (Path(__file__).parents[3] / "docs" / "concepts" / "global-exits.md").read_text()


def _drop_graph(tmp_path: Path) -> Path:
    start = DROP.index("<!-- graph: drop.yaml -->\n```yaml\n") + len(
        "<!-- graph: drop.yaml -->\n```yaml\n"
    )
    return write(tmp_path, DROP[start : DROP.index("\n```", start)] + "\n")


def test_a_dropped_interruption_is_closed_and_never_gone_back_to(tmp_path: Path) -> None:
    session = Session.start(_drop_graph(tmp_path))
    session.send("Hello")
    turn = session.send("How much money do I have?")
    assert turn.interrupted == ("transfer",)
    assert turn.reply.endswith("Shall we go on with the transfer?")  # `interrupted` read
    turn = session.send("No, forget the transfer.")
    assert (turn.state, turn.interrupted) == ("idle", ())
    assert "nothing is left open" in turn.reply
    moved = [e.data for e in session.events() if e.kind == "transition"][-1]
    assert moved["drops"] is True and moved["to"] == "idle"
