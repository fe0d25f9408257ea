"""Every diagnostic code cgraph reports, with a one-line description (SARIF rules, docs)."""

from __future__ import annotations

CODES: dict[str, str] = {
    # reading the file (cgraph.spec.read)
    "unreadable": "The file cannot be read.",
    "not-a-file": "The path is a FIFO, a device, a socket or a folder, not a regular file.",
    "file-too-large": "The file is over the size cap (20 MB; --max-file-size).",
    "link-loop": "The path is a symbolic link that leads back to itself.",
    "encoding": "The file is not valid UTF-8.",
    "empty-file": "The file holds no YAML document.",
    "yaml-syntax": "The file is not valid YAML.",
    "tab-indent": "A tab character is used for indentation.",
    "duplicate-key": "A mapping has the same key twice; YAML keeps only the last.",
    "yaml-bool": "A key is read as a boolean (true/false) instead of text.",
    "yaml11-bool": "A yes/no/on/off value is a boolean in YAML 1.1; cgraph reads it as text.",
    "complex-key": "A mapping key is not plain text.",
    "yaml-recursive": "An anchor contains itself.",
    "value-too-large": "A value is over a size limit: nesting, digits, or expanded aliases.",
    # the format (cgraph.spec.load)
    "not-a-graph": "The file is not a mapping of graph keys.",
    "missing-key": "A required key is missing.",
    "unknown-key": "A key is not part of the format here.",
    "state-type": "A state has no type or an unknown type.",
    "schema": "A value has the wrong type or is out of range.",
    # structure (cgraph.lint.structure)
    "unknown-state": (
        "A start, next_state, on_error, on_limit, max_visits or a global exit's except"
        " names no state; or a sim file's goal (`reach`, `never`) or `says` does."
    ),
    "unreachable-state": "No path from START leads to the state.",
    "resume-unreachable": "A `RESUME` lies on no path a `resume: true` exit starts.",
    "exit-waits-for-slots": (
        "An exit of a state that collects slots says neither `early: true` nor `early: false`:"
        " it now waits for the slots (those some path leaves unset, unless its description"
        " says they are given)."
    ),
    "slot-not-returned": (
        "A graph reads a slot of its sub-graph that the sub-graph does not return."
    ),
    "no-path-to-end": "END can never be reached from the state.",
    "silent-cycle": "Silent states form an unbounded loop inside one turn.",
    "decision-exits": "A decision state has fewer than two exits.",
    "duplicate-exit": "Two exits (or start entries) of one state share a description.",
    "same-target": "Two exits of one state lead to the same state.",
    "duplicate-example": "One utterance is an example of two exits of a state.",
    "act-no-examples": "A dialogue act (`acts:`) has no examples, so no exit is matched on it.",
    "exit-conflict": "A state has both exit_conditions and next_state.",
    "no-exit": "A silent state has no way out.",
    "memory-off": "included_contexts are recalled while memory.store is off.",
    "reflection-disabled": "A reflection state exists while limits.max_reflections is 0.",
    "shadowed-name": "A variable hides a built-in template name.",
    # offline runs (cgraph.lint.offline, added by `cgraph run` in the semantic mode)
    "no-say": "An action state has no `say:`; offline its actions show as a stage direction.",
    "offline-slot": "A state collects a free-text slot, which is never filled without an LLM.",
    # flows (cgraph.lint.flows)
    "when-syntax": "A `when` condition is not a Jinja expression.",
    "exit-condition": "A global exit has neither a description nor a `when`.",
    "unreachable-exit": "An exit after the `else` (an exit with no condition) never holds.",
    "no-else": "Every exit of a silent state has a `when` and none is the `else`.",
    "slot-type": "A slot's keywords do not fit its type (or its default does not fit it).",
    "slot-conflict": "A slot has the name of a variable or a built-in template name.",
    "unknown-slot": (
        "`collect`, `reset`, `returns` or a `graph` state's `with` names a slot that is not"
        " declared under `slots:`; or a sim file's facts or goal name no slot or variable."
    ),
    "ask-without-collect": "A state has `ask_before_filling` but collects no slots.",
    "append-not-list": "`append:` names a slot that is not an `array` slot the state collects.",
    "unknown-graph-target": "A `file.yaml#state` target or `enter:` names no state of that file.",
    "clarifications-unasked": (
        "A `when:` exit reads `clarifications` in a state that never asks a clarifying"
        " question (a silent state, or `clarify: false`), so it is never taken."
    ),
    "handoff-target": (
        "A `handoff: true` exit leads to no action state of its graph, so no state reads the"
        " message it hands on."
    ),
    # tools (cgraph.lint.tools)
    "unknown-tool": "A side-effect state calls, or an action state offers, an undeclared tool.",
    "on-tool-exit": (
        "An `on_tool:` exit names a tool its state does not offer, has a `description`, or"
        " is a global exit."
    ),
    "duplicate-tool": "Two tools share a name.",
    "unused-tool": "A declared tool is never called.",
    "tool-handler": "A tool's handler module or function cannot be found.",
    "handler-not-allowed": (
        "A tool's handler is neither a Python file in the graph's folder nor an allowed module."
    ),
    "tool-arguments": "A side-effect state's arguments do not fit the tool's parameters.",
    # argument types (cgraph.lint.arguments)
    "argument-type": "A side-effect argument renders to a type its tool parameter refuses.",
    # templates (cgraph.lint.templates)
    "template-syntax": "A Jinja template does not parse (or uses an unknown filter/test).",
    "undefined-variable": "A template uses a name no variable, set or result defines.",
    "uninitialised-variable": (
        "A `set:` value reads its own variable, which has no initial value (or its own slot,"
        " which a path to the state leaves unfilled)."
    ),
    # slots read before they are filled (cgraph.lint.unset)
    "slot-maybe-unset": (
        "A template reads a slot that some path from the start to its state leaves unset"
        " (it would render as no text)."
    ),
    "result-maybe-unset": (
        "A template reads a side effect's or a model-called tool's `result:` that some path"
        " from the start to its state reaches before it is stored (the turn would fail)."
    ),
    # topology (cgraph.lint.topology)
    "topology-syntax": "A topology line is not in the notation.",
    "topology-unknown-state": "The topology names a state that does not exist.",
    "topology-type": "The topology's type letter disagrees with the state's type.",
    "topology-extra-edge": "The topology shows an edge the states do not have.",
    "topology-missing-edge": "A state's exit is missing from the topology.",
    "topology-arrow": "The topology's `<->` or `->` disagrees with the exit's `resume: true`.",
    # sub-graphs (cgraph.lint.walk)
    "graph-missing": "A graph state's file, or the graph a sim file names, does not exist.",
    # sim files (cgraph.lint.sims)
    "not-a-sim-file": "A file read as a sim file has no top-level `cgraph-sim:`.",
    "sim-graph-invalid": "The graph a sim file names does not load.",
    "sim-no-personas": "A sim file lists no personas.",
    "sim-duplicate-persona": "Two personas of a sim file have one name.",
    "sim-fact-invalid": "A persona's fact is a value its slot refuses (enum, type, range).",
    "sim-goal-unreachable": "No declared path meets a persona's goal without a `never` state.",
    "graph-recursive": "Graph files include each other in a cycle.",
    "graph-outside": "A graph state or a `file#state` target names a file outside the root folder.",
    # the command itself
    "topology-missing": "`cgraph topology --check` found no authored topology.",
    "internal-error": "A check failed unexpectedly; the other checks still ran.",
}
