"""What a starting host loads: enough to answer an editor's first requests (initialize, listing
conversations); the turn machinery (sessions, tools, providers, MCP, hooks) and the configuration
files' reader come with the first open conversation, and the API's types with their first use. A
real runtime over a DuckDB file, in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import asyncio, json, os, sys

import openvaala_lsp.host.server  # everything the host imports before it listens
from openvaala_lsp.model import WorkspaceFolder
from openvaala_lsp.protocol import api
from openvaala_lsp.runtime.client import Client
from openvaala_lsp.runtime.startup import start_runtime


async def folders():
    return [WorkspaceFolder(name="home", path=os.environ["OPENVAALA_HOME"])]


def loaded():
    return sorted(name for name in sys.modules if name.startswith(("openvaala_lsp.", "httpx", "h11")))


def api_modules():
    return sorted(name for name in sys.modules if name.startswith("openvaala_lsp.protocol.api."))


async def main():
    future = asyncio.get_running_loop().create_future()
    await start_runtime(future)
    runtime = future.result()
    client = Client(client_id="test", environment={}, workspace_folders=folders, attach=lambda sub: None)
    runtime.connect(client)
    await runtime.list_conversations(client, api.ListConversationsParams())
    answered = loaded()
    api_answered = api_modules()
    await runtime.create_conversation(client, api.CreateConversationParams())
    conversing = loaded()
    await runtime.stop()
    print(json.dumps({"answered": answered, "conversing": conversing, "api": api_answered}))


asyncio.run(main())
"""

MACHINERY = (
    "openvaala_lsp.runtime.conversation",
    "openvaala_lsp.runtime.session",
    "openvaala_lsp.runtime.turns",
    "openvaala_lsp.tools.registry",
    "openvaala_lsp.tools.shell",
    "openvaala_lsp.providers.base",
    "openvaala_lsp.mcp.connection",
    "openvaala_lsp.hooks.runner",
    "openvaala_lsp.config.loader",  # the configuration files' reader, with the first workspace asked about
)


def test_the_first_answers_come_without_the_turn_machinery(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        check=True,
        env={"OPENVAALA_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    modules = json.loads(done.stdout.strip().splitlines()[-1])
    answered, conversing = set(modules["answered"]), set(modules["conversing"])
    assert answered.isdisjoint(MACHINERY), sorted(answered.intersection(MACHINERY))
    assert not any(name.startswith(("httpx", "h11")) for name in answered)
    assert conversing.issuperset(MACHINERY)  # and the first conversation brought it all
    # of the API's types, those every part shares and those of conversations (see protocol/api)
    assert modules["api"] == ["openvaala_lsp.protocol.api.common", "openvaala_lsp.protocol.api.conversations"]
