"""The served loop's connections to PostgreSQL (`AsyncConnections`): bounded, lent first
come first served, and never lent again in a state a statement could trip on."""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest

from cgraph.backends.store import postgres_pool
from cgraph.backends.store.postgres_pool import AsyncConnections, for_asyncpg, numbered
from cgraph.errors import StoreError

pytestmark = pytest.mark.slow  # a real PostgreSQL server


def served(url: str, size: int, body: Any) -> Any:
    """`body(connections)` run on a loop of its own, the connections closed after."""

    async def main() -> Any:
        connections = AsyncConnections(url, size, "the test's database", asyncio.get_running_loop())
        try:
            return await body(connections)
        finally:
            await connections.close()

    return asyncio.run(main())


def backends(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_many_callers_share_a_few_connections_and_wait_in_the_order_they_came(pg_url: str) -> None:
    order: list[int] = []

    async def body(connections: AsyncConnections) -> tuple[int, int]:
        peak = 0

        async def caller(i: int) -> None:
            nonlocal peak
            async with connections.connection() as conn:
                order.append(i)
                peak = max(peak, backends(pg_url))
                await conn.execute("SELECT pg_sleep(0.01)")

        async def opening() -> None:
            async with connections.connection():
                await asyncio.sleep(0.1)  # all three open at once

        await asyncio.gather(*(opening() for _ in range(3)))
        await asyncio.gather(*(caller(i) for i in range(40)))
        return peak, connections.opened

    peak, opened = served(pg_url, 3, body)
    assert opened == 3 and peak <= 3
    assert order == list(range(40))  # three at once, the rest first come first served


def test_a_statement_interrupted_by_its_caller_leaves_the_connection_fit_for_the_next(
    pg_url: str,
) -> None:
    async def body(connections: AsyncConnections) -> tuple[float, list[Any]]:
        async def slow() -> None:
            async with connections.connection() as conn:
                await conn.execute("SELECT pg_sleep(5)")

        task = asyncio.create_task(slow())
        await asyncio.sleep(0.3)
        began = asyncio.get_running_loop().time()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        rows = await connections.fetch("SELECT 1", ())
        return asyncio.get_running_loop().time() - began, [tuple(r) for r in rows]

    waited, rows = served(pg_url, 1, body)
    assert rows == [(1,)] and waited < 4  # the server was told to stop, not waited out


def test_a_connection_given_back_inside_a_transaction_is_closed_not_lent_again(
    pg_url: str,
) -> None:
    async def body(connections: AsyncConnections) -> tuple[list[Any], int]:
        async with connections.connection() as conn:
            await conn.execute("BEGIN")
            await conn.execute("CREATE TABLE half_done (x int)")
        rows = await connections.fetch(
            "SELECT count(*) FROM pg_tables WHERE tablename = %s", ("half_done",)
        )
        return [tuple(r) for r in rows], connections.opened

    rows, opened = served(pg_url, 1, body)
    assert rows == [(0,)] and opened == 2  # its work undone, and a new connection opened


def test_a_connection_the_server_dropped_while_idle_is_not_lent_again(pg_url: str) -> None:
    async def body(connections: AsyncConnections) -> tuple[list[Any], int]:
        async with connections.connection() as conn:
            pid = conn.get_server_pid()
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        await asyncio.sleep(0.3)  # the driver reads the server's goodbye
        rows = [tuple(r) for r in await connections.fetch("SELECT 2", ())]
        return rows, connections.opened

    rows, opened = served(pg_url, 1, body)
    assert rows == [(2,)] and opened == 2  # no statement failed on the dead one


def test_a_statement_on_a_connection_lost_mid_statement_is_a_located_error(pg_url: str) -> None:
    async def body(connections: AsyncConnections) -> tuple[str, list[Any], int]:
        async def kill_soon(pid: int) -> None:
            await asyncio.sleep(0.3)
            await asyncio.to_thread(terminate, pg_url, pid)

        async with connections.connection() as conn:
            pid = conn.get_server_pid()
        killing = asyncio.create_task(kill_soon(pid))
        with pytest.raises(StoreError) as failed:
            await connections.fetch("SELECT pg_sleep(3)", ())
        await killing
        rows = [tuple(r) for r in await connections.fetch("SELECT 2", ())]
        return str(failed.value), rows, connections.opened

    said, rows, opened = served(pg_url, 1, body)
    assert said.startswith("session store the test's database:")
    assert rows == [(2,)] and opened == 2


def terminate(url: str, pid: int) -> None:
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))


def test_a_caller_finding_no_connection_free_within_the_bound_gets_a_located_error(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres_pool, "WAIT_SECONDS", 0.3)

    async def body(connections: AsyncConnections) -> tuple[str, list[Any]]:
        async def holder() -> None:
            async with connections.connection() as conn:
                await conn.execute("SELECT pg_sleep(1)")

        held = asyncio.create_task(holder())
        await asyncio.sleep(0.2)
        with pytest.raises(StoreError) as failed:
            await connections.fetch("SELECT 1", ())
        await held
        return str(failed.value), [tuple(r) for r in await connections.fetch("SELECT 3", ())]

    said, rows = served(pg_url, 1, body)
    assert said == "session store the test's database: no connection free within 0.3 s"
    assert rows == [(3,)]  # the one who gave up took no place with it


def test_an_unreachable_database_is_a_located_error_and_frees_its_place(pg_url: str) -> None:
    unreachable = "postgresql://nobody@127.0.0.1:1/none"

    async def body(connections: AsyncConnections) -> tuple[str, str]:
        said = []
        for _ in range(2):  # a second try opens again, with its place given back
            with pytest.raises(StoreError) as failed:
                await connections.fetch("SELECT 1", ())
            said.append(str(failed.value))
        return said[0], said[1]

    first, second = served(unreachable, 1, body)
    assert first.startswith("cannot reach session store the test's database: ")
    assert second.startswith("cannot reach session store the test's database: ")


def test_psycopg_placeholders_are_numbered_once_a_name() -> None:
    assert numbered("SELECT %s, %s WHERE x LIKE 'a%%'") == ("SELECT $1, $2 WHERE x LIKE 'a%'", ())
    named = "UPDATE t SET a = %(b)s WHERE id = %(id)s AND (%(b)s IS NULL OR c = %(b)s)"
    assert numbered(named) == (
        "UPDATE t SET a = $1 WHERE id = $2 AND ($1 IS NULL OR c = $1)",
        ("b", "id"),
    )
    with pytest.raises(ValueError):
        numbered("SELECT %s, %(a)s")


def test_a_named_statement_takes_its_arguments_by_name(pg_url: str) -> None:
    async def body(connections: AsyncConnections) -> list[Any]:
        got = await connections.fetch(
            "SELECT %(b)s::int + 1, %(a)s::text, %(b)s::int", {"a": "x", "b": 41, "unused": 0}
        )
        return [tuple(r) for r in got]

    assert served(pg_url, 1, body) == [(42, "x", 41)]


def test_a_url_with_libpq_parameters_is_read_by_the_loop_s_driver_too() -> None:
    url = (
        "postgresql://u:p@db:5432/s?connect_timeout=3&keepalives=1&keepalives_idle=30"
        "&sslmode=require&fallback_application_name=cg&options=-c%20search_path%3Dx"
    )
    dsn, seconds = for_asyncpg(url)
    assert seconds == 3.0  # libpq's bound on connecting, kept
    assert dsn == (
        "postgresql://u:p@db:5432/s?sslmode=require&options=-c+search_path%3Dx&application_name=cg"
    )
    assert for_asyncpg("postgresql://db/s?connect_timeout=0") == ("postgresql://db/s", 10.0)


def test_a_served_store_opens_on_a_url_with_libpq_only_parameters(pg_url: str) -> None:
    url = f"{pg_url}?connect_timeout=5&keepalives=1&tcp_user_timeout=1000"

    async def body(connections: AsyncConnections) -> list[Any]:
        return [tuple(r) for r in await connections.fetch("SELECT 4", ())]

    assert served(url, 1, body) == [(4,)]  # asyncpg would send them to the server as settings


def test_closed_connections_open_again_when_used_and_a_lent_one_is_closed_on_its_return(
    pg_url: str,
) -> None:
    async def body(connections: AsyncConnections) -> tuple[list[Any], int, int]:
        async with connections.connection() as lent:
            await connections.close()  # as the server's loop stops, a statement under way
            await lent.execute("SELECT 1")
        after = backends(pg_url)
        rows = [tuple(r) for r in await connections.fetch("SELECT 5", ())]
        return rows, connections.opened, after

    rows, opened, after = served(pg_url, 1, body)
    assert after == 0  # the lent one was closed when it came back
    assert rows == [(5,)] and opened == 2  # and a statement after the close opened anew


def test_no_host_of_the_wanted_kind_is_a_located_error(pg_url: str) -> None:
    async def body(connections: AsyncConnections) -> str:
        with pytest.raises(StoreError) as failed:
            await connections.fetch("SELECT 1", ())
        return str(failed.value)

    said = served(f"{pg_url}?target_session_attrs=standby", 1, body)
    assert said.startswith("cannot reach session store the test's database: ")
