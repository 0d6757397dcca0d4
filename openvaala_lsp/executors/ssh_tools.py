"""The tools of an ssh executor: the shell over exec, the file tools over SFTP, with the arguments,
checks and answers of the local ones (`tools/shell.py`, `tools/files.py`).

A path resolves on the host (its real path, from the host's SFTP server) and must lie in one of the
executor's remote roots and outside what no tool may touch, as locally. Files are read into memory
up to `MAX_REMOTE_FILE` bytes, so a host cannot make the runtime hold more. Editors' unsaved
buffers are of local files, so they play no part here.
"""

from __future__ import annotations

import io
import posixpath
import stat
from typing import Any, cast

import asyncssh

from openvaala_lsp.executors.ssh_host import host_facts
from openvaala_lsp.executors.ssh_link import ExecutorUnavailable, SshLink
from openvaala_lsp.executors.ssh_process import run_remote, sandboxed
from openvaala_lsp.tools.base import ToolContext, ToolOutput
from openvaala_lsp.tools.common import LocalTool, StopFlag, ToolFailure
from openvaala_lsp.tools.files import EditTool, ReadFileTool, WriteFileTool, apply_edit, file_changes, numbered_lines
from openvaala_lsp.tools.paths import PathOutsideWorkspace, ProtectedPath
from openvaala_lsp.tools.shell import SHELL, ShellTool, command_output

MAX_REMOTE_FILE = 32 * 1024 * 1024


class RemoteFailures(LocalTool):
    """What a remote tool's failure reads like: the host unreachable or gone, or its SFTP error."""

    link: SshLink

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutput:
        try:
            return await self.remote(arguments, context)
        except ExecutorUnavailable as error:
            raise ToolFailure(str(error)) from None
        except asyncssh.SFTPError as error:
            raise ToolFailure(f"{self.name} failed on {self.link.target.host}: {error.reason}") from None

    async def remote(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutput:
        raise NotImplementedError


async def _real(sftp: asyncssh.SFTPClient, path: str) -> str:
    """The host's real path of `path`, which need not exist (its missing tail is kept as spelled)."""
    try:
        return posixpath.normpath(str(await sftp.realpath(path)))
    except asyncssh.SFTPNoSuchFile:
        parent, name = posixpath.split(path.rstrip("/"))
        if not name or name in (".", "..") or parent == path:
            raise ToolFailure(f"cannot resolve {path}: a missing directory is followed by '..'") from None
        return posixpath.join(await _real(sftp, parent), name)


async def resolve_remote(link: SshLink, path: str, context: ToolContext, *, write: bool = False) -> str:
    """`paths.resolve_path` (or `writable_path`) on the host."""
    if "\0" in path:
        raise ToolFailure(f"invalid path (contains a NUL byte): {path!r}")
    candidate = path if path.startswith("/") else posixpath.join(context.directory, path)
    sftp = await link.sftp()
    with link.dropped("resolving a path"):
        real = await _real(sftp, candidate)
    if link.inside_roots(real) is None:
        raise PathOutsideWorkspace(path)
    holder = context.protected.unreadable_at(real) or (await host_facts(link)).credential_at(real)
    if holder is not None:
        raise ProtectedPath(path, holder)
    if write and context.protected.governing_at(real) is not None and real != context.approved_write:
        raise ToolFailure(f"refused: {path} is {real}, which governs the agent; writing it needs the user's approval")
    return real


async def _read_bytes(link: SshLink, path: str, real: str, *, missing_ok: bool = False) -> tuple[bytes, int] | None:
    """The file's first `MAX_REMOTE_FILE` bytes and its size; None if it does not exist and may not."""
    sftp = await link.sftp()
    with link.dropped("reading a file"):
        try:
            attributes = await sftp.stat(real)
        except asyncssh.SFTPNoSuchFile:
            if missing_ok:
                return None
            raise ToolFailure(f"file not found: {path}") from None
        mode = attributes.permissions or 0
        if stat.S_ISDIR(mode):
            raise ToolFailure(f"is a directory, not a file: {path}")
        if not stat.S_ISREG(mode):
            raise ToolFailure(f"not a regular file: {path}")
        async with sftp.open(real, "rb") as file:
            data: bytes = cast(bytes, await file.read(MAX_REMOTE_FILE))  # binary mode: bytes
    return data, attributes.size or len(data)


async def _write_bytes(link: SshLink, real: str, data: bytes) -> None:
    sftp = await link.sftp()
    with link.dropped("writing a file"):
        await sftp.makedirs(posixpath.dirname(real), exist_ok=True)
        async with sftp.open(real, "wb") as file:  # in place: the file keeps its mode and owner
            await file.write(data)


class RemoteReadFile(RemoteFailures, ReadFileTool):
    def __init__(self, link: SshLink) -> None:
        super().__init__()
        self.link = link

    async def remote(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutput:
        path: str = arguments["path"]
        real = await resolve_remote(self.link, path, context)
        read = await _read_bytes(self.link, path, real)
        assert read is not None
        data, size = read
        text = numbered_lines(io.BytesIO(data), size, path, real, arguments["offset"], arguments["limit"], StopFlag())
        if size > len(data):
            text += f"\n[only the first {len(data)} of its {size} bytes were read over ssh; use the shell for more]"
        return ToolOutput(text=text)


class RemoteWriteFile(RemoteFailures, WriteFileTool):
    def __init__(self, link: SshLink) -> None:
        super().__init__()
        self.link = link

    async def remote(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutput:
        path: str = arguments["path"]
        real = await resolve_remote(self.link, path, context, write=True)
        before = await _read_bytes(self.link, path, real, missing_ok=True)
        data = arguments["content"].encode("utf-8")
        await _write_bytes(self.link, real, data)
        verb = "Overwrote" if before is not None else "Created"
        known = before[0] if before is not None and before[1] <= len(before[0]) else None
        changes = file_changes(real, known, data) if before is None or known is not None else None
        return ToolOutput(text=f"{verb} {real} ({len(data)} bytes)", file_changes=changes)


class RemoteEdit(RemoteFailures, EditTool):
    def __init__(self, link: SshLink) -> None:
        super().__init__()
        self.link = link

    async def remote(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutput:
        path: str = arguments["path"]
        old: str = arguments["old_string"]
        new: str = arguments["new_string"]
        if old == new:
            raise ToolFailure("old_string and new_string are the same; there is nothing to change")
        real = await resolve_remote(self.link, path, context, write=True)
        read = await _read_bytes(self.link, path, real)
        assert read is not None
        data, size = read
        if size > len(data):
            raise ToolFailure(f"too large to edit over ssh: {path} ({size} bytes; at most {MAX_REMOTE_FILE})")
        after, text = apply_edit(path, real, data, old, new, arguments["replace_all"])
        await _write_bytes(self.link, real, after)
        return ToolOutput(text=text, file_changes=file_changes(real, data, after))


class RemoteShell(RemoteFailures, ShellTool):
    def __init__(self, link: SshLink) -> None:
        super().__init__()
        self.link = link

    async def remote(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutput:
        workdir = context.directory
        if arguments.get("workdir"):
            workdir = await resolve_remote(self.link, arguments["workdir"], context)
        timeout_ms: int = arguments["timeout_ms"]
        argv = [SHELL, "-c", arguments["command"]]
        note = ""
        if context.sandbox is not None:
            facts = await host_facts(self.link)
            if facts.sandbox:
                argv = sandboxed(argv, context.sandbox, workdir, facts)
            else:
                said = facts.sandbox_problem
                note = f"[ran without a sandbox: the host {self.link.target.host} cannot start one ({said})]\n"
        result = await run_remote(
            self.link, argv, workdir=workdir, time_limit=timeout_ms / 1000, read_limit=self.read_limit
        )
        return command_output(result, self.max_output, timeout_ms, note=note)
