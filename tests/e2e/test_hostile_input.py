"""Hostile and buggy clients over the real process, in both modes (the thin front relaying to the
runtime host, and --standalone): every message gets an answer with `data.kind` or is dropped when it
cannot be answered, nothing takes the process down, and the connection keeps serving afterwards.

Each test is named after what it protects; the fuzz suite (test_fuzz_wire.py) searches the rest.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from lsp_client import LspClient, ResponseError

MODES = ["front", "standalone"]


@pytest.fixture(params=MODES)
async def lsp(request: pytest.FixtureRequest, home: Path, workspace: Path) -> AsyncIterator[LspClient]:
    args = ["--standalone"] if request.param == "standalone" else []
    client = await LspClient.spawn(home, cwd=workspace, args=args, env={"OPENVAALA_MAX_MESSAGE_BYTES": str(1 << 20)})
    await client.initialize([workspace])
    yield client
    await client.shutdown()


async def still_serving(lsp: LspClient) -> None:
    assert lsp.process.returncode is None
    assert await lsp.call("isIdle") == {"idle": True}


def error_of(response: dict[str, Any]) -> tuple[int, str]:
    error = response["error"]
    assert "traceback" not in json.dumps(error)
    return error["code"], error["data"]["kind"]


async def answer_to(lsp: LspClient, msg_id: Any) -> dict[str, Any]:
    response: dict[str, Any] = await lsp.response(lambda m: m.get("id") == msg_id)
    return response


async def test_unsubscribe_with_a_non_string_subscription_id_is_refused_and_the_front_lives(lsp: LspClient) -> None:
    for bad in (["a"], {"a": 1}, 7, None):
        with pytest.raises(ResponseError) as err:
            await lsp.call("unsubscribe", {"subscriptionId": bad})
        assert (err.value.code, err.value.kind) == (-32602, "invalidParams")
        assert "$.subscriptionId" in err.value.message
    await still_serving(lsp)


async def test_json_nested_100000_deep_is_refused_not_fatal(lsp: LspClient) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    await lsp.send_raw(b'{"jsonrpc":"2.0","id":"deep","method":"openvaala/isIdle","params":' + deep + b"}")
    assert error_of(await answer_to(lsp, "deep")) == (-32020, "messageTooLarge")
    # deep enough to pass Python's decoder, still refused before anything recurses into it
    await lsp.send_raw(
        b'{"jsonrpc":"2.0","id":"d2","method":"openvaala/isIdle","params":{"a":' + b"[" * 500 + b"]" * 500 + b"}}"
    )
    assert error_of(await answer_to(lsp, "d2")) == (-32020, "messageTooLarge")
    await still_serving(lsp)


async def test_a_header_line_over_a_mebibyte_is_refused_and_reading_resumes(lsp: LspClient) -> None:
    await lsp.send_bytes(b"X-Junk: " + b"a" * (1 << 20) + b"\r\n")
    await lsp.send_raw(b'{"jsonrpc":"2.0","id":"after","method":"openvaala/isIdle"}')
    assert error_of(await lsp.response(lambda m: m.get("id") is None)) == (-32700, "parseError")
    assert (await answer_to(lsp, "after"))["result"] == {"idle": True}


async def test_duplicate_content_length_headers(lsp: LspClient) -> None:
    body = b'{"jsonrpc":"2.0","id":"same","method":"openvaala/isIdle"}'
    await lsp.send_bytes(b"Content-Length: %d\r\nContent-Length: %d\r\n\r\n%s" % (len(body), len(body), body))
    assert (await answer_to(lsp, "same"))["result"] == {"idle": True}  # the same value twice is one value
    body = b'{"jsonrpc":"2.0","id":"conflict","method":"openvaala/isIdle"}'
    await lsp.send_bytes(b"Content-Length: %d\r\nContent-Length: 3\r\n\r\n%s" % (len(body), body))
    assert error_of(await lsp.response(lambda m: m.get("id") is None)) == (-32700, "parseError")
    await still_serving(lsp)


async def test_forty_header_lines_are_refused_the_same_way_in_both_modes(lsp: LspClient) -> None:
    body = b'{"jsonrpc":"2.0","id":"h40","method":"openvaala/isIdle"}'
    headers = b"".join(b"X-%d: y\r\n" % i for i in range(40))
    await lsp.send_bytes(headers + b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    assert error_of(await lsp.response(lambda m: m.get("id") is None)) == (-32700, "parseError")
    await still_serving(lsp)
    # refused by the front itself: the host never saw it, so nothing reported the host lost
    assert not [n for n in lsp.notifications if n["method"] == "window/logMessage" and "stopped" in str(n)]


async def test_a_method_that_is_not_a_string_gets_invalid_request(lsp: LspClient) -> None:
    await lsp.send_raw(json.dumps({"jsonrpc": "2.0", "id": "m5", "method": 5}).encode())
    assert error_of(await answer_to(lsp, "m5")) == (-32600, "invalidRequest")
    await still_serving(lsp)


async def test_batches_and_bad_ids_get_errors_with_a_kind_and_no_traceback(lsp: LspClient) -> None:
    await lsp.send_raw(b'[{"jsonrpc":"2.0","id":1,"method":"openvaala/isIdle"}]')
    first = await lsp.response(lambda m: m.get("id") is None and "batch" in m["error"]["message"])
    assert error_of(first) == (-32600, "invalidRequest")
    for bad_id in ({"x": 1}, [1], 1.5, True, None):
        lsp.responses.clear()
        message = {"jsonrpc": "2.0", "id": bad_id, "method": "openvaala/isIdle"}
        await lsp.send_raw(json.dumps(message).encode())
        response = await lsp.response(lambda m: True)
        assert response["id"] is None
        assert error_of(response) == (-32600, "invalidRequest"), bad_id
    await still_serving(lsp)


async def test_a_nan_id_is_a_parse_error_and_never_echoed(lsp: LspClient) -> None:
    for constant in (b"NaN", b"Infinity", b"-Infinity"):
        lsp.responses.clear()
        await lsp.send_raw(b'{"jsonrpc":"2.0","id":' + constant + b',"method":"openvaala/isIdle"}')
        response = await lsp.response(lambda m: True)  # the client's reader refuses NaN: this is JSON
        assert response["id"] is None and error_of(response) == (-32700, "parseError")
    await still_serving(lsp)


async def test_lone_surrogates_are_invalid_params_naming_the_field(lsp: LspClient) -> None:
    conversation = await lsp.call("createConversation")
    cases = [
        ("listConversations", b'{"query":"\\ud800"}', "$.query"),
        (
            "setConversationTitle",
            b'{"conversationId":"%s","title":"a\\udfffb"}' % conversation["id"].encode(),
            "$.title",
        ),
        ("createConversation", b'{"environment":["A=\\udc00"]}', "$.environment[0]"),
    ]
    for index, (method, params, path) in enumerate(cases):
        body = b'{"jsonrpc":"2.0","id":"s%d","method":"openvaala/%s","params":%s}' % (index, method.encode(), params)
        await lsp.send_raw(body)
        response = await answer_to(lsp, f"s{index}")
        assert error_of(response) == (-32602, "invalidParams"), method
        assert path in response["error"]["message"], response
    # a valid surrogate pair is one character, not an error
    await lsp.send_raw(
        b'{"jsonrpc":"2.0","id":"pair","method":"openvaala/listConversations","params":{"query":"\\ud83d\\ude00"}}'
    )
    assert "result" in await answer_to(lsp, "pair")
    await still_serving(lsp)


async def test_nul_bytes_in_directories_are_invalid_params_naming_the_field(lsp: LspClient) -> None:
    cases = [
        ("resolveWorkspaceDirectory", {"directory": "src\0x"}, "$.directory"),
        ("resolveWorkspaceDirectory", {"directory": "src", "baseDirectory": "/tmp\0"}, "$.baseDirectory"),
        ("getWorkspaceDirectories", {"directory": "a\0"}, "$.directory"),
        ("openTerminalWorkspace", {"directory": "\0"}, "$.directory"),
        ("createConversation", {"executorSettings": {"directory": "src\0"}}, "$.executorSettings.directory"),
        ("createConversation", {"environment": ["A=b\0c"]}, "$.environment"),
    ]
    for method, params, path in cases:
        with pytest.raises(ResponseError) as err:
            await lsp.call(method, params)
        assert (err.value.code, err.value.kind) == (-32602, "invalidParams"), method
        assert path in err.value.message, err.value.message
    await still_serving(lsp)


def tree_rss_kib(home: Path) -> int:
    """RSS of every process of this test's OPENVAALA_HOME (the front and its host, or standalone)."""
    total = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
            if b"OPENVAALA_HOME=%s\0" % str(home).encode() not in environ:
                continue
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        total += next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
    return total


async def test_a_huge_content_length_is_refused_without_buffering_it(lsp: LspClient, home: Path) -> None:
    await still_serving(lsp)  # the runtime has started: what grows now is what the stream kept
    before = tree_rss_kib(home)
    await lsp.send_bytes(
        b'Content-Length: 1000000000000\r\n\r\n{"jsonrpc":"2.0","id":"huge","method":"openvaala/isIdle",'
    )
    assert error_of(await answer_to(lsp, "huge")) == (-32020, "messageTooLarge")
    chunk = b"x" * (1 << 20)
    for _ in range(64):
        await lsp.send_bytes(chunk)
    await asyncio.sleep(0.5)
    assert tree_rss_kib(home) - before < 16 * 1024  # 64 MiB went by; none of it was kept
    assert lsp.process.returncode is None
    lsp.kill()  # the stream is still inside that terabyte: nothing more can be said on it


async def test_a_message_over_the_limit_is_refused_and_the_next_one_served(lsp: LspClient) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": "big", "method": "openvaala/isIdle", "params": {"x": "y" * (2 << 20)}})
    await lsp.send_raw(body.encode())
    assert error_of(await answer_to(lsp, "big")) == (-32020, "messageTooLarge")
    await still_serving(lsp)


async def test_a_huge_bad_value_is_not_echoed_back(lsp: LspClient) -> None:
    huge = "z" * 500_000  # under the 1 MiB limit of these tests
    for method, params in (
        ("listItems", {"conversationId": "c", "order": huge}),
        ("getConversation", {"conversationId": huge}),
        ("createConversation", {"environment": [huge]}),
        (huge, {}),
    ):
        lsp.responses.clear()
        await lsp.send_raw(
            json.dumps({"jsonrpc": "2.0", "id": "echo", "method": "openvaala/" + method, "params": params}).encode()
        )
        response = await answer_to(lsp, "echo")
        assert len(json.dumps(response)) < 3000, (method[:20], len(json.dumps(response)))
        error_of(response)
    await still_serving(lsp)


async def test_an_object_id_gets_no_traceback(lsp: LspClient) -> None:
    await lsp.send_raw(b'{"jsonrpc":"2.0","id":{"a":1},"method":"openvaala/createConversation","params":{}}')
    response = await lsp.response(lambda m: m.get("id") is None)
    assert error_of(response) == (-32600, "invalidRequest")
    await still_serving(lsp)
