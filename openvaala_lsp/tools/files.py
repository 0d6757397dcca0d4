"""The file tools: `read_file`, `write_file` and `edit`, all behind the workspace path policy."""

from __future__ import annotations

import asyncio
import errno
import io
import os
import stat
from collections.abc import Awaitable
from typing import IO, Any, TypeVar

from openvaala_lsp.file_diff import change_between
from openvaala_lsp.model import FileChange
from openvaala_lsp.tools.base import EditorFiles, OpenBuffer, ToolContext, ToolOutput
from openvaala_lsp.tools.common import LocalTool, StopFlag, ToolFailure, run_in_thread
from openvaala_lsp.tools.paths import resolve_path, writable_path

DEFAULT_READ_LINES = 2000
MAX_LINE_CHARS = 2000
MAX_READ_OUTPUT = 100_000
"""Characters of numbered lines one read returns; past it the model pages with `offset`."""

BINARY_SNIFF_BYTES = 8192

EDITOR_TIMEOUT = 30.0
"""Seconds the editor (`ToolContext.editor_files`) has to give or write a file's text."""
MAX_EDITOR_TEXT = 16 * 1024 * 1024
"""Characters of a file's text taken from the editor; a longer text is read from the disk."""

T = TypeVar("T")


class EditorFailed(Exception):
    """The editor did not give or write a file's text: it failed, did not answer in time, or gave too much."""


async def _ask_editor(request: Awaitable[T]) -> T:
    try:
        return await asyncio.wait_for(request, EDITOR_TIMEOUT)
    except TimeoutError:
        raise EditorFailed(f"no answer within {EDITOR_TIMEOUT:g} s") from None
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        raise EditorFailed(str(exc) or type(exc).__name__) from None


async def editor_text(files: EditorFiles, real: str) -> str:
    """The file's text as the editor holds it (EditorFailed when it does not give it)."""
    assert files.read is not None
    text = await _ask_editor(files.read(real))
    if not isinstance(text, str):
        raise EditorFailed(f"answered {type(text).__name__}, not text")
    if len(text) > MAX_EDITOR_TEXT:
        raise EditorFailed(f"a text of {len(text)} characters, over the {MAX_EDITOR_TEXT} taken from an editor")
    return text


async def _before_write(files: EditorFiles, path: str, real: str) -> bytes | None:
    """What a write through the editor replaces: the editor's text where it gives it, else the disk's."""
    if files.read is not None:
        try:
            return (await editor_text(files, real)).encode("utf-8", errors="surrogatepass")
        except EditorFailed:
            pass
    return await asyncio.to_thread(_disk_bytes, path, real)


async def _write_through(files: EditorFiles, path: str, real: str, text: str) -> None:
    """The file written by the editor (which records the edit); ToolFailure when it does not."""
    assert files.write is not None
    if len(text) > MAX_EDITOR_TEXT:
        raise ToolFailure(
            f"{path} would hold {len(text)} characters, over the {MAX_EDITOR_TEXT} written through an editor"
        )
    try:
        await _ask_editor(files.write(real, text))
    except EditorFailed as exc:
        raise ToolFailure(
            f"{files.editor} did not write {path}: {exc}; openvaala did not write it either (read it again "
            "before trying once more)"
        ) from None


def is_binary(sample: bytes) -> bool:
    """A NUL byte in the first block is the same test git and ripgrep use."""
    return b"\0" in sample[:BINARY_SNIFF_BYTES]


def _existing_file(path: str, real: str) -> None:
    if not os.path.exists(real):
        raise ToolFailure(f"file not found: {path}")
    if os.path.isdir(real):
        raise ToolFailure(f"is a directory, not a file: {path} (use the glob tool to list it)")
    if not os.path.isfile(real):
        raise ToolFailure(f"not a regular file: {path}")


def _open_regular(path: str, real: str, mode: str) -> IO[bytes]:
    """`real` opened for reading ("rb") or writing over it ("wb"), only if it is a regular file. Opened
    without waiting, then checked: a FIFO put there (also after a check, by a command) would hold
    the thread forever, and a device is not a file of the workspace."""
    flags = os.O_RDONLY if mode == "rb" else os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    try:
        fd = os.open(real, flags | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
    except OSError as error:
        if error.errno == errno.ENXIO:  # a FIFO no one reads
            raise ToolFailure(f"not a regular file: {path}") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ToolFailure(f"not a regular file: {path}")
        os.set_blocking(fd, True)
        return os.fdopen(fd, mode)
    except BaseException:
        os.close(fd)
        raise


def _number(line_number: int, text: str) -> str:
    return f"{line_number:>6}\t{text}"


def _clip(text: str) -> str:
    text = text.rstrip("\r")
    if len(text) > MAX_LINE_CHARS:
        text = f"{text[:MAX_LINE_CHARS]}... [line cut, {len(text)} characters in all]"
    return text


def _read(path: str, real: str, offset: int, limit: int, stop: StopFlag, buffer: OpenBuffer | None) -> str:
    """The numbered lines of the file, or of an editor's buffer of it where that differs from the disk."""
    if buffer is not None:
        on_disk = _disk_bytes(path, real)
        text = buffer.text.encode("utf-8", errors="surrogatepass")
        if text != on_disk:
            state = "differs" if on_disk is not None else "does not exist yet"
            version = f", version {buffer.version}" if buffer.version is not None else ""
            note = f"[unsaved: the text of {path} as {buffer.editor} holds it open{version}; the file on disk {state}]"
            return f"{note}\n{numbered_lines(io.BytesIO(text), len(text), path, real, offset, limit, stop)}"
    _existing_file(path, real)
    with _open_regular(path, real, "rb") as file:
        return numbered_lines(file, os.fstat(file.fileno()).st_size, path, real, offset, limit, stop)


def _disk_bytes(path: str, real: str) -> bytes | None:
    """The file's bytes, None if there is no file."""
    if not os.path.lexists(real):
        return None
    _existing_file(path, real)
    with _open_regular(path, real, "rb") as file:
        return file.read()


def numbered_lines(file: IO[bytes], size: int, path: str, real: str, offset: int, limit: int, stop: StopFlag) -> str:
    if is_binary(file.read(BINARY_SNIFF_BYTES)):
        raise ToolFailure(f"binary file, not shown: {path} ({size} bytes); read_file only shows text")
    file.seek(0)
    shown: list[str] = []
    used = 0
    last_shown = offset - 1
    total = 0
    full = False
    for total, raw in enumerate(file, start=1):
        if total % 10_000 == 0:
            stop.check()
        if total < offset or full:
            continue
        line = _number(total, _clip(raw.rstrip(b"\n").decode("utf-8", errors="replace")))
        if len(shown) >= limit or (shown and used + len(line) + 1 > MAX_READ_OUTPUT):
            full = True
            continue
        shown.append(line)
        used += len(line) + 1
        last_shown = total
    if total == 0:
        return f"(empty file: {real})"
    if offset > total:
        raise ToolFailure(f"offset {offset} is past the end of {path}, which has {total} lines")
    text = "\n".join(shown)
    if last_shown < total:
        text += (
            f"\n\n[lines {offset}-{last_shown} of {total} shown; "
            f"{total - last_shown} more, continue with offset={last_shown + 1}]"
        )
    return text


def _unsaved_note(path: str, real: str, buffer: OpenBuffer | None) -> str:
    """What to tell the model when an editor holds unsaved changes to a file it is about to write: the
    write goes to the disk, and those changes are not part of it."""
    if buffer is None or buffer.text.encode("utf-8", errors="surrogatepass") == _disk_bytes(path, real):
        return ""
    return (
        f"\n[{buffer.editor} holds unsaved changes to {path}, which this write did not see: read_file shows "
        "them; tell the user, as the editor will show the file changed on disk]"
    )


class ReadFileTool(LocalTool):
    NAME = "read_file"
    DESCRIPTION = (
        "Read a text file from the workspace. Lines come numbered like `cat -n` (line number, a tab, the "
        "text); the numbers are not part of the file, so leave them out of edit's old_string.\n"
        f"- Reads up to {DEFAULT_READ_LINES} lines from the start by default; use offset (1-based line number) "
        "and limit to page through long files. A note at the end says when more lines follow and which "
        "offset continues.\n"
        f"- Lines longer than {MAX_LINE_CHARS} characters are cut.\n"
        "- Binary files are refused. Paths are absolute or relative to the workspace directory and must stay "
        "inside the workspace."
    )
    PARAMETERS = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1, "description": "File to read."},
            "offset": {
                "type": "integer",
                "minimum": 1,
                "default": 1,
                "description": "First line to show, 1-based (default 1).",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "default": DEFAULT_READ_LINES,
                "description": f"Most lines to show (default {DEFAULT_READ_LINES}).",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    }

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutput:
        path: str = arguments["path"]
        real = resolve_path(path, context)
        offset: int = arguments["offset"]
        limit: int = arguments["limit"]
        buffer = context.buffers(real)
        note = ""
        files = context.editor_files
        if files is not None and files.read is not None:
            try:  # the text as the editor holds it, saved or not
                buffer = OpenBuffer(text=await editor_text(files, real), editor=files.editor)
            except EditorFailed as exc:
                note = f"[{files.editor} did not give its text of {path} ({exc}); this is the file on disk]\n"
        text = await run_in_thread(lambda stop: _read(path, real, offset, limit, stop, buffer))
        return ToolOutput(text=note + text)


def file_changes(real: str, before: bytes | None, after: bytes) -> list[FileChange] | None:
    change = change_between(real, before, after)
    return None if change is None else [change]


def _write(path: str, real: str, content: str) -> ToolOutput:
    if os.path.isdir(real):
        raise ToolFailure(f"is a directory, not a file: {path}")
    before = _disk_bytes(path, real)  # what the diff is against
    os.makedirs(os.path.dirname(real), exist_ok=True)
    data = content.encode("utf-8")
    # Written in place, so the file keeps its mode, owner and hard links.
    with _open_regular(path, real, "wb") as file:
        file.write(data)
    verb = "Overwrote" if before is not None else "Created"
    return ToolOutput(text=f"{verb} {real} ({len(data)} bytes)", file_changes=file_changes(real, before, data))


class WriteFileTool(LocalTool):
    NAME = "write_file"
    DESCRIPTION = (
        "Write a file in the workspace with exactly the given content (UTF-8), replacing it if it exists and "
        "creating missing parent directories. Reports the bytes written.\n"
        "- For changing part of an existing file prefer the edit tool: it is shorter and cannot drop "
        "unrelated text by accident.\n"
        "- Paths are absolute or relative to the workspace directory and must stay inside the workspace."
    )
    PARAMETERS = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1, "description": "File to write."},
            "content": {"type": "string", "description": "The complete new content of the file."},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    }

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutput:
        path: str = arguments["path"]
        real = writable_path(path, context)
        content: str = arguments["content"]
        files = context.editor_files
        # a text too long for the editor is written to the disk, as with no editor
        if files is not None and files.write is not None and len(content) <= MAX_EDITOR_TEXT:
            if await asyncio.to_thread(os.path.isdir, real):
                raise ToolFailure(f"is a directory, not a file: {path}")
            before = await _before_write(files, path, real)
            await _write_through(files, path, real, content)
            data = content.encode("utf-8", errors="surrogatepass")
            verb = "Overwrote" if before is not None else "Created"
            return ToolOutput(
                text=f"{verb} {real} through {files.editor} ({len(data)} bytes)",
                file_changes=file_changes(real, before, data),
            )
        buffer = context.buffers(real)

        def write(stop: StopFlag) -> ToolOutput:
            unsaved = _unsaved_note(path, real, buffer)
            output = _write(path, real, content)
            output.text += unsaved
            return output

        return await run_in_thread(write)


SNIPPET_CONTEXT = 3
MAX_SNIPPET_LINES = 30


def _snippet(content: str, start: int, length: int) -> str:
    """Numbered lines around content[start:start+length], so the model sees the result in place."""
    first = content.count("\n", 0, start) + 1
    last = first + content.count("\n", start, start + length)
    lines = content.split("\n")
    low = max(first - SNIPPET_CONTEXT, 1)
    high = min(last + SNIPPET_CONTEXT, len(lines), low + MAX_SNIPPET_LINES - 1)
    return "\n".join(_number(number, _clip(lines[number - 1])) for number in range(low, high + 1))


def apply_edit(path: str, real: str, data: bytes, old: str, new: str, replace_all: bool) -> tuple[bytes, str]:
    """The file's bytes after the edit, and what the model reads of it (also for a remote file)."""
    if is_binary(data):
        raise ToolFailure(f"binary file, cannot edit: {path}")
    try:
        content = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ToolFailure(
            f"not valid UTF-8, cannot edit safely: {path} ({error.reason} at byte {error.start})"
        ) from error
    count = content.count(old)
    if count == 0 and "\r\n" in content and "\n" in old and "\r\n" not in old:
        # The model usually writes plain \n; match the file's CRLF line endings and keep them.
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        count = content.count(old)
    if count == 0:
        raise ToolFailure(
            f"old_string not found in {path}; it must match the file exactly, including whitespace and "
            "indentation (read the file again if it may have changed)"
        )
    if count > 1 and not replace_all:
        raise ToolFailure(
            f"old_string found {count} times in {path}; include more surrounding lines to make it unique, "
            "or set replace_all to change every occurrence"
        )
    first = content.find(old)
    updated = content.replace(old, new) if replace_all else content.replace(old, new, 1)
    done = f"Replaced {count} occurrences" if replace_all and count > 1 else "Replaced 1 occurrence"
    return updated.encode("utf-8"), f"{done} in {real}.\n{_snippet(updated, first, len(new))}"


def _edit(path: str, real: str, old: str, new: str, replace_all: bool) -> ToolOutput:
    _existing_file(path, real)
    with _open_regular(path, real, "rb") as file:
        data = file.read()
    after, text = apply_edit(path, real, data, old, new, replace_all)
    with _open_regular(path, real, "wb") as file:
        file.write(after)
    return ToolOutput(text=text, file_changes=file_changes(real, data, after))


class EditTool(LocalTool):
    NAME = "edit"
    DESCRIPTION = (
        "Replace an exact piece of text in an existing file. old_string must match the file character for "
        "character (whitespace and indentation included, without read_file's line-number prefixes).\n"
        "- It must occur exactly once unless replace_all is true; if it occurs several times the edit is "
        "refused and the count is reported: add surrounding lines to make it unique.\n"
        "- new_string must differ from old_string. To create a file use write_file.\n"
        "- Returns the edited region with line numbers."
    )
    PARAMETERS = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1, "description": "File to edit."},
            "old_string": {"type": "string", "minLength": 1, "description": "Exact text to replace."},
            "new_string": {"type": "string", "description": "Text to put in its place."},
            "replace_all": {
                "type": "boolean",
                "default": False,
                "description": "Replace every occurrence instead of requiring exactly one (default false).",
            },
        },
        "required": ["path", "old_string", "new_string"],
        "additionalProperties": False,
    }

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutput:
        path: str = arguments["path"]
        old: str = arguments["old_string"]
        new: str = arguments["new_string"]
        if old == new:
            raise ToolFailure("old_string and new_string are the same; there is nothing to change")
        real = writable_path(path, context)
        replace_all: bool = arguments["replace_all"]
        files = context.editor_files
        if files is not None and files.write is not None:
            data = await _before_write(files, path, real)
            if data is None:
                raise ToolFailure(f"file not found: {path}")
            after, text = apply_edit(path, real, data, old, new, replace_all)
            await _write_through(files, path, real, after.decode("utf-8"))
            return ToolOutput(
                text=f"{text}\n[written through {files.editor}]", file_changes=file_changes(real, data, after)
            )
        buffer = context.buffers(real)

        def edit(stop: StopFlag) -> ToolOutput:
            unsaved = _unsaved_note(path, real, buffer)
            output = _edit(path, real, old, new, replace_all)
            output.text += unsaved
            return output

        return await run_in_thread(edit)
