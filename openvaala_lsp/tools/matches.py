"""What a grep backend is asked and what it hands back, shared by the Python and ripgrep backends."""

from __future__ import annotations

import attrs

from openvaala_lsp.tools.protected import Protected

MAX_FILE_SIZE = 10 * 1024 * 1024
MAX_LINE_CHARS = 500
MAX_RECORDED_LINES = 20_000
"""Matching lines kept in content mode before the search stops early."""


@attrs.frozen
class GrepQuery:
    pattern: str
    base: str  # real path of a directory or a file
    base_is_dir: bool
    root: str  # the workspace root holding it, where .gitignore reading starts
    glob: str | None
    case_insensitive: bool
    mode: str
    protected: Protected = attrs.Factory(Protected)  # files never searched (nor reported)

    @property
    def first_match_only(self) -> bool:
        return self.mode == "files_with_matches"

    @property
    def keeps_lines(self) -> bool:
        return self.mode == "content"


@attrs.define
class FileMatches:
    path: str
    count: int = 0
    lines: list[tuple[int, str]] = attrs.Factory(list)


@attrs.define
class GrepResult:
    files: list[FileMatches] = attrs.Factory(list)
    stopped_early: bool = False  # MAX_RECORDED_LINES reached


def clip_line(text: str) -> str:
    text = text.rstrip("\n").rstrip("\r")
    return text if len(text) <= MAX_LINE_CHARS else f"{text[:MAX_LINE_CHARS]}... [line cut]"
