"""The studio's endpoints, behind the same gate as the API (`cgraph.serve.app`): the page
and its two files, and what only the page needs — the graph files watched, a graph's
picture, a session as the page shows it, reload (and replay), save as test. The chat
itself goes through the API (`/v1/sessions...`), as any client's does.

Each launch has a secret: the address printed carries it (`/studio?secret=…`), the first
visit turns it into a cookie for this port and drops it from the address, and every
studio endpoint wants that cookie (a page elsewhere, even on this machine, has neither).
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import quote

from starlette.responses import FileResponse, RedirectResponse, Response

from cgraph.serve.app import Call, answer
from cgraph.serve.limits import query_integer, text_field
from cgraph.serve.openapi import MAX_SEQ, Endpoint
from cgraph.serve.problems import Problem
from cgraph.studio.saving import save
from cgraph.studio.turns import looked
from cgraph.studio.workspace import Workspace

PAGE = Path(__file__).parent / "page"
FILES = {
    "index.html": "text/html; charset=utf-8",
    "studio.js": "text/javascript; charset=utf-8",
    "studio.css": "text/css; charset=utf-8",
}
FRESH = {"cache-control": "no-store"}
"""The page and its files change with cgraph, a picture with the graph: never cached."""


def new_secret() -> str:
    """A launch's secret (what the printed address carries)."""
    return secrets.token_urlsafe(24)


def cookie_name(port: int) -> str:
    """The secret's cookie; one per port, since cookies do not keep ports apart."""
    return f"cgraph-studio-{port}"


def endpoints(workspace: Workspace, secret: str) -> tuple[Endpoint, ...]:
    """The studio's routes on `workspace` (added to `cgraph serve`'s own), for visitors
    who came through the address with `secret`."""
    service = workspace.service
    cookie = cookie_name(service.options.port)

    def guarded(
        handler: Callable[[Call], Awaitable[Response]],
    ) -> Callable[[Call], Awaitable[Response]]:
        async def checked(call: Call) -> Response:
            if not _same(call.request.cookies.get(cookie, ""), secret):
                raise Problem(
                    403,
                    "studio_secret",
                    "open the studio through the address `cgraph studio` printed "
                    "(it carries this launch's secret)",
                )
            return await handler(call)

        checked.__name__ = handler.__name__
        return checked

    @guarded
    async def index(call: Call) -> Response:
        return _file("index.html")

    async def page(call: Call) -> Response:
        given = call.request.query_params.get("secret")
        if given is None:
            return await index(call)
        if not _same(given, secret):
            raise Problem(403, "studio_secret", "this is not this launch's studio secret")
        moved = RedirectResponse(quote(call.request.url.path), status_code=303)
        moved.set_cookie(cookie, secret, httponly=True, samesite="strict", path="/")
        return moved

    async def asset(call: Call) -> Response:
        return _file(str(call.request.path_params.get("name", "")))

    async def graphs(call: Call) -> Response:
        return answer(await call.run(workspace.graphs))

    async def picture(call: Call) -> Response:
        studied = workspace.get(call.request.query_params.get("file", ""))
        if studied.drawing is None:
            raise Problem(409, "graph_broken", f"{studied.file} has errors; fix them and reload")
        svg = await call.run(studied.drawing.svg, _opened(call))
        return Response(svg, media_type="image/svg+xml", headers=FRESH)

    async def session(call: Call) -> Response:
        after = query_integer(call.request.query_params.get("after"), 0, "after", -1, MAX_SEQ)

        def look() -> object:
            opened = service.opened(call.user, call.sid)
            drawing = workspace.named(opened.graph.name).drawing
            assert drawing is not None  # a served graph is drawn
            return looked(opened, drawing, after, _opened(call))

        return answer(await call.run(look))

    async def reload(call: Call) -> Response:
        file = str(text_field(call.data, "file", limit=4096))
        replay = text_field(call.data, "replay", limit=64, required=False)
        return answer(await call.run(workspace.reload, call.user, file, replay))

    async def save_test(call: Call) -> Response:
        name = text_field(call.data, "name", limit=200, required=False) or ""

        def saved() -> object:
            opened = service.opened(call.user, call.sid)
            file = workspace.named(opened.graph.name).file
            return save(opened, file, name, service.options.model, service.options.limits)

        return answer(await call.run(saved), 201)

    return (
        Endpoint("GET", "/studio", page, "The studio page", public=True),
        Endpoint(
            "GET",
            "/studio/static/{name}",
            guarded(asset),
            "The page's script and style",
            public=True,
        ),
        Endpoint("GET", "/studio/api/graphs", guarded(graphs), "The graph files watched"),
        Endpoint("GET", "/studio/api/picture", guarded(picture), "A graph drawn, with element ids"),
        Endpoint(
            "GET", "/studio/api/sessions/{id}", guarded(session), "A session as the page shows it"
        ),
        Endpoint(
            "POST", "/studio/api/reload", guarded(reload), "Lint a graph file again and serve it"
        ),
        Endpoint(
            "POST", "/studio/api/sessions/{id}/test", guarded(save_test), "Save as a test case"
        ),
    )


def _same(given: str, secret: str) -> bool:
    """`given` is the secret, compared in a time that does not tell how much matched."""
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), secret.encode())


def _file(name: str) -> Response:
    if name not in FILES:
        raise Problem(404, "no_route", f"no studio file `{name}`")
    return FileResponse(PAGE / name, media_type=FILES[name], headers=FRESH)


def _opened(call: Call) -> frozenset[str]:
    """The `graph` states whose clusters the page opened (`open=a,b`)."""
    return frozenset(n for n in call.request.query_params.get("open", "").split(",") if n)
