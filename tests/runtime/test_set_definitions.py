"""setDefinitions while a turn runs: the busy conversation finishes with the old definitions, then its
subscriptions close with conversationReconfigured."""

from __future__ import annotations

from pathlib import Path

from fake_provider import ChatStream, FakeProviderServer
from harness import Harness
from turn_helpers import API_KEY, Session, definitions


async def test_set_definitions_while_a_turn_runs(home: Path, workspace: Path, provider: FakeProviderServer) -> None:
    lsp = await Harness.start(home, [workspace], env={"FAKE_API_KEY": API_KEY})
    try:
        await lsp.call("setDefinitions", definitions(provider))
        busy = await Session.open(lsp)
        idle = await Session.open(lsp)
        watched = await lsp.call("subscribeConversation", {"conversationId": busy.id})
        provider.enqueue("openai-chat", ChatStream().text("old").pause(0.5).text(" model").finish().response())
        await busy.submit("go")
        await busy.wait_event(lambda e: e["type"] == "itemDelta")
        renamed = definitions(provider)
        renamed["models"][0]["ref"] = {"provider": "fake", "name": "renamed"}
        result = await lsp.call("setDefinitions", renamed)
        assert result == {"busyConversationIds": [busy.id]}
        turn = await busy.turn_completed()
        assert turn["status"] == "completed" and turn["model"] == {"provider": "fake", "name": "fake-model"}
        closed = await lsp.wait_for(
            lambda m: m["method"] == "openvaala/subscriptionClosed" and m["params"]["subscriptionId"] == busy.sub
        )
        assert closed["params"]["reason"]["kind"] == "conversationReconfigured"
        conversation_closed = await lsp.wait_for(
            lambda m: (
                m["method"] == "openvaala/subscriptionClosed"
                and m["params"]["subscriptionId"] == watched["subscriptionId"]
            )
        )
        assert conversation_closed["params"]["reason"]["kind"] == "conversationReconfigured"
        assert not lsp.of("openvaala/subscriptionClosed", idle.sub)  # the idle conversation was not busy
        models = await lsp.call("listModels", {})
        assert [m["ref"]["name"] for m in models["models"]] == ["renamed"]
    finally:
        await lsp.stop()
