"""What the offline chooser embeds for a graph, declared by the chooser's own backend so
that a front end can warm the embedder's cache before the texts are needed (`cgraph run`
embeds the first turn's while the model loads, the rest once the first reply is out).
Only a warm-up: a text missed here is embedded when it is needed.
"""

from __future__ import annotations

from cgraph.backends.offline.lexicon import LEXICON, with_declared
from cgraph.backends.offline.options import as_user, stand_ins
from cgraph.backends.offline.reading import affirmed
from cgraph.spec.model import Graph

WARM_TEXTS = 256
"""At most this many texts warmed: half the embedder's cache, which keeps the messages'."""


def later_texts(graph: Graph) -> list[str]:
    """What `cgraph run` embeds once the first reply is out: the rest of the graph's
    texts, so that a later turn embeds only the user's message."""
    first = set(first_turn_texts(graph))
    return [t for t in graph_texts(graph) if t not in first][: WARM_TEXTS - len(first)]


def first_turn_texts(graph: Graph) -> list[str]:
    """What the offline chooser compares a first message with: the start states' texts
    and exits as it reads them (see `graph_texts`), the global exits, the conversational
    moves. Only a warm-up of the embedder's cache: a text missed here is embedded when
    it is needed."""
    starts = [graph.start] if isinstance(graph.start, str) else [e.state for e in graph.start]
    # A closing state one move away reads the first message too: it may already end it.
    closing = [n for s in starts for n in _next_states(graph, s) if _closes(graph, n)]
    names = list(dict.fromkeys([*starts, *closing]))
    texts = [*LEXICON.CONVERSATIONAL, *LEXICON.WELL, *graph_texts(graph, names)]
    return [t for t in dict.fromkeys(texts) if t and "{" not in t]


def _next_states(graph: Graph, name: str) -> list[str]:
    state = graph.states.get(name)
    conditions = state.exit_conditions if state is not None else None
    return [e.next_state for e in conditions or ()]


def _closes(graph: Graph, name: str) -> bool:
    """An action state whose own exits all end the conversation (a goodbye state)."""
    state = graph.states.get(name)
    targets = _next_states(graph, name)
    speaks = state is not None and state.type == "action"
    return speaks and bool(targets) and set(targets) == {"END"}


def graph_texts(graph: Graph, names: list[str] | None = None) -> list[str]:
    """Every text the offline chooser compares messages with in the states `names` (all
    by default): exits as written and as the chooser reads them (about "the user",
    without their negators, first-person stand-ins for an exit without examples, the
    shared dialogue acts) with the global exits, objectives, actions, intra-state
    guidelines (what a question is weighed against to stay). Only a warm-up,
    like the above."""
    acts = with_declared(LEXICON.ACTS, graph.acts)
    texts: list[str] = [text for act in acts for text in (act.description, *act.examples)]
    for name in graph.states if names is None else names:
        state = graph.states.get(name)
        if state is not None:  # the empty texts are left out below
            texts += [state.objective, *state.actions, *state.intra_state_navigation_guidelines]
        own = (state.exit_conditions if state is not None else None) or ()
        for exit_ in [*graph.global_exits, *own]:
            if exit_.description:
                described = exit_.description
                texts += [described, as_user(described), affirmed(described)]
                texts += [*exit_.examples, *stand_ins(described)]
    return [t for t in dict.fromkeys(texts) if t and "{" not in t]
