from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fake_provider import FakeProviderServer
from lsp_client import LspClient

from openvaala_lsp.tools.warm_sandbox import WarmSandboxes


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A private OPENVAALA_HOME per test."""
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    (path / "src" / "pkg").mkdir(parents=True)
    return path


@pytest.fixture
def two_roots(tmp_path: Path) -> tuple[Path, Path]:
    """Two workspace folders; `app` holds a symlink out of both and one into `lib`."""
    app, lib = tmp_path / "app", tmp_path / "lib"
    (app / "src").mkdir(parents=True)
    (lib / "core" / "deep").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", app / "escape")
    os.symlink(lib / "core", app / "to-lib-core")
    return app, lib


@pytest.fixture
async def client(home: Path, workspace: Path) -> AsyncIterator[LspClient]:
    """The real openvaala-lsp process, initialized with one workspace folder."""
    lsp = await LspClient.spawn(home, cwd=workspace)
    await lsp.initialize([workspace])
    yield lsp
    await lsp.shutdown()


@pytest.fixture(params=["own", "warm"])
async def warm(request: pytest.FixtureRequest) -> AsyncIterator[WarmSandboxes | None]:
    """None: each command starts its own sandbox; else the warm sandboxes that start them."""
    if request.param == "own":
        yield None
        return
    sandboxes = WarmSandboxes()
    yield sandboxes
    await sandboxes.close()


@pytest.fixture
def provider() -> Iterator[FakeProviderServer]:
    """The scripted model server on 127.0.0.1, in its own thread (the runtime runs in another process)."""
    server = FakeProviderServer.start_in_thread()
    try:
        yield server
    finally:
        server.stop_thread()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests under tests/e2e drive real processes: marked `e2e`, so `-m "not e2e"` is the fast set."""
    e2e = Path(__file__).parent / "e2e"
    for item in items:
        if e2e in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The fuzz suite's budget, so CI's log shows how many examples ran."""
    fuzz = sys.modules.get("test_fuzz_wire")
    counts = getattr(fuzz, "EXAMPLE_COUNTS", None)
    if counts:
        ran = ", ".join(f"{count} in {mode} mode" for mode, count in sorted(counts.items()))
        terminalreporter.write_line(f"wire fuzzing: {ran} (derandomized; OPENVAALA_FUZZ_EXAMPLES sets the budget)")
