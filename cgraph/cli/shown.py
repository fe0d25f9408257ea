"""Text from a model, a graph or a user made safe to print: one rule for every place the
command line writes such text to a terminal or a pipe.

A model's reply may hold ESC sequences (they set the terminal's title, clear the screen,
move the cursor), a `\\r` that rewrites the line or splits it for a script reading lines,
C1 controls that some terminals read as ESC (`\\x9b`), bidirectional overrides that show
text in another order than it has (`\\u202e`), or a lone surrogate no encoding can write.
Each is written escaped, as Python writes it in a string literal (`\\x1b`, `\\r`,
`\\u202e`), so what is printed can neither act on the terminal nor split a line. A tab
stays; a line break stays only where the output keeps the text's own lines (the REPL).
"""

from __future__ import annotations

import json
import re
from typing import Any, TextIO, cast

_UNSAFE = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f"  # C0 but tab and line feed, DEL, C1
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidirectional marks and overrides
    "\u2028\u2029"  # line and paragraph separators
    "\ud800-\udfff"  # lone surrogates
)
_IN_LINES = re.compile(f"[{_UNSAFE}]")
_ON_ONE_LINE = re.compile(f"[\n{_UNSAFE}]")
# Inside JSON text, json.dumps escapes C0 itself; what is left of the set may stand raw.
_IN_JSON = re.compile(
    "[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]"
)


def _escaped(found: re.Match[str]) -> str:
    return found.group().encode("unicode_escape").decode("ascii")


def _json_escaped(found: re.Match[str]) -> str:
    return f"\\u{ord(found.group()):04x}"


def printable(text: str, *, lines: bool = False) -> str:
    """`text` with every control character escaped; with `lines`, its line breaks kept."""
    return (_IN_LINES if lines else _ON_ONE_LINE).sub(_escaped, text)


def printable_lines(text: str) -> list[str]:
    """`text` as printable lines (a message of several lines, each escaped)."""
    return [printable(line) for line in text.split("\n")]


def json_line(data: Any) -> str:
    """`data` as one line of JSON whose text holds no control character raw (the values
    are unchanged: a JSON reader gets back exactly what was written)."""
    return _IN_JSON.sub(_json_escaped, json.dumps(data, ensure_ascii=False))


class Shown:
    """A text stream that writes everything with its control characters escaped: what a
    report prints (a lint message quoting a graph's value, a test's reply) comes from a
    graph, a model or a user. With `json`, as JSON's own `\\u` escapes, so the output
    stays valid JSON (its C0 controls are already escaped by the encoder)."""

    def __init__(self, stream: TextIO, *, json: bool = False) -> None:
        self._stream = stream
        self._json = json

    def write(self, text: str) -> int:
        safe = _IN_JSON.sub(_json_escaped, text) if self._json else printable(text, lines=True)
        self._stream.write(safe)
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, encoding: the stream's own
        return getattr(self._stream, name)


def shown(stream: TextIO, *, json: bool = False) -> TextIO:
    """`stream` seen through `Shown`, typed as the text stream it stands in for (reports
    only write and flush)."""
    return cast(TextIO, Shown(stream, json=json))
