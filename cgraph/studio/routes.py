"""The studio's endpoints, behind the same gate as the API (`cgraph.serve.app`): the page
and its two files, and what only the page needs — the graph files watched, a graph's
picture, a session as the page shows it, reload (and replay), save as test. The chat
itself goes through the API (`/v1/sessions...`), as any client's does.
"""

from __future__ import annotations

from pathlib import Path

from starlette.responses import FileResponse, Response

from cgraph.serve.app import Call, answer
from cgraph.serve.limits import text_field
from cgraph.serve.openapi import Endpoint
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


def endpoints(workspace: Workspace) -> tuple[Endpoint, ...]:
    """The studio's routes on `workspace` (added to `cgraph serve`'s own)."""
    service = workspace.service

    async def page(call: Call) -> Response:
        return _file("index.html")

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
        after = _after(call.request.query_params.get("after", "0"))

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
            return save(opened, file, name, service.options.model)

        return answer(await call.run(saved), 201)

    return (
        Endpoint("GET", "/studio", page, "The studio page", public=True),
        Endpoint("GET", "/studio/static/{name}", asset, "The page's script and style", public=True),
        Endpoint("GET", "/studio/api/graphs", graphs, "The graph files watched"),
        Endpoint("GET", "/studio/api/picture", picture, "A graph drawn, with element ids"),
        Endpoint("GET", "/studio/api/sessions/{id}", session, "A session as the page shows it"),
        Endpoint("POST", "/studio/api/reload", reload, "Lint a graph file again and serve it"),
        Endpoint("POST", "/studio/api/sessions/{id}/test", save_test, "Save as a test case"),
    )


def _file(name: str) -> Response:
    if name not in FILES:
        raise Problem(404, "no_route", f"no studio file `{name}`")
    return FileResponse(PAGE / name, media_type=FILES[name], headers=FRESH)


def _opened(call: Call) -> frozenset[str]:
    """The `graph` states whose clusters the page opened (`open=a,b`)."""
    return frozenset(n for n in call.request.query_params.get("open", "").split(",") if n)


def _after(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise Problem(422, "invalid_field", "`after` must be an integer") from None
