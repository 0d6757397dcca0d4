"""The grep tool: the Python search always, ripgrep when installed, and the ripgrep record parsing
through a stand-in `rg` executable."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from openvaala_lsp.tools.base import ToolContext, ToolOutput
from openvaala_lsp.tools.search import GrepTool

BACKENDS = [
    pytest.param(False, id="python"),
    pytest.param(
        True, id="ripgrep", marks=pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep is not installed")
    ),
]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    files = {
        "a.py": "import os\ndef alpha():\n    return 'needle'\n",
        "src/b.py": "NEEDLE = 1\nneedle = 2\nother = 3\n",
        "src/c.txt": "a needle in text\n",
        "src/deep/d.py": "nothing here\n",
        ".hidden.py": "needle hidden\n",
        ".git/config": "needle in git\n",
        "build/gen.py": "needle generated\n",
        "notes.log": "needle logged\n",
        ".gitignore": "build/\n*.log\n",
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "blob.bin").write_bytes(b"needle\0\1\2")
    return root


@pytest.fixture
def context(tree: Path) -> ToolContext:
    return ToolContext(directory=str(tree), roots=[str(tree)], environment={})


async def grep(context: ToolContext, use_ripgrep: bool, **arguments: Any) -> ToolOutput:
    return await GrepTool(use_ripgrep=use_ripgrep).run(arguments, context)


def lines(out: ToolOutput, root: Path) -> list[str]:
    """The result lines after the header, with the root made relative for readability."""
    return [line.replace(f"{root}/", "") for line in out.text.splitlines()[1:]]


@pytest.mark.parametrize("use_ripgrep", BACKENDS)
async def test_files_with_matches(context: ToolContext, tree: Path, use_ripgrep: bool) -> None:
    out = await grep(context, use_ripgrep, pattern="needle")
    assert not out.is_error
    assert out.text.splitlines()[0] == "Found 4 files"
    assert lines(out, tree) == [".hidden.py", "a.py", "src/b.py", "src/c.txt"]


@pytest.mark.parametrize("use_ripgrep", BACKENDS)
async def test_content_and_count_modes(context: ToolContext, tree: Path, use_ripgrep: bool) -> None:
    out = await grep(context, use_ripgrep, pattern="needle", output_mode="content", path="src")
    assert out.text.splitlines()[0] == "Found 2 matching lines in 2 files"
    assert lines(out, tree) == ["src/b.py:2:needle = 2", "src/c.txt:1:a needle in text"]
    out = await grep(context, use_ripgrep, pattern="needle", output_mode="count", case_insensitive=True)
    assert out.text.splitlines()[0] == "Found 5 matching lines in 4 files"
    assert lines(out, tree) == [".hidden.py:1", "a.py:1", "src/b.py:2", "src/c.txt:1"]


@pytest.mark.parametrize("use_ripgrep", BACKENDS)
async def test_glob_filter_head_limit_and_single_file(context: ToolContext, tree: Path, use_ripgrep: bool) -> None:
    out = await grep(context, use_ripgrep, pattern="needle", glob="*.py")
    assert lines(out, tree) == [".hidden.py", "a.py", "src/b.py"]
    out = await grep(context, use_ripgrep, pattern="needle", glob="src/*.txt")
    assert lines(out, tree) == ["src/c.txt"]
    out = await grep(context, use_ripgrep, pattern="needle", glob="!*.py")
    assert lines(out, tree) == ["src/c.txt"]
    out = await grep(context, use_ripgrep, pattern="needle", glob="!src")
    assert lines(out, tree) == [".hidden.py", "a.py"]
    out = await grep(context, use_ripgrep, pattern="e", output_mode="content", head_limit=2)
    assert out.text.splitlines()[0].endswith("(showing the first 2 of 7 results)")
    assert lines(out, tree) == [".hidden.py:1:needle hidden", "a.py:2:def alpha():"]
    out = await grep(context, use_ripgrep, pattern=r"^[a-z]+ = \d$", output_mode="content", path="src/b.py")
    assert lines(out, tree) == ["src/b.py:2:needle = 2", "src/b.py:3:other = 3"]


@pytest.mark.parametrize("use_ripgrep", BACKENDS)
async def test_no_match_bad_regex_and_outside_path(context: ToolContext, tmp_path: Path, use_ripgrep: bool) -> None:
    out = await grep(context, use_ripgrep, pattern="haystack")
    assert not out.is_error and out.text == "No matches found"
    out = await grep(context, use_ripgrep, pattern="(unclosed")
    assert out.is_error
    out = await grep(context, use_ripgrep, pattern="x", path=str(tmp_path))
    assert out.is_error and out.text.startswith("path outside the workspace")
    out = await grep(context, use_ripgrep, pattern="x", path="missing")
    assert out.is_error and "path not found" in out.text


async def test_long_output_is_truncated(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("".join(f"match {n}\n" for n in range(20_000)))
    context = ToolContext(directory=str(tmp_path), roots=[str(tmp_path)], environment={})
    out = await grep(context, False, pattern="match", output_mode="content")
    assert len(out.text) < 31_000
    assert "lines /" in out.text and out.text.endswith(":20000:match 19999")


def _fake_rg(directory: Path, records: list[dict[str, Any]], exit_code: int = 0, stderr: str = "") -> None:
    """An `rg` that prints the given JSON records, to exercise the ripgrep backend's reading."""
    script = directory / "rg"
    body = "\n".join(json.dumps(record) for record in records)
    script.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        f"sys.stdout.write({body!r} + '\\n')\n"
        f"sys.stderr.write({stderr!r})\n"
        f"sys.exit({exit_code})\n"
    )
    script.chmod(0o755)


def _match(path: str, number: int, text: str | None = None, raw: str | None = None) -> dict[str, Any]:
    lines = {"text": text} if text is not None else {"bytes": raw}
    return {"type": "match", "data": {"path": {"text": path}, "lines": lines, "line_number": number}}


async def test_ripgrep_records_are_read(
    context: ToolContext, tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    records = [
        {"type": "begin", "data": {"path": {"text": "./src/b.py"}}},
        _match("./src/b.py", 2, "needle = 2\n"),
        _match("./src/b.py", 1, raw="TkVFRExFIP8K"),  # "NEEDLE \xff\n", not valid UTF-8
        {"type": "end", "data": {"path": {"text": "./src/b.py"}}},
        _match("./a.py", 3, "    return 'needle'\r\n"),
        {"type": "summary", "data": {}},
    ]
    _fake_rg(bin_dir, records)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    out = await grep(context, True, pattern="needle", output_mode="content")
    assert lines(out, tree) == ["a.py:3:    return 'needle'", "src/b.py:2:needle = 2", "src/b.py:1:NEEDLE \ufffd"]
    out = await grep(context, True, pattern="needle", output_mode="count")
    assert lines(out, tree) == ["a.py:1", "src/b.py:2"]


async def test_ripgrep_failure_is_an_error(
    context: ToolContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _fake_rg(bin_dir, [], exit_code=2, stderr="regex parse error: unclosed group")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    out = await grep(context, True, pattern="(unclosed")
    assert out.is_error and out.text == "ripgrep failed: regex parse error: unclosed group"
