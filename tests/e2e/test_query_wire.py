"""`openvaala/query` end to end: the real openvaala-lsp and runtime host, a scripted model server,
real DuckDB. Queries read what turns wrote, refuse writes, and stop when cancelled."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fake_provider import FakeProviderServer
from lsp_client import TIMEOUT, LspClient, ResponseError
from processes import alive
from turn_helpers import STANDALONE, query, start

FOREVER = "SELECT count(*) FROM range(1000000000000000)"  # never ends on its own
QUERY_THREADS = 4  # the runtime's query threads: occupying all shows whether a cancelled query let go
PER_CLIENT = 2  # queries one connection may run at once


@pytest.fixture
async def agent(home: Path, workspace: Path, provider: FakeProviderServer) -> AsyncIterator[LspClient]:
    lsp = await start(home, workspace, provider)
    yield lsp
    await lsp.shutdown()


async def until(predicate: Any, what: str) -> None:
    try:
        async with asyncio.timeout(TIMEOUT):
            while not predicate():
                await asyncio.sleep(0.05)
    except TimeoutError:
        pytest.fail(f"timed out waiting until {what}")


async def test_cancel_request_interrupts_long_queries(client: LspClient) -> None:
    sent = [await client.send_request("openvaala/query", {"sql": FOREVER}) for _ in range(PER_CLIENT)]
    for msg_id, _ in sent:
        await client.notify("$/cancelRequest", {"id": msg_id})
    for _, answer in sent:
        with pytest.raises(ResponseError) as caught:
            await asyncio.wait_for(answer, TIMEOUT)
        assert caught.value.code == -32800
    # were they still running, this would wait for a free query thread forever
    assert (await query(client, "SELECT 42 AS answer"))["rows"] == [[42]]


async def test_an_editor_leaving_mid_query_interrupts_it(home: Path, workspace: Path) -> None:
    staying = await LspClient.spawn(home, cwd=workspace)
    await staying.initialize([workspace])
    for _ in range(QUERY_THREADS // PER_CLIENT):  # together they take every query thread
        leaving = await LspClient.spawn(home, cwd=workspace)
        await leaving.initialize([workspace])
        for _ in range(PER_CLIENT):
            await leaving.send_request("openvaala/query", {"sql": FOREVER})
        await leaving.call("isIdle")  # answered after the host has started the queries sent before it
        leaving.kill()
        await leaving.close()
    assert (await query(staying, "SELECT 42 AS answer"))["rows"] == [[42]]
    host = int((home / "run" / "host.pid").read_text())
    assert await staying.shutdown() == 0
    await until(lambda: not alive(host), "the host, idle, stops")


async def test_shutdown_stops_the_runtime_with_a_query_running(home: Path, workspace: Path) -> None:
    lsp = await LspClient.spawn(home, cwd=workspace, args=STANDALONE)  # shutdown stops its runtime
    await lsp.initialize([workspace])
    _, answer = await lsp.send_request("openvaala/query", {"sql": FOREVER})
    await query(lsp, "SELECT 1")
    await lsp.request("shutdown")
    with pytest.raises(ResponseError) as caught:
        await asyncio.wait_for(answer, TIMEOUT)
    assert caught.value.kind == "runtimeStopped"
    await lsp.notify("exit")
    assert await lsp.close() == 0
