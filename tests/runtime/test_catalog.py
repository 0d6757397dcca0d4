"""listAgents, listModels, listExecutors, getHooks."""

from __future__ import annotations

import pytest
from fake_provider import FakeProviderServer
from harness import Harness, ResponseError


async def test_catalog_methods(agent: Harness, provider: FakeProviderServer) -> None:
    agents = await agent.call("listAgents")
    assert agents == {"agents": [{"name": "default", "description": "the built-in coding agent"}]}
    models = await agent.call("listModels", {})
    assert models["agentDefaultModel"] == {"provider": "fake", "name": "fake-model"}
    assert [m["ref"] for m in models["models"]] == [{"provider": "fake", "name": "fake-model"}]
    executors = await agent.call("listExecutors")
    assert [e["id"] for e in executors["executors"]] == ["local"]
    assert await agent.call("getHooks") == {"hooks": []}
    with pytest.raises(ResponseError) as err:
        await agent.call("listModels", {"agentName": "nobody"})
    assert err.value.kind == "notFound"
