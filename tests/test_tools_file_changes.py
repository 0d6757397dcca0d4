"""What write_file and edit report changed (`ToolOutput.file_changes`): the right kind, counts and
context, binary files named only, a huge diff cut with its marker, nothing for a refused or failed
call, and the model's text as before (the diff is for people and editors)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from openvaala_lsp.file_diff import CUT_MARKER, MAX_DIFF_BYTES
from openvaala_lsp.model import FileChange, FileChangeKind
from openvaala_lsp.tools.base import OpenBuffer, ToolContext, ToolOutput
from openvaala_lsp.tools.files import EditTool, WriteFileTool


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root.resolve()


@pytest.fixture
def context(workspace: Path) -> ToolContext:
    return ToolContext(directory=str(workspace), roots=[str(workspace)], environment={"PATH": os.environ["PATH"]})


async def write(context: ToolContext, path: str, content: str) -> ToolOutput:
    return await WriteFileTool().run({"path": path, "content": content}, context)


async def edit(context: ToolContext, path: str, old: str, new: str, **extra: Any) -> ToolOutput:
    return await EditTool().run({"path": path, "old_string": old, "new_string": new, **extra}, context)


def only(output: ToolOutput) -> FileChange:
    assert not output.is_error, output.text
    assert output.file_changes is not None and len(output.file_changes) == 1
    return output.file_changes[0]


async def test_writing_a_new_file_is_an_add_with_every_line(context: ToolContext, workspace: Path) -> None:
    output = await write(context, "pkg/new.py", "import os\n\nprint(os.name)\n")
    change = only(output)
    assert change.path == str(workspace / "pkg/new.py") and change.kind is FileChangeKind.ADD
    assert (change.additions, change.deletions, change.binary) == (3, 0, None)
    assert change.diff == "@@ -0,0 +1,3 @@\n+import os\n+\n+print(os.name)\n"
    assert output.text == f"Created {workspace / 'pkg/new.py'} (26 bytes)"  # what the model reads, as before


async def test_overwriting_is_an_update_against_what_was_on_disk(context: ToolContext, workspace: Path) -> None:
    (workspace / "a.txt").write_text("".join(f"{n}\n" for n in range(1, 11)))
    change = only(await write(context, "a.txt", "".join(f"{n}\n" for n in range(1, 11)).replace("5\n", "five\n")))
    assert change.kind is FileChangeKind.UPDATE and (change.additions, change.deletions) == (1, 1)
    assert change.diff == "@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"
    same = await write(context, "a.txt", (workspace / "a.txt").read_text())
    assert not same.is_error and same.file_changes is None  # nothing changed: nothing reported


async def test_an_edit_reports_its_hunk_with_three_lines_of_context(context: ToolContext, workspace: Path) -> None:
    lines = [f"line {n}" for n in range(1, 31)]
    (workspace / "m.py").write_text("\n".join(lines) + "\n")
    output = await edit(context, "m.py", "line 15\n", "line fifteen\nline fifteen and a half\n")
    change = only(output)
    assert change.path == str(workspace / "m.py") and change.kind is FileChangeKind.UPDATE
    assert (change.additions, change.deletions) == (2, 1)
    assert change.diff == (
        "@@ -12,7 +12,8 @@\n line 12\n line 13\n line 14\n-line 15\n+line fifteen\n+line fifteen and a half\n"
        " line 16\n line 17\n line 18\n"
    )
    assert "@@" not in output.text and output.text.startswith("Replaced 1 occurrence")


async def test_replace_all_far_apart_makes_one_hunk_each(context: ToolContext, workspace: Path) -> None:
    (workspace / "m.py").write_text("x = 1\n" + "pass\n" * 20 + "x = 1\n")
    change = only(await edit(context, "m.py", "x = 1", "x = 2", replace_all=True))
    assert (change.additions, change.deletions) == (2, 2)
    assert change.diff is not None and change.diff.count("\n@@") + change.diff.startswith("@@") == 2


async def test_crlf_edit_diffs_the_lines_as_written(context: ToolContext, workspace: Path) -> None:
    (workspace / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    change = only(await edit(context, "w.txt", "two", "2"))
    assert change.diff == "@@ -1,3 +1,3 @@\n one\r\n-two\r\n+2\r\n three\r\n"


async def test_a_binary_file_overwritten_is_named_not_diffed(context: ToolContext, workspace: Path) -> None:
    (workspace / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    change = only(await write(context, "logo.png", "now text\n"))
    assert change.kind is FileChangeKind.UPDATE and change.binary is True
    assert change.diff is None and (change.additions, change.deletions) == (0, 0)
    (workspace / "latin1.txt").write_bytes("café\n".encode("latin-1"))
    assert only(await write(context, "latin1.txt", "cafe\n")).binary is True


async def test_a_huge_write_is_cut_with_its_marker_and_counted_whole(context: ToolContext, workspace: Path) -> None:
    content = "".join(f"generated line {n:06d} {'=' * 40}\n" for n in range(50_000))
    output = await write(context, "gen.txt", content)
    change = only(output)
    assert (change.additions, change.deletions) == (50_000, 0)
    assert change.diff is not None and len(change.diff.encode()) <= MAX_DIFF_BYTES + 200
    assert change.diff.splitlines()[-1].startswith(CUT_MARKER)
    assert (workspace / "gen.txt").read_text() == content  # the file is whole: only the report is cut
    assert len(output.text) < 200


async def test_a_refused_or_failed_call_reports_no_change(
    context: ToolContext, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret\n")
    (workspace / "link.txt").symlink_to(outside / "secret.txt")
    (workspace / "linkdir").symlink_to(outside, target_is_directory=True)
    for output in (
        await write(context, "link.txt", "overwritten"),
        await edit(context, "link.txt", "top", "bottom"),
        await write(context, "linkdir/new.txt", "x"),
        await write(context, "../outside/secret.txt", "x"),
        await edit(context, "missing.py", "a", "b"),
    ):
        assert output.is_error and output.file_changes is None, output.text
    assert (outside / "secret.txt").read_text() == "top secret\n" and sorted(os.listdir(outside)) == ["secret.txt"]
    (workspace / "m.py").write_text("a\n")
    failed = await edit(context, "m.py", "zzz", "b")
    assert failed.is_error and failed.file_changes is None


async def test_unsaved_editor_text_does_not_enter_the_diff(workspace: Path) -> None:
    """The diff is of the disk, before and after: the editor's unsaved text was not part of it."""
    (workspace / "open.py").write_text("on disk\n")
    buffer = OpenBuffer(text="unsaved in the editor\n", editor="Neovim")
    context = ToolContext(
        directory=str(workspace),
        roots=[str(workspace)],
        environment={},
        buffers=lambda real: buffer if real == str(workspace / "open.py") else None,
    )
    output = await write(context, "open.py", "written\n")
    assert only(output).diff == "@@ -1 +1 @@\n-on disk\n+written\n"
    assert "unsaved changes" in output.text
