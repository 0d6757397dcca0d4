"""Fixtures of the in-process runtime tests: `client` (a runtime with no model, its definitions from
the home's files) and `agent` (the scripted model server configured with setDefinitions)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from fake_provider import FakeProviderServer
from harness import Harness
from turn_helpers import API_KEY, definitions


@pytest.fixture(autouse=True)
def runtime_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Everything the runtime keeps goes under the test's own home, as OPENVAALA_HOME does for a process."""
    monkeypatch.setenv("OPENVAALA_HOME", str(home))
    return home


@pytest.fixture
async def client(home: Path, workspace: Path) -> AsyncIterator[Harness]:
    harness = await Harness.start(home, [workspace])
    yield harness
    await harness.stop()


@pytest.fixture
async def agent(home: Path, workspace: Path, provider: FakeProviderServer) -> AsyncIterator[Harness]:
    harness = await Harness.start(home, [workspace], env={"FAKE_API_KEY": API_KEY})
    await harness.call("setDefinitions", definitions(provider))
    yield harness
    await harness.stop()
