"""A large, valid context graph for lint benchmarks and tests (`bench/gen_graph.py`).

States follow the shape of the example graphs: mostly action states with full
parameters and examples, every fifth one a silent annotation, recall or decision state,
so the file is about 5 MB for 10,000 states, like the anchor measurement.
"""

from __future__ import annotations

from pathlib import Path

_ACTION = """\
  s{i}:
    type: action
    objective: Ask the user about item {i} and confirm the answer before moving on.
    actions:
      - Ask the user about item {i} in one short question.
      - Confirm what the user said in one sentence.
    intra_state_navigation_guidelines:
      - Stay here while the answer about item {i} is unclear; ask again more specifically.
    action_guidelines:
      - Keep replies under two sentences and use the user's own words.
    boundary_constraints:
      - Never give advice about item {i}; only record what the user says.
    exit_conditions:
      - description: The user answered the question about item {i} clearly.
        next_state: {next}
        examples: ["Yes, that is right.", "It was fine this week.", "I did it twice."]
      - description: The user wants to stop the conversation now.
        next_state: END
        examples: ["Stop please.", "I have to go now.", "Let's end here."]
    message_metadata: [step_{i}]
    say: Could you tell me about item {i}, {{{{ user_id }}}}?
"""

_ANNOTATION = """\
  s{i}:
    type: annotation
    objective: Tag the transcript after item {i} was answered.
    annotations: [item_{i}_done]
    set:
      count: "{{{{ count + 1 }}}}"
    next_state: {next}
"""

_RECALL = """\
  s{i}:
    type: recall
    objective: Bring back what earlier sessions said about item {i}.
    queries: ["item {i} history", "{{{{ message }}}}"]
    tiers: [personal, task]
    next_state: {next}
"""

_DECISION = """\
  s{i}:
    type: decision
    objective: Decide whether item {i} needs a follow-up question.
    decision_guidelines: [Follow up only when the answer about item {i} was vague.]
    exit_conditions:
      - description: The answer about item {i} was complete.
        next_state: {next}
      - description: The answer about item {i} needs a follow-up.
        next_state: {follow}
"""


_LAST = _ANNOTATION.replace("next_state: {next}", "next_state: END")


def generate(count: int) -> str:
    parts = [
        "# yaml-language-server: $schema=../schemas/context-graph.schema.json\n",
        "cgraph: 1\nname: generated\ndescription: A generated graph for benchmarks.\n",
        "start: s0\nvariables:\n  count: 0\nstates:\n",
    ]
    kinds = (_ACTION, _ACTION, _ANNOTATION, _RECALL, _DECISION)
    for i in range(count):
        nxt = f"s{i + 1}" if i + 1 < count else "END"
        template = kinds[i % len(kinds)] if i + 1 < count else _LAST
        parts.append(template.format(i=i, next=nxt, follow=f"s{max(i - 4, 0)}"))
    return "".join(parts)


def generate_wide(exits: int) -> str:
    """One decision state with `exits` exits, each to its own reflection state."""
    parts = [
        "cgraph: 1\nname: wide\nstart: hub\nstates:\n",
        "  hub:\n    type: decision\n    objective: Route to one of many cases.\n",
        "    exit_conditions:\n",
    ]
    parts.extend(f"      - {{description: case {i}, next_state: s{i}}}\n" for i in range(exits))
    parts.extend(
        f"  s{i}:\n    type: reflection\n    objective: Think.\n    next_state: END\n"
        for i in range(exits)
    )
    return "".join(parts)


def write(count: int, folder: Path) -> Path:
    path = folder / f"generated_{count}.yaml"
    path.write_text(generate(count), encoding="utf-8")
    return path
