"""Session ids as a client names them and as the store keeps them. A client chooses its
ids (`session_id`, `X-Session-Id`), so the store keeps a token user's session under
`USER/ID`: two users may both have a session `a`, and a create never tells one user
that another's id is taken (a 409 where every other answer is the 404 of a missing
session). The client only ever sees `ID`. User `local` (a server without tokens) keeps
its ids as given, as `cgraph run --session` names them in the same store.

A client's id never holds the separator (`ID_PATTERN`; a path segment cannot), so a
scoped id is one user's only, and the store checks the owner besides.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from cgraph.errors import CgraphError
from cgraph.serve.problems import Problem

LOCAL_USER = "local"
"""The one user of a server without `--tokens`."""
SEPARATOR = "/"


def store_id(user: str, sid: str) -> str:
    """The id the store keeps `user`'s session `sid` under."""
    return sid if user == LOCAL_USER else f"{user}{SEPARATOR}{sid}"


def client_id(user: str, stored_id: str) -> str:
    """The id `user` knows their stored session `stored_id` by."""
    prefix = f"{user}{SEPARATOR}"
    if user != LOCAL_USER and stored_id.startswith(prefix):
        return stored_id[len(prefix) :]
    return stored_id


@contextmanager
def scoped(user: str, sid: str) -> Iterator[str]:
    """The stored id of `user`'s session `sid`, and errors raised in here naming the
    session as the client does (the library's messages name a session by its stored id,
    always as `` `ID` ``)."""
    kept = store_id(user, sid)
    try:
        yield kept
    except (CgraphError, Problem) as error:
        if kept != sid and f"`{kept}`" in error.message:
            error.message = error.message.replace(f"`{kept}`", f"`{sid}`")
            error.args = (error.message,) if isinstance(error, CgraphError) else error.args
        raise
