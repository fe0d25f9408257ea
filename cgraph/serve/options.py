"""The options of `cgraph serve`, as parsed from the command line, and the checks that
refuse a server before it starts: the address without tokens, the tokens file, memory that
one process keeps while several serve.

The options travel to each worker process as JSON (`CGRAPH_SERVE_OPTIONS`), the served
graphs' `Trust` and `ReadLimits` among them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, fields
from pathlib import Path

from cgraph.errors import ConfigError
from cgraph.spec.limits import ReadLimits, read_limits_of
from cgraph.spec.trust import Trust, trust_of

LOOPBACK = ("127.0.0.1", "::1", "localhost")
FORMATS = ("text", "json")
"""What `--log-format` takes."""


@dataclass(frozen=True, kw_only=True)
class ServeOptions:
    """`cgraph serve`'s options."""

    graphs: tuple[str, ...]
    """Graph files and folders (folders are searched as `cgraph lint` searches them)."""
    host: str = "127.0.0.1"
    port: int = 8000
    store: str = ".cgraph"
    """A folder (its `sessions.sqlite`), a `.sqlite` file or a `postgresql://` URL."""
    memory: str | None = None
    """`off`, `chroma://HOST:PORT`, or None: embedded Chroma beside a folder store."""
    model: str | None = None
    """None: the session's own model, else the graph's `model.name`, else `semantic`."""
    api_base: str | None = None
    """The model server's base URL (an OpenAI-compatible server: `openai/<name>`)."""
    tokens: str | None = None
    """A file of `TOKEN USER` lines; None serves the one user `local` on loopback only."""
    workers: int = 1
    wait: float = 5.0
    """Seconds a request waits for another turn of its session before a 409 (waiters are
    served in the order they came)."""
    lease: float = 4.0
    """Seconds a session's lease lasts unrenewed: how long a process killed mid-turn keeps
    its sessions from the others (a SQLite store's are freed at once)."""
    turns_per_minute: int = 60
    """Turns (messages, undos, new sessions) one user may start per minute, per process."""
    sessions_per_user: int = 100
    """Sessions one user may keep in the store."""
    threads: int = 16
    """Turns one process runs at once (threads; a turn holds no database connection)."""
    max_in_flight: int = 2000
    """Writes (`POST`s: turns waiting on a model among them) one process carries at once;
    beyond it a new message or session gets 503 `overloaded` with `Retry-After`. Reads
    never count: a client polling a session does not push a message out."""
    header_timeout: float = 10.0
    """Seconds a client may take to send a request's headers (from the connection, or
    the first byte of a kept-alive connection's next request); past them, 408 and closed."""
    body_timeout: float = 30.0
    """Seconds a client may take to send a request's body, after its headers."""
    max_connections: int = 0
    """Connections one process keeps open (0: its open-file limit, raised to the hard
    limit, less 128). At the cap a new connection closes the one idle (or still sending
    headers) the longest, else gets 503."""
    allow_origins: tuple[str, ...] = ()
    """Web origins besides the server's own that may write to it (a front end elsewhere)."""
    metrics: bool = True
    """`GET /metrics` answers (Prometheus text), without the API's tokens."""
    metrics_token: str | None = None
    """The bearer token `/metrics` asks for instead, if any."""
    log_format: str = "text"
    """`text` or `json`: one line per request and per turn."""
    log_content: bool = False
    """Turn lines carry the user's message and the reply."""
    trace_content: bool = False
    """Model-call spans carry the prompt and the answer."""
    webhooks: tuple[str, ...] = ()
    """`URL [events=TYPE,…] [secret=env:NAME|file:PATH]`, one per destination."""
    trust: Trust = field(default_factory=Trust)
    """What the served graphs may reach besides their folders (`cgraph.spec.trust`)."""
    limits: ReadLimits = field(default_factory=ReadLimits)
    """The limits of what is read: the graphs and their sub-graphs."""

    def to_json(self) -> str:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        return json.dumps(data | {"trust": self.trust.as_data(), "limits": self.limits.as_data()})

    @classmethod
    def from_json(cls, text: str) -> ServeOptions:
        data = json.loads(text)
        data["graphs"], data["webhooks"] = tuple(data["graphs"]), tuple(data["webhooks"])
        data["allow_origins"] = tuple(data["allow_origins"])
        data["trust"], data["limits"] = trust_of(data["trust"]), read_limits_of(data["limits"])
        return cls(**data)


def checked(options: ServeOptions) -> ServeOptions:
    """`options`, or `ConfigError` for a server that must not start as asked."""
    if options.tokens is None and options.host not in LOOPBACK:
        raise ConfigError(
            f"--host {options.host} without --tokens would let anyone on the network in; "
            "give --tokens FILE (lines `TOKEN USER`), or serve on 127.0.0.1"
        )
    if options.workers < 1 or options.threads < 1:
        raise ConfigError("--workers and --threads must be at least 1")
    if options.max_in_flight < 1:
        raise ConfigError("--max-in-flight must be at least 1")
    if min(options.header_timeout, options.body_timeout) <= 0:
        raise ConfigError("--header-timeout and --body-timeout must be above 0 seconds")
    if options.max_connections < 0:
        raise ConfigError("--max-connections must be 0 (from the open-file limit) or more")
    if options.lease < 0.5:
        raise ConfigError("--lease must be at least 0.5 seconds (it is renewed every quarter)")
    if options.tokens is not None:
        read_tokens(Path(options.tokens))
    for origin in options.allow_origins:
        scheme, _, rest = origin.partition("://")
        if scheme not in ("http", "https") or not rest or "/" in rest.rstrip("/"):
            raise ConfigError(
                f"--allow-origin {origin}: an origin is `https://HOST` or `http://HOST:PORT` "
                "(no path)"
            )
    if options.log_format not in FORMATS:
        raise ConfigError(f"--log-format {options.log_format}: choose {' or '.join(FORMATS)}")
    if options.metrics_token is not None and len(options.metrics_token) < 16:
        raise ConfigError("--metrics-token must have at least 16 characters")
    if options.webhooks:
        from cgraph.serve.webhooks import destinations

        destinations(options.webhooks)
    return options


def read_tokens(path: Path) -> dict[str, str]:
    """The tokens file as {sha-256 of a token: its user}. Lines are `TOKEN USER`; blank
    lines and `#` comments are skipped. A token is looked up by its digest, so comparing
    one takes the same time whatever it shares with a valid one."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"--tokens {path}: cannot read it ({err})") from err
    found: dict[str, str] = {}
    for number, line in enumerate(lines, 1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if len(words) != 2:
            raise ConfigError(
                f"--tokens {path}:{number}: expected `TOKEN USER`, got {len(words)} words"
            )
        token, user = words
        if len(token) < 16:
            raise ConfigError(f"--tokens {path}:{number}: a token must have at least 16 characters")
        found[digest(token)] = user
    if not found:
        raise ConfigError(f"--tokens {path}: no `TOKEN USER` line")
    return found


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
