"""Workspace resolution through the client's folders: initialize, didChangeWorkspaceFolders, the
workspace/workspaceFolders request, rootUri, then the process cwd."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from lsp_client import LspClient, ResponseError


@pytest.fixture
def two_roots(tmp_path: Path) -> tuple[Path, Path]:
    app, lib = tmp_path / "app", tmp_path / "lib"
    (app / "src").mkdir(parents=True)
    (lib / "core" / "deep").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", app / "escape")
    os.symlink(lib / "core", app / "to-lib-core")
    return app, lib


async def resolve(lsp: LspClient, directory: str, **extra: str) -> str:
    return (await lsp.call("resolveWorkspaceDirectory", {"directory": directory, **extra}))["directory"]


async def denied(lsp: LspClient, directory: str, **extra: str) -> ResponseError:
    with pytest.raises(ResponseError) as err:
        await resolve(lsp, directory, **extra)
    assert (err.value.code, err.value.kind) == (-32019, "workspaceDenied")
    return err.value


async def test_multi_root_resolution(home: Path, two_roots: tuple[Path, Path]) -> None:
    app, lib = two_roots
    lsp = await LspClient.spawn(home, cwd=app)
    await lsp.initialize([app, lib])
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
        await lsp.shutdown()


async def test_did_change_workspace_folders(home: Path, two_roots: tuple[Path, Path]) -> None:
    app, lib = two_roots
    lsp = await LspClient.spawn(home, cwd=app)
    await lsp.initialize([app])
    try:
        await denied(lsp, str(lib / "core"))
        await lsp.notify(
            "workspace/didChangeWorkspaceFolders",
            {"event": {"added": [{"uri": lib.as_uri(), "name": "lib"}], "removed": []}},
        )
        assert await resolve(lsp, str(lib / "core")) == str(lib / "core")
        await lsp.notify(
            "workspace/didChangeWorkspaceFolders",
            {"event": {"added": [], "removed": [{"uri": lib.as_uri(), "name": "lib"}]}},
        )
        await denied(lsp, str(lib / "core"))
    finally:
        await lsp.shutdown()


async def test_folders_asked_from_the_client(home: Path, two_roots: tuple[Path, Path]) -> None:
    app, lib = two_roots
    lsp = await LspClient.spawn(home, cwd=app)
    asked = []

    def folders(params: object) -> list[dict[str, str]]:
        asked.append(params)
        return [{"uri": lib.as_uri(), "name": "lib"}]

    lsp.handlers["workspace/workspaceFolders"] = folders
    await lsp.initialize(None, capabilities={"workspace": {"workspaceFolders": True}})
    try:
        assert await resolve(lsp, "core") == str(lib / "core")
        assert await resolve(lsp, "core/deep") == str(lib / "core" / "deep")
        assert len(asked) == 1  # asked once, then remembered until the folders change
    finally:
        await lsp.shutdown()


async def test_root_uri_then_cwd(home: Path, two_roots: tuple[Path, Path]) -> None:
    app, lib = two_roots
    by_root = await LspClient.spawn(home, cwd=app)
    await by_root.initialize(None, root=lib)
    try:
        assert await resolve(by_root, "core") == str(lib / "core")
    finally:
        await by_root.shutdown()

    by_cwd = await LspClient.spawn(home, cwd=app)
    await by_cwd.initialize(None)
    try:
        assert await resolve(by_cwd, "src") == str(app / "src")
        await denied(by_cwd, str(lib))
    finally:
        await by_cwd.shutdown()


async def test_terminal_workspace_environment(home: Path, two_roots: tuple[Path, Path]) -> None:
    app, _ = two_roots
    lsp = await LspClient.spawn(home, cwd=app, env={"OPENVAALA_TEST_MARK": "from-editor"})
    await lsp.initialize([app])
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
        await lsp.shutdown()
