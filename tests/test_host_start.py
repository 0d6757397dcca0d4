"""A starting host answers an editor's first requests (initialize, listing conversations) without
httpx: the model clients load with the first model call (runtime/model_clients.py). A real runtime
over a DuckDB file, in a fresh interpreter."""

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
    return sorted(name for name in sys.modules if name.startswith(("httpx", "h11")))


async def main():
    future = asyncio.get_running_loop().create_future()
    await start_runtime(future)
    runtime = future.result()
    client = Client(client_id="test", environment={}, workspace_folders=folders, attach=lambda sub: None)
    runtime.connect(client)
    await runtime.list_conversations(client, api.ListConversationsParams())
    answered = loaded()
    await runtime.stop()
    print(json.dumps(answered))


asyncio.run(main())
"""


def test_the_first_answers_come_without_httpx(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        check=True,
        env={"OPENVAALA_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
