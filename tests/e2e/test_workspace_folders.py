"""Workspace resolution through the client's folders: initialize, didChangeWorkspaceFolders, the
workspace/workspaceFolders request, rootUri, then the process cwd."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_client import LspClient, ResponseError


async def resolve(lsp: LspClient, directory: str, **extra: str) -> str:
    return (await lsp.call("resolveWorkspaceDirectory", {"directory": directory, **extra}))["directory"]


async def denied(lsp: LspClient, directory: str, **extra: str) -> ResponseError:
    with pytest.raises(ResponseError) as err:
        await resolve(lsp, directory, **extra)
    assert (err.value.code, err.value.kind) == (-32019, "workspaceDenied")
    return err.value


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
