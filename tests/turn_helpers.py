"""Helpers of the turn tests: a model definition for the scripted provider, a subscribed session."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from fake_provider import FakeProviderServer
from lsp_client import LspClient

API_KEY = "sk-test-not-a-real-key"
STANDALONE = ["--standalone"]  # for tests that restart the runtime itself
USAGE = {
    "prompt_tokens": 120,
    "completion_tokens": 30,
    "total_tokens": 150,
    "prompt_tokens_details": {"cached_tokens": 20},
}


def definitions(server: FakeProviderServer) -> dict[str, Any]:
    return {
        "models": [
            {
                "ref": {"provider": "fake", "name": "fake-model"},
                "api": "openai-chat",
                "baseUrl": server.base_url("openai-chat"),
                "apiKeyEnv": "FAKE_API_KEY",
                "contextWindow": 8000,
            }
        ]
    }


def write_user_config(home: Path, server: FakeProviderServer, extra: str = "") -> None:
    (home / "config.toml").write_text(
        "[[models]]\n"
        'ref = "fake/fake-model"\n'
        'api = "openai-chat"\n'
        f'baseUrl = "{server.base_url("openai-chat")}"\n'
        'apiKeyEnv = "FAKE_API_KEY"\n'
        "contextWindow = 8000\n" + extra
    )


async def start(home: Path, workspace: Path, server: FakeProviderServer, args: list[str] | None = None) -> LspClient:
    lsp = await LspClient.spawn(home, cwd=workspace, env={"FAKE_API_KEY": API_KEY}, args=args)
    await lsp.initialize([workspace], options={"eventBatchMs": 2})
    await lsp.call("setDefinitions", definitions(server))
    return lsp


class Session:
    """A conversation with its main session subscribed."""

    def __init__(self, lsp: LspClient, conversation: dict[str, Any], subscribed: dict[str, Any], session_id: str):
        self.lsp = lsp
        self.id = conversation["id"]
        self.session_id = session_id
        self.sub = subscribed["subscriptionId"]
        self.snapshot = subscribed

    @classmethod
    async def open(cls, lsp: LspClient, conversation_id: str | None = None) -> Session:
        if conversation_id is None:
            conversation = await lsp.call("createConversation")
        else:
            conversation = await lsp.call("openConversation", {"conversationId": conversation_id})
        sessions = await lsp.call("listSessions", {"conversationId": conversation["id"]})
        session_id = sessions["items"][0]["id"]
        subscribed = await lsp.call("subscribeSession", {"conversationId": conversation["id"], "sessionId": session_id})
        return cls(lsp, conversation, subscribed, session_id)

    async def submit(self, text: str, **extra: Any) -> str:
        result = await self.lsp.call(
            "submitInput", {"conversationId": self.id, "content": [{"type": "text", "text": text}], **extra}
        )
        return str(result["itemId"])

    def events(self) -> list[dict[str, Any]]:
        notifications = self.lsp.of("openvaala/sessionEvent", self.sub)
        assert [n["seq"] for n in notifications] == list(range(1, len(notifications) + 1)), "seq has a gap"
        return [event for n in notifications for event in n["events"]]

    async def wait_event(self, predicate: Any, timeout: float = 20) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            while True:
                for event in self.events():
                    if predicate(event):
                        return event
                await asyncio.sleep(0.01)

    async def turn_completed(self, count: int = 1) -> dict[str, Any]:
        """The `count`-th turnCompleted, once it came (later turns may have ended too by then)."""
        await self.wait_event(
            lambda e: (
                e["type"] == "turnCompleted" and count <= sum(1 for x in self.events() if x["type"] == "turnCompleted")
            )
        )
        return [e for e in self.events() if e["type"] == "turnCompleted"][count - 1]["turn"]

    async def items(self) -> list[dict[str, Any]]:
        page = await self.lsp.call("listItems", {"conversationId": self.id, "limit": 500})
        return [logged["item"] for logged in page["items"]]


def text_of(item: dict[str, Any]) -> str:
    return "".join(part.get("text", "") for part in item.get("content", []))


async def query(lsp: Any, sql: str, *parameters: Any, **extra: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"sql": sql, **extra}
    if parameters:
        params["parameters"] = list(parameters)
    result: dict[str, Any] = await lsp.call("query", params)
    return result
