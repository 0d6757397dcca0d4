"""Helpers of the ACP tests: the user config they run with (a scripted model, two agents, the first
asking before it writes files) and an ACP client that records what the agent sends."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse
from fake_provider import FakeProviderServer
from turn_helpers import write_user_config

AGENTS = """
[[models]]
ref = "fake/other-model"
api = "openai-chat"
baseUrl = "{base}"
apiKeyEnv = "FAKE_API_KEY"
contextWindow = 16000

[[agents]]
name = "default"
description = "asks before it writes"
defaultModel = "fake/fake-model"
permissions = {{ default = "allow", tools = {{ write_file = "ask" }} }}

[[agents]]
name = "reviewer"
description = "reads only"
defaultModel = "fake/fake-model"
tools = ["read_file"]
"""


def write_config(home: Path, provider: FakeProviderServer) -> None:
    write_user_config(home, provider, AGENTS.format(base=provider.base_url("openai-chat")))


class RecordingClient:
    """An ACP client: session updates kept as JSON, permissions answered from `answers` (option ids,
    in order; "cancelled" answers so)."""

    def __init__(self) -> None:
        self.updates: list[dict[str, Any]] = []
        self.permissions: list[dict[str, Any]] = []
        self.answers: list[str] = []
        self.changed = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(
            {"sessionId": session_id, **update.model_dump(mode="json", by_alias=True, exclude_none=True)}
        )
        self.changed.set()

    async def request_permission(
        self, options: Any, session_id: str, tool_call: Any, **kwargs: Any
    ) -> RequestPermissionResponse:
        self.permissions.append({"sessionId": session_id, "toolCall": tool_call.model_dump(mode="json", by_alias=True)})
        answer = self.answers.pop(0) if self.answers else "deny"
        if answer == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=answer))

    def of(self, kind: str, session_id: str | None = None) -> list[dict[str, Any]]:
        return [
            u
            for u in self.updates
            if u["sessionUpdate"] == kind and (session_id is None or u["sessionId"] == session_id)
        ]

    def text(self, kind: str, session_id: str | None = None) -> str:
        return "".join(u["content"].get("text", "") for u in self.of(kind, session_id))

    async def wait(self, predicate: Any, timeout: float = 20) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                self.changed.clear()
                await self.changed.wait()
