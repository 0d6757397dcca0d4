"""The ssh executor: tools on a remote host, in the remote roots of its definition; the client's
workspace folders play no part there."""

from __future__ import annotations

import posixpath
import stat

import asyncssh

from openvaala_lsp.executors.ssh_link import ExecutorUnavailable, SshLink
from openvaala_lsp.executors.ssh_search import RemoteGlob, RemoteGrep
from openvaala_lsp.executors.ssh_target import SshTarget
from openvaala_lsp.executors.ssh_tools import RemoteEdit, RemoteReadFile, RemoteShell, RemoteWriteFile
from openvaala_lsp.model import WorkspaceFolder
from openvaala_lsp.protocol.errors import WorkspaceDenied
from openvaala_lsp.tools.base import Tool

REACH_TIMEOUT = 5.0  # seconds `listExecutors` waits for a host


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


class SshExecutor:
    remote = True

    def __init__(self, target: SshTarget) -> None:
        self.target = target
        self.link = SshLink(target)

    def tools(self) -> list[Tool]:
        link = self.link  # in the order the local tools are offered
        return [
            RemoteShell(link),
            RemoteReadFile(link),
            RemoteWriteFile(link),
            RemoteEdit(link),
            RemoteGlob(link),
            RemoteGrep(link),
        ]

    def roots(self, folders: list[WorkspaceFolder]) -> list[WorkspaceFolder]:
        return [WorkspaceFolder(name=posixpath.basename(root) or root, path=root) for root in self.target.roots]

    async def _sftp(self) -> asyncssh.SFTPClient:
        try:
            return await self.link.sftp()
        except ExecutorUnavailable as error:
            raise WorkspaceDenied(str(error)) from None

    async def resolve_directory(
        self, directory: str | None, folders: list[WorkspaceFolder], base_directory: str | None = None
    ) -> str:
        sftp = await self._sftp()
        roots = await self.link.roots()
        base = await self.resolve_directory(base_directory, folders) if base_directory else roots[0]
        candidate = posixpath.join(base, directory) if directory else base
        try:
            with self.link.dropped("resolving a directory"):
                real = posixpath.normpath(str(await sftp.realpath(candidate)))
                attributes = await sftp.stat(real)
        except ExecutorUnavailable as error:
            raise WorkspaceDenied(str(error)) from None
        except asyncssh.SFTPError:
            raise WorkspaceDenied(f"directory does not exist on {self.target.host}: {directory or candidate}") from None
        if self.link.inside_roots(real) is None:
            raise WorkspaceDenied(f"directory is outside the roots of executor {self.target.executor_id}: {candidate}")
        if not stat.S_ISDIR(attributes.permissions or 0):
            raise WorkspaceDenied(f"directory does not exist on {self.target.host}: {directory or candidate}")
        return real

    async def subdirectories(self, directory: str, folders: list[WorkspaceFolder]) -> list[WorkspaceFolder]:
        sftp = await self._sftp()
        entries: list[WorkspaceFolder] = []
        try:
            with self.link.dropped("listing a directory"):
                names = await sftp.readdir(directory)
        except (ExecutorUnavailable, asyncssh.SFTPError) as error:
            raise WorkspaceDenied(f"cannot list {directory} on {self.target.host}: {error}") from None
        for name in names:
            filename = str(name.filename)
            # symbolic links are left out: where they lead is the host's to say, and may be outside
            if filename in (".", "..", ".git") or not stat.S_ISDIR(name.attrs.permissions or 0):
                continue
            entries.append(WorkspaceFolder(name=filename, path=posixpath.join(directory, filename)))
        return sorted(entries, key=lambda e: e.name)

    def containing_root(self, directory: str, folders: list[WorkspaceFolder]) -> str | None:
        return self.link.inside_roots(directory)

    def environment(self, client_environment: dict[str, str]) -> dict[str, str]:
        return dict(self.target.environment)

    async def reachable(self) -> str | None:
        """None if the host answers (connecting now if need be), else why not."""
        try:
            await self.link.connection()
        except ExecutorUnavailable as error:
            return str(error)
        return None

    async def close(self) -> None:
        await self.link.close()
