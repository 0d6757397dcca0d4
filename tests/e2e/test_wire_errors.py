"""Bad input over the wire: every request gets a response with the right code and `data.kind`, and
the server keeps serving afterwards."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsp_client import NULL, LspClient, ResponseError


async def test_absent_or_null_params_mean_empty_params_for_every_method(home: Path, workspace: Path) -> None:
    """Absent and `null` params answer exactly as `{}` does (vscode-jsonrpc's `sendRequest(method)`
    and Neovim's `request(method, nil)` send no params); array params are invalidParams. No method
    hangs or crashes on any of them."""
    lsp = await LspClient.spawn(home, cwd=workspace)
    result = await lsp.initialize([workspace])

    async def outcome(method: str, params: Any) -> tuple[Any, ...]:
        try:
            await lsp.request(method, params)
        except ResponseError as exc:
            return exc.code, exc.kind
        return ("ok",)

    try:
        for method in result["capabilities"]["experimental"]["openvaala"]["methods"]:
            empty = await outcome(method, {})
            assert empty[0] in ("ok", -32602, -32010, -32015, -32017, -32019), (method, empty)
            assert await outcome(method, None) == empty, method  # no params member
            assert await outcome(method, NULL) == empty, method
            assert await outcome(method, []) == (-32602, "invalidParams"), method
        assert await lsp.call("isIdle") == {"idle": True}
        assert await lsp.request("openvaala/isIdle") == {"idle": True}
    finally:
        await lsp.shutdown()


async def test_protocol_level_garbage(client: LspClient) -> None:
    with pytest.raises(ResponseError) as err:
        await client.request("openvaala/noSuchMethod", {})
    assert err.value.code == -32601
    await client.send_raw(b"{this is not json")
    await client.send_raw(b'{"jsonrpc": "2.0", "id": 99}')
    await client.send_raw(b"[1, 2, 3]")
    with pytest.raises(ResponseError) as err:
        await client.request("initialize", {"processId": "not a pid", "capabilities": []})
    assert err.value.code == -32602
    # still serving
    assert await client.call("isIdle") == {"idle": True}


async def test_requests_before_initialize(home: Path, workspace: Path) -> None:
    lsp = await LspClient.spawn(home, cwd=workspace)
    try:
        with pytest.raises(ResponseError) as err:
            await lsp.call("isIdle")
        assert err.value.code == -32002
        await lsp.initialize([workspace])
        assert await lsp.call("isIdle") == {"idle": True}
    finally:
        await lsp.shutdown()
