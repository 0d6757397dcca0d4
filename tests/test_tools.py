"""The local file tools, path policy, argument checking and registry, on real files."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from openvaala_lsp.tools.base import Tool, ToolContext, ToolOutput
from openvaala_lsp.tools.files import EditTool, ReadFileTool, WriteFileTool
from openvaala_lsp.tools.listing import GlobTool
from openvaala_lsp.tools.registry import LOCAL_TOOL_NAMES, local_tool, local_tools
from openvaala_lsp.tools.search import GrepTool
from openvaala_lsp.tools.shell import ShellTool
from openvaala_lsp.tools.truncate import HeadTailBuffer, truncate_text


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    other = tmp_path / "outside"
    other.mkdir()
    (other / "secret.txt").write_text("top secret\n")
    return other


@pytest.fixture
def context(workspace: Path) -> ToolContext:
    return ToolContext(directory=str(workspace), roots=[str(workspace)], environment={"PATH": os.environ["PATH"]})


def names_in(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir())


def relative_lines(out: ToolOutput, root: Path) -> list[str]:
    return sorted(os.path.relpath(line, root) for line in out.text.splitlines())


async def run(tool: Tool, context: ToolContext, **arguments: Any) -> ToolOutput:
    return await tool.run(arguments, context)


# --- path policy -----------------------------------------------------------------------------


async def test_dotdot_escape_is_refused(context: ToolContext, outside: Path) -> None:
    out = await run(ReadFileTool(), context, path="../outside/secret.txt")
    assert out.is_error
    assert out.text == "path outside the workspace: ../outside/secret.txt"


async def test_absolute_path_outside_is_refused(context: ToolContext, outside: Path) -> None:
    target = str(outside / "secret.txt")
    out = await run(ReadFileTool(), context, path=target)
    assert out.is_error and out.text == f"path outside the workspace: {target}"
    out = await run(WriteFileTool(), context, path=str(outside / "new.txt"), content="x")
    assert out.is_error and "outside the workspace" in out.text
    assert not (outside / "new.txt").exists()


async def test_dotdot_that_stays_inside_is_allowed(context: ToolContext, workspace: Path) -> None:
    (workspace / "a").mkdir()
    (workspace / "b.txt").write_text("bee\n")
    out = await run(ReadFileTool(), context, path="a/../b.txt")
    assert not out.is_error and "bee" in out.text


async def test_symlink_to_outside_file_is_refused_by_every_file_tool(
    context: ToolContext, workspace: Path, outside: Path
) -> None:
    (workspace / "link.txt").symlink_to(outside / "secret.txt")
    for tool, arguments in [
        (ReadFileTool(), {"path": "link.txt"}),
        (WriteFileTool(), {"path": "link.txt", "content": "overwritten"}),
        (EditTool(), {"path": "link.txt", "old_string": "top", "new_string": "bottom"}),
        (GrepTool(use_ripgrep=False), {"pattern": "secret", "path": "link.txt"}),
    ]:
        out = await tool.run(arguments, context)
        assert out.is_error, tool.name
        assert out.text == "path outside the workspace: link.txt", tool.name
    assert (outside / "secret.txt").read_text() == "top secret\n"


async def test_new_file_in_symlinked_directory_pointing_outside_is_refused(
    context: ToolContext, workspace: Path, outside: Path
) -> None:
    (workspace / "linkdir").symlink_to(outside, target_is_directory=True)
    out = await run(WriteFileTool(), context, path="linkdir/new.txt", content="x")
    assert out.is_error and out.text == "path outside the workspace: linkdir/new.txt"
    out = await run(WriteFileTool(), context, path="linkdir/deeper/new.txt", content="x")
    assert out.is_error
    (workspace / "dangling").symlink_to(outside / "later.txt")
    out = await run(WriteFileTool(), context, path="dangling", content="x")
    assert out.is_error and out.text == "path outside the workspace: dangling"
    assert names_in(outside) == ["secret.txt"]
    out = await run(GlobTool(), context, pattern="*", path="linkdir")
    assert out.is_error and "outside the workspace" in out.text


async def test_symlink_within_workspace_is_followed(context: ToolContext, workspace: Path) -> None:
    (workspace / "real.txt").write_text("inside\n")
    (workspace / "alias.txt").symlink_to(workspace / "real.txt")
    out = await run(ReadFileTool(), context, path="alias.txt")
    assert not out.is_error and "inside" in out.text


async def test_second_root_is_allowed_and_relative_paths_use_directory(tmp_path: Path, workspace: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "o.txt").write_text("other root\n")
    sub = workspace / "sub"
    sub.mkdir()
    (sub / "here.txt").write_text("here\n")
    context = ToolContext(directory=str(sub), roots=[str(workspace), str(other)], environment={})
    out = await run(ReadFileTool(), context, path=str(other / "o.txt"))
    assert "other root" in out.text
    out = await run(ReadFileTool(), context, path="here.txt")
    assert "here" in out.text


async def test_nul_byte_in_path_is_an_error(context: ToolContext) -> None:
    out = await run(ReadFileTool(), context, path="a\0b")
    assert out.is_error and "NUL" in out.text


# --- argument validation ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({}, "missing required argument 'path'"),
        ({"path": 5}, "argument 'path' must be a string, got integer"),
        ({"path": "f", "offset": "3"}, "argument 'offset' must be an integer, got string"),
        ({"path": "f", "offset": True}, "argument 'offset' must be an integer, got boolean"),
        ({"path": "f", "offset": 0}, "argument 'offset' must be at least 1"),
        ({"path": "f", "offset": 1.5}, "argument 'offset' must be an integer"),
        ({"path": "f", "lines": 3}, "unknown argument 'lines'"),
        ({"path": ""}, "argument 'path' must not be empty"),
    ],
)
async def test_bad_arguments_name_the_field(context: ToolContext, arguments: dict[str, Any], expected: str) -> None:
    out = await ReadFileTool().run(arguments, context)
    assert out.is_error
    assert expected in out.text


async def test_arguments_must_be_an_object(context: ToolContext) -> None:
    out = await ShellTool().run(["ls"], context)  # type: ignore[arg-type]
    assert out.is_error and "must be a JSON object" in out.text


async def test_enum_and_integral_float_and_null_optional(context: ToolContext, workspace: Path) -> None:
    (workspace / "f.txt").write_text("a\nb\nc\n")
    out = await run(GrepTool(use_ripgrep=False), context, pattern="a", output_mode="lines")
    assert out.is_error and "argument 'output_mode' must be one of" in out.text
    out = await run(ReadFileTool(), context, path="f.txt", offset=2.0, limit=None)
    assert not out.is_error and out.text.startswith("     2\tb")


# --- read_file -------------------------------------------------------------------------------


async def test_read_numbers_lines_and_pages(context: ToolContext, workspace: Path) -> None:
    (workspace / "ten.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    out = await run(ReadFileTool(), context, path="ten.txt")
    assert out.text.splitlines()[0] == "     1\tline 1"
    assert out.text.splitlines()[-1] == "    10\tline 10"
    assert "more" not in out.text
    out = await run(ReadFileTool(), context, path="ten.txt", offset=3, limit=2)
    lines = out.text.splitlines()
    assert lines[:2] == ["     3\tline 3", "     4\tline 4"]
    assert "lines 3-4 of 10 shown; 6 more, continue with offset=5" in out.text
    out = await run(ReadFileTool(), context, path="ten.txt", offset=9)
    assert out.text.splitlines() == ["     9\tline 9", "    10\tline 10"]


async def test_read_offset_past_end_missing_file_directory_and_empty(context: ToolContext, workspace: Path) -> None:
    (workspace / "two.txt").write_text("a\nb")
    (workspace / "empty.txt").write_text("")
    (workspace / "dir").mkdir()
    out = await run(ReadFileTool(), context, path="two.txt", offset=5)
    assert out.is_error and "past the end" in out.text and "2 lines" in out.text
    out = await run(ReadFileTool(), context, path="missing.txt")
    assert out.is_error and out.text == "file not found: missing.txt"
    out = await run(ReadFileTool(), context, path="dir")
    assert out.is_error and "is a directory" in out.text
    out = await run(ReadFileTool(), context, path="empty.txt")
    assert not out.is_error and "empty file" in out.text


async def test_read_cuts_long_lines_strips_crlf_and_refuses_binary(context: ToolContext, workspace: Path) -> None:
    (workspace / "long.txt").write_text("x" * 5000 + "\nshort\r\n")
    out = await run(ReadFileTool(), context, path="long.txt")
    first, second = out.text.splitlines()
    assert first.endswith("[line cut, 5000 characters in all]") and len(first) < 2100
    assert second == "     2\tshort"
    (workspace / "blob.bin").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0")
    out = await run(ReadFileTool(), context, path="blob.bin")
    assert out.is_error and "binary file" in out.text


async def test_read_stops_at_the_output_budget_and_says_where_to_continue(
    context: ToolContext, workspace: Path
) -> None:
    (workspace / "wide.txt").write_text("".join(f"{n:04} " + "w" * 1000 + "\n" for n in range(1, 301)))
    out = await run(ReadFileTool(), context, path="wide.txt")
    shown = [line for line in out.text.splitlines() if "\t" in line]
    assert 50 < len(shown) < 300 and len(out.text) < 110_000
    last = len(shown)
    assert f"continue with offset={last + 1}]" in out.text
    out = await run(ReadFileTool(), context, path="wide.txt", offset=last + 1, limit=1)
    assert out.text.startswith(f"{last + 1:>6}\t{last + 1:04} w")


# --- write_file ------------------------------------------------------------------------------


async def test_write_creates_parents_and_reports_bytes(context: ToolContext, workspace: Path) -> None:
    out = await run(WriteFileTool(), context, path="a/b/c.txt", content="héllo\n")
    assert not out.is_error
    assert (workspace / "a/b/c.txt").read_text(encoding="utf-8") == "héllo\n"
    assert "7 bytes" in out.text and out.text.startswith("Created")
    out = await run(WriteFileTool(), context, path="a/b/c.txt", content="")
    assert out.text.startswith("Overwrote") and "0 bytes" in out.text
    assert (workspace / "a/b/c.txt").read_bytes() == b""
    out = await run(WriteFileTool(), context, path="a", content="x")
    assert out.is_error and "is a directory" in out.text


# --- edit ------------------------------------------------------------------------------------


async def test_edit_replaces_a_unique_string(context: ToolContext, workspace: Path) -> None:
    (workspace / "m.py").write_text("def f():\n    return 1\n")
    out = await run(EditTool(), context, path="m.py", old_string="return 1", new_string="return 2")
    assert not out.is_error, out.text
    assert (workspace / "m.py").read_text() == "def f():\n    return 2\n"
    assert "Replaced 1 occurrence" in out.text and "     2\t    return 2" in out.text


async def test_edit_refuses_not_found_ambiguous_and_noop(context: ToolContext, workspace: Path) -> None:
    original = "x = 1\nx = 1\nx = 1\n"
    (workspace / "m.py").write_text(original)
    out = await run(EditTool(), context, path="m.py", old_string="y = 1", new_string="y = 2")
    assert out.is_error and "old_string not found" in out.text
    out = await run(EditTool(), context, path="m.py", old_string="x = 1", new_string="x = 2")
    assert out.is_error and "found 3 times" in out.text and "replace_all" in out.text
    out = await run(EditTool(), context, path="m.py", old_string="x = 1", new_string="x = 1")
    assert out.is_error and "the same" in out.text
    out = await run(EditTool(), context, path="nope.py", old_string="a", new_string="b")
    assert out.is_error and "file not found" in out.text
    assert (workspace / "m.py").read_text() == original


async def test_edit_replace_all(context: ToolContext, workspace: Path) -> None:
    (workspace / "m.py").write_text("x = 1\nx = 1\nx = 1\n")
    out = await run(EditTool(), context, path="m.py", old_string="x = 1", new_string="x = 2", replace_all=True)
    assert not out.is_error and "Replaced 3 occurrences" in out.text
    assert (workspace / "m.py").read_text() == "x = 2\nx = 2\nx = 2\n"


async def test_edit_keeps_crlf_line_endings(context: ToolContext, workspace: Path) -> None:
    (workspace / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    out = await run(EditTool(), context, path="w.txt", old_string="one\ntwo", new_string="1\n2")
    assert not out.is_error, out.text
    assert (workspace / "w.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


# --- glob ------------------------------------------------------------------------------------


def _touch(path: Path, mtime: float, text: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.utime(path, (mtime, mtime))


async def test_glob_sorts_newest_first_and_matches_segments(context: ToolContext, workspace: Path) -> None:
    _touch(workspace / "old.py", 1_000_000)
    _touch(workspace / "src/new.py", 3_000_000)
    _touch(workspace / "src/deep/mid.py", 2_000_000)
    _touch(workspace / "src/notes.txt", 4_000_000)
    out = await run(GlobTool(), context, pattern="**/*.py")
    expected = [workspace / "src/new.py", workspace / "src/deep/mid.py", workspace / "old.py"]
    assert out.text.splitlines() == [str(p) for p in expected]
    out = await run(GlobTool(), context, pattern="*.py")
    assert out.text.splitlines() == [str(workspace / "old.py")]
    out = await run(GlobTool(), context, pattern="src/*.{py,txt}")
    assert out.text.splitlines() == [str(workspace / "src/notes.txt"), str(workspace / "src/new.py")]
    out = await run(GlobTool(), context, pattern="*.py", path="src/deep")
    assert out.text.splitlines() == [str(workspace / "src/deep/mid.py")]
    out = await run(GlobTool(), context, pattern="**/*.rs")
    assert not out.is_error and out.text.startswith("No files match")


async def test_glob_caps_results_with_a_note(context: ToolContext, workspace: Path) -> None:
    for n in range(12):
        _touch(workspace / f"f{n:02}.txt", 1_000_000 + n)
    out = await run(GlobTool(max_results=5), context, pattern="*.txt")
    lines = out.text.splitlines()
    assert lines[:5] == [str(workspace / f"f{n:02}.txt") for n in (11, 10, 9, 8, 7)]
    assert "12 files match; showing the 5 most recently modified" in out.text


async def test_glob_skips_git_gitignored_and_symlinks(context: ToolContext, workspace: Path, outside: Path) -> None:
    _touch(workspace / ".git/config", 1)
    _touch(workspace / "keep.log", 2)
    _touch(workspace / "drop.log", 3)
    _touch(workspace / "build/out.txt", 4)
    _touch(workspace / "src/build.txt", 5)
    _touch(workspace / "src/.env", 6)
    (workspace / ".gitignore").write_text("# comment\n*.log\n!keep.log\nbuild/\n")
    (workspace / "outlink").symlink_to(outside, target_is_directory=True)
    out = await run(GlobTool(), context, pattern="**/*")
    assert relative_lines(out, workspace) == [".gitignore", "keep.log", "src/.env", "src/build.txt"]


async def test_nested_and_anchored_gitignore_rules(context: ToolContext, workspace: Path) -> None:
    for name in ["top.tmp", "src/a.tmp", "src/only_here.txt", "src/deep/only_here.txt", "src/deep/keep.txt"]:
        _touch(workspace / name, 1)
    (workspace / "src/.gitignore").write_text("*.tmp\n/only_here.txt\n")
    out = await run(GlobTool(), context, pattern="**/*.{tmp,txt}")
    assert relative_lines(out, workspace) == ["src/deep/keep.txt", "src/deep/only_here.txt", "top.tmp"]
    out = await run(GlobTool(), context, pattern="*.{tmp,txt}", path="src/deep")
    assert relative_lines(out, workspace) == ["src/deep/keep.txt", "src/deep/only_here.txt"]


async def test_glob_rejects_escaping_patterns(context: ToolContext) -> None:
    out = await run(GlobTool(), context, pattern="../*")
    assert out.is_error and ".." in out.text
    out = await run(GlobTool(), context, pattern="/etc/*")
    assert out.is_error and "relative" in out.text


# --- truncation ------------------------------------------------------------------------------


def test_truncate_text_keeps_head_and_tail_with_exact_counts() -> None:
    text = "".join(f"{n}\n" for n in range(1, 10_001))
    short = truncate_text(text, max_output=1000)
    match = re.search(r"\n\[\.\.\. (\d+) lines / (\d+) bytes omitted \.\.\.\]\n", short)
    assert match is not None
    head, tail = short[: match.start() + 1], short[match.end() :]
    assert head.startswith("1\n2\n") and tail.endswith("9999\n10000\n")
    assert len(head) + len(tail) <= 1000
    assert len(head.splitlines()) + len(tail.splitlines()) + int(match[1]) == 10_000
    assert len(head) + len(tail) + int(match[2]) == len(text)
    assert truncate_text("short") == "short"


def test_head_tail_buffer_counts_what_it_drops() -> None:
    buffer = HeadTailBuffer(limit=100)
    data = "".join(f"{n:04}\n" for n in range(1000)).encode()
    for start in range(0, len(data), 7):
        buffer.feed(data[start : start + 7])
    text = buffer.render(max_output=60)
    assert text.startswith("0000\n") and text.endswith("0999\n")
    assert "[... 988 lines / 4940 bytes omitted ...]" in text


# --- registry --------------------------------------------------------------------------------


def test_registry_gives_fresh_valid_tools() -> None:
    tools = local_tools()
    names = [tool.name for tool in tools]
    assert names == list(LOCAL_TOOL_NAMES) == ["shell", "read_file", "write_file", "edit", "glob", "grep"]
    for tool in tools:
        jsonschema.Draft202012Validator.check_schema(tool.parameters)
        assert tool.parameters["type"] == "object" and tool.parameters["required"]
        assert set(tool.parameters["required"]) <= set(tool.parameters["properties"])
        assert len(tool.description) > 200
    again = local_tools()
    assert all(a is not b and a.parameters is not b.parameters for a, b in zip(tools, again, strict=True))
    shell = local_tool("shell")
    assert isinstance(shell, ShellTool)
    assert local_tool("nope") is None
