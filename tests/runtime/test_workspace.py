"""The client's workspace: directories resolved against its folders, a terminal's environment."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import Harness, ResponseError


async def resolve(lsp: Harness, directory: str, **extra: str) -> str:
    return (await lsp.call("resolveWorkspaceDirectory", {"directory": directory, **extra}))["directory"]


async def denied(lsp: Harness, directory: str, **extra: str) -> ResponseError:
    with pytest.raises(ResponseError) as err:
        await resolve(lsp, directory, **extra)
    assert (err.value.code, err.value.kind) == (-32019, "workspaceDenied")
    return err.value


async def test_terminal_workspace_environment(home: Path, two_roots: tuple[Path, Path]) -> None:
    app, _ = two_roots
    lsp = await Harness.start(home, [app], env={"OPENVAALA_TEST_MARK": "from-editor"})
    try:
        terminal = await lsp.call("openTerminalWorkspace", {"directory": "src"})
        assert terminal["directory"] == str(app / "src")
        assert terminal["executorId"] == "local"
        assert terminal["workspace"]["root"] == str(app)
        assert "OPENVAALA_TEST_MARK=from-editor" in terminal["workspace"]["environment"]
        explicit = await lsp.call("openTerminalWorkspace", {"environment": ["ONLY=this"]})
        assert explicit["workspace"]["environment"] == ["ONLY=this"]
        assert explicit["directory"] == str(app)
    finally:
        await lsp.stop()


async def test_multi_root_resolution(home: Path, two_roots: tuple[Path, Path]) -> None:
    app, lib = two_roots
    lsp = await Harness.start(home, [app, lib])
    try:
        assert await resolve(lsp, "src") == str(app / "src")
        assert await resolve(lsp, "lib/core") == str(lib / "core")
        assert await resolve(lsp, "deep", baseDirectory="lib/core") == str(lib / "core" / "deep")
        assert await resolve(lsp, str(lib / "core")) == str(lib / "core")
        assert await resolve(lsp, "to-lib-core") == str(lib / "core")  # symlink staying inside the folders
        assert await resolve(lsp, "src/..") == str(app)
        await denied(lsp, "..")
        await denied(lsp, "../outside")
        await denied(lsp, "escape")  # symlink leaving every folder
        await denied(lsp, "/")
        error = await denied(lsp, "src/missing")
        assert "does not exist" in error.message

        listing = await lsp.call("getWorkspaceDirectories", {"directory": "lib/core"})
        assert listing["directory"] == str(lib / "core")
        assert listing["baseDirectory"] == str(lib)
        assert listing["entries"] == [{"name": "deep", "path": str(lib / "core" / "deep")}]
        assert [f["path"] for f in listing["workspaceFolders"]] == [str(app), str(lib)]

        top = await lsp.call("getWorkspaceDirectories", {})
        assert top["directory"] == str(app)
        assert [e["name"] for e in top["entries"]] == ["src", "to-lib-core"]  # "escape" leads outside

        with pytest.raises(ResponseError) as err:
            await lsp.call("createConversation", {"executorSettings": {"directory": "../outside"}})
        assert err.value.kind == "workspaceDenied"
        conversation = await lsp.call("createConversation", {"executorSettings": {"directory": "lib/core"}})
        assert conversation["executorSettings"]["directory"] == str(lib / "core")
    finally:
        await lsp.stop()
