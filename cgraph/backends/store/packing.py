"""How a database store keeps a step's events and a snapshot small: one value per committed
step, deflated against a dictionary of cgraph's own vocabulary.

A step's events are one JSON array, `[[seq, turn, kind, at, data], ...]`, and a snapshot
is its JSON object. Written, either is a format byte and the JSON deflated (raw deflate,
zlib) with `DICTIONARY` as its preset dictionary: the keys and the values every event and
snapshot repeat (`"kind":"decision"`, `"reason":"the only way out"`, a snapshot's
skeleton) cost a few bits each instead of their letters, and nothing is left out, so
what is read back is exactly what was written (a decision's defaults included: the log
stays the audit it was). A turn of six steps stores about a quarter of its JSON.

Read, a value is recognised by its first byte: `{` or `[` is plain JSON (what a store
wrote before packing, or a migration copied in SQL), `FORMAT` is deflated with this
dictionary. The dictionary is part of the format: a different one is a new format byte,
and this one is never edited (every stored value needs it to be read).
"""

from __future__ import annotations

import itertools
import json
import zlib
from collections.abc import Sequence
from typing import Any

from cgraph.runtime.state.records import Event, trusted_event

FORMAT = 1
"""The first byte of a value deflated with `DICTIONARY`."""
_PLAIN = (ord("{"), ord("["))

DICTIONARY = (
    # A snapshot (`SessionState.to_dict` and `LogPosition`, version 2).
    b'{"stack":[{"graph":"","state":"","returned":false}],"variables":{},"notes":[],'
    b'"annotations":[],"visits":{},"turn":0,"started":true,"completed":false,"pending":null,'
    b'"step":0,"transitions":0,"reflections":0,"entered":false,"last_action":[{"graph":"",'
    b'"state":"","returned":false}],"history_start":0,"context_start":0,"summary":"",'
    b'"summary_upto":0,"turns_here":0,"said":[],"limited":null,"context_due":null,'
    b'"noted":[],"interrupted":[],"asked":[],"correcting":{},"offered":false,"version":2,'
    b'"seq":0,"messages":0,"turn_seq":0}'
    # Events, the rarer kinds first (deflate reaches the end of the dictionary cheapest).
    b'"session_started","graph":"","model":"","user_id":"","tool_call","status":"started",'
    b'"name":"","arguments":{},"result":null,"error":null,"by":"model","memory_stored",'
    b'"llm_error","llm_notice","memory_error","note","summary","guard","undo","cancelled":'
    b'false,"render_failed","slots","corrected":{},"repeated":true,'
    b'"recall","queries":[],"tiers":[],"memories":[]}],'
    b'"variables",{"state":"","values":{}}],'
    b'"annotation",{"state":"","tags":[]}],'
    b'"user_message",{"text":"","state":"","key":"","msg":0}],'
    b'"turn_completed",{"state":"","completed":false,"guard":null,"transitions":0}],'
    b'"reply",{"text":"","state":"","fallback":false,"metadata":[],"msg":0}],'
    b'"decision",{"state":"","kind":"action","chosen":"stay","reason":"","candidates":["",'
    b'"stay"],"scores":{},"prompt_hash":"","model":"","attempts":1,"fallback":false,'
    b'"window":0,"summary":false,"why":{}}],'
    b'"transition",{"from":"","to":"","exit":"","description":"continue","reason":"the only '
    b'way out"}],'
    b'"decision",{"state":"","kind":"decision","chosen":"","reason":"the only way out",'
    b'"candidates":[""],"scores":{},"prompt_hash":"","model":"","attempts":0,'
    b'"fallback":false,"window":0,"summary":false,"why":{}}],'
)
"""Format 1's preset dictionary: never edited (see the module's docstring)."""

_ENCODER = json.JSONEncoder(separators=(",", ":"), default=str)
_WINDOW = -11
"""Raw deflate with a 2 KB window: the dictionary and a step's JSON fit, and a small window
is quicker to set up (a value is deflated at every step)."""
_LEVEL, _MEMORY = 6, 4
"""A small hash table (4 KB, not 64): copying the primed compressor is most of what
deflating a snapshot costs, and a turn packs to the same size (reading needs neither)."""
assert len(DICTIONARY) <= 1 << -_WINDOW, "the dictionary must fit the window"
_PRIMED = zlib.compressobj(_LEVEL, zlib.DEFLATED, _WINDOW, _MEMORY, zdict=DICTIONARY)
"""A compressor with the dictionary loaded, copied for each value (a copy is a third of
what setting the dictionary again costs)."""


def pack(value: Any) -> bytes:
    """`value` as JSON, deflated (format 1)."""
    return deflated(_ENCODER.encode(value))


def deflated(text: str) -> bytes:
    """JSON text, deflated (format 1)."""
    deflate = _PRIMED.copy()
    return bytes((FORMAT,)) + deflate.compress(text.encode()) + deflate.flush()


def unpack(data: bytes | memoryview) -> Any:
    """What `pack` wrote, or plain JSON (an earlier layout's, or a migration's)."""
    raw = bytes(data)
    if not raw:
        raise ValueError("an empty stored value")
    if raw[0] in _PLAIN:
        return json.loads(raw)
    if raw[0] != FORMAT:
        raise ValueError(f"a stored value of unknown format {raw[0]}: written by a later cgraph?")
    inflate = zlib.decompressobj(_WINDOW, zdict=DICTIONARY)
    text = inflate.decompress(raw[1:]) + inflate.flush()
    return json.loads(text)


def events_text(events: Sequence[Event]) -> str:
    """Events as one JSON array (plain: `.encode()` stores it, `deflated` packs it); their
    `seq`s must rise (a log is in order)."""
    for before, after in itertools.pairwise(events):
        if after.seq <= before.seq:
            raise ValueError(f"event {after.seq} after event {before.seq} in one step")
    return _ENCODER.encode([[e.seq, e.turn, e.kind, e.at, e.data] for e in events])


def joined(texts: Sequence[str]) -> str:
    """The arrays of `events_text`, in order, as one array (steps folded into their turn)."""
    return "[" + ",".join(t[1:-1] for t in texts if len(t) > 2) + "]"


def pack_events(events: Sequence[Event]) -> bytes:
    """Events as one deflated value (`events_text`)."""
    return deflated(events_text(events))


def unpack_events(session_id: str, data: bytes | memoryview) -> list[Event]:
    """The events `pack_events` wrote (or a migration's plain array of them)."""
    return [
        trusted_event(int(seq), session_id, int(turn), kind, float(at), body)
        for seq, turn, kind, at, body in unpack(data)
    ]
