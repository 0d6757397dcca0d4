"""The ripgrep backend of the grep tool: runs `rg --json` and reads its match records.

The flags make ripgrep pick the same files as the Python search: hidden files in, `.git` out,
`.gitignore` honoured whether or not the tree is a git repository, and no other ignore sources
(`.ignore`, `.rgignore`, git's exclude and global files) or user config. One difference stays:
ripgrep also reads `.gitignore` files above the workspace root.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import signal
from typing import Any

from openvaala_lsp.tools.common import ToolFailure
from openvaala_lsp.tools.matches import MAX_FILE_SIZE, MAX_RECORDED_LINES, FileMatches, GrepQuery, GrepResult, clip_line

_LINE_LIMIT = 64 * 1024 * 1024
"""Longest JSON record read; a match on one huge minified line is still one record."""

_STDERR_KEPT = 4096


def ripgrep_argv(executable: str, query: GrepQuery, target: str) -> list[str]:
    argv = [
        executable,
        "--json",
        "--no-config",
        "--hidden",
        "--no-require-git",
        "--no-ignore-dot",
        "--no-ignore-exclude",
        "--no-ignore-global",
        "--max-filesize",
        f"{MAX_FILE_SIZE // (1024 * 1024)}M",
    ]
    if query.case_insensitive:
        argv.append("--ignore-case")
    if query.first_match_only:
        argv += ["--max-count", "1"]
    if query.glob and query.base_is_dir:
        argv += ["--glob", query.glob]
    # Last, so that it wins over a user glob such as '*'.
    argv += ["--glob", "!.git", "--regexp", query.pattern, "--", target]
    return argv


def _text(field: dict[str, Any]) -> str:
    """ripgrep sends valid UTF-8 as `text` and anything else base64-encoded as `bytes`."""
    if "text" in field:
        return str(field["text"])
    return base64.b64decode(field.get("bytes", "")).decode("utf-8", errors="replace")


def _match_record(line: bytes) -> tuple[str, int, str] | None:
    """(path as reported, line number, line text) of a `match` record; None for other records."""
    if not line.strip():
        return None
    try:
        message = json.loads(line)
        if message.get("type") != "match":
            return None
        data = message["data"]
        return _text(data["path"]), int(data["line_number"]), _text(data["lines"])
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ToolFailure(f"unexpected output from ripgrep: {line[:200]!r}") from error


def _absolute(cwd: str, reported: str) -> str:
    """ripgrep names files as './sub/file' under the searched directory."""
    return os.path.normpath(os.path.join(cwd, reported))


async def _read_stderr(stream: asyncio.StreamReader) -> bytes:
    kept = b""
    while chunk := await stream.read(65536):
        kept = (kept + chunk)[:_STDERR_KEPT]
    return kept


def _kill(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


async def search(executable: str, query: GrepQuery) -> GrepResult:
    if query.base_is_dir:
        cwd, target = query.base, "."
    else:
        cwd, target = os.path.dirname(query.base), query.base
    try:
        process = await asyncio.create_subprocess_exec(
            *ripgrep_argv(executable, query, target),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            limit=_LINE_LIMIT,
            start_new_session=True,
        )
    except OSError as error:
        raise ToolFailure(f"could not start ripgrep: {error.strerror or error}") from error
    assert process.stdout is not None and process.stderr is not None  # both are pipes, as asked
    stderr = asyncio.create_task(_read_stderr(process.stderr))
    result = GrepResult()
    by_path: dict[str, FileMatches] = {}
    recorded = 0
    try:
        while line := await process.stdout.readline():
            match = _match_record(line)
            if match is None:
                continue
            name, number, text = match
            path = _absolute(cwd, name)
            if query.protected.unreadable_at(path):
                continue  # ripgrep read it, the model never sees it
            if query.keeps_lines and recorded == MAX_RECORDED_LINES:
                result.stopped_early = True
                _kill(process)
                await process.stdout.read()  # to end of file, so the pipe closes
                break
            found = by_path.get(path)
            if found is None:
                found = by_path[path] = FileMatches(path=path)
                result.files.append(found)
            found.count += 1
            if query.keeps_lines:
                found.lines.append((number, clip_line(text)))
                recorded += 1
        code = await process.wait()
        errors = (await stderr).decode("utf-8", errors="replace").strip()
    except BaseException:
        # Cancelled, or output that is not ripgrep's: no orphaned ripgrep keeps walking the tree.
        _kill(process)
        stderr.cancel()
        await process.wait()
        raise
    # Exit code 2 also covers partial failures such as one unreadable file; only fail without results.
    if code == 2 and not result.files and not result.stopped_early:
        raise ToolFailure(f"ripgrep failed: {errors or 'exit code 2'}")
    return result
