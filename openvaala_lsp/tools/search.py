"""The `grep` tool: a regex search over file contents, by ripgrep when installed, else in Python.

Both backends search the same files (hidden files included; `.git`, `.gitignore`d paths, symbolic
links, binary files and files over 10 MiB skipped; a named file is always searched) and hand back
the same records, which are sorted and formatted here, so the output does not depend on which
one ran. Regexes are ripgrep (Rust) syntax with ripgrep, Python `re` syntax without; the common
constructs mean the same in both.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable
from typing import Any

from openvaala_lsp.tools import ripgrep
from openvaala_lsp.tools.base import ToolContext, ToolOutput
from openvaala_lsp.tools.common import LocalTool, StopFlag, ToolFailure, run_in_thread
from openvaala_lsp.tools.globbing import PathRule, walk_files
from openvaala_lsp.tools.matches import (
    MAX_FILE_SIZE,
    MAX_RECORDED_LINES,
    FileMatches,
    GrepQuery,
    GrepResult,
    clip_line,
)
from openvaala_lsp.tools.paths import containing_root, resolve_path
from openvaala_lsp.tools.truncate import DEFAULT_MAX_OUTPUT, truncate_text

MODES = ("files_with_matches", "content", "count")


def _glob_filter(glob: str | None) -> PathRule | None:
    return PathRule.parse(glob) if glob else None


def _passes_glob(rule: PathRule, relative: str) -> bool:
    """ripgrep's override semantics for one --glob: a positive glob keeps only matching files; a
    negated one drops matching files and everything under matching directories."""
    if not rule.negated:
        return rule.matches(relative, False)
    parts = relative.split("/")
    for depth in range(1, len(parts)):
        if rule.matches("/".join(parts[:depth]), True):
            return False
    return not rule.matches(relative, False)


def _candidate_files(query: GrepQuery, stop: StopFlag) -> Iterable[str]:
    if not query.base_is_dir:
        yield query.base
        return
    rule = _glob_filter(query.glob)
    for entry in walk_files(query.base, query.root, stop, query.protected):
        if rule is not None:
            relative = os.path.relpath(entry.path, query.base).replace(os.sep, "/")
            if not _passes_glob(rule, relative):
                continue
        yield entry.path


def python_search(query: GrepQuery, stop: StopFlag) -> GrepResult:
    """The search in pure Python, for machines without ripgrep."""
    try:
        regex = re.compile(query.pattern, re.IGNORECASE if query.case_insensitive else 0)
    except re.error as error:
        raise ToolFailure(f"invalid regex {query.pattern!r}: {error}") from error
    result = GrepResult()
    recorded = 0
    for path in _candidate_files(query, stop):
        stop.check()
        try:
            if os.path.getsize(path) > MAX_FILE_SIZE:
                continue
            with open(path, "rb") as file:
                data = file.read()
        except OSError:
            continue  # unreadable or gone: ripgrep skips these too
        if b"\0" in data:  # binary
            continue
        lines = data.decode("utf-8", errors="replace").split("\n")
        if lines and lines[-1] == "":
            lines.pop()  # the final line break does not start another line
        found = FileMatches(path=path)
        for number, line in enumerate(lines, start=1):
            if regex.search(line) is None:
                continue
            if query.keeps_lines:
                if recorded == MAX_RECORDED_LINES:
                    result.stopped_early = True
                    break
                found.lines.append((number, clip_line(line)))
                recorded += 1
            found.count += 1
            if query.first_match_only:
                break
        if found.count:
            result.files.append(found)
        if result.stopped_early:
            break
    return result


def format_result(result: GrepResult, mode: str, head_limit: int | None) -> str:
    files = sorted(result.files, key=lambda file: file.path)
    if not files:
        return "No matches found"
    entries: list[str]
    if mode == "files_with_matches":
        header = f"Found {len(files)} files"
        entries = [file.path for file in files]
    elif mode == "count":
        total = sum(file.count for file in files)
        header = f"Found {total} matching lines in {len(files)} files"
        entries = [f"{file.path}:{file.count}" for file in files]
    else:
        total = sum(file.count for file in files)
        header = f"Found {total} matching lines in {len(files)} files"
        entries = [f"{file.path}:{number}:{text}" for file in files for number, text in file.lines]
    if head_limit is not None and len(entries) > head_limit:
        header += f" (showing the first {head_limit} of {len(entries)} results)"
        entries = entries[:head_limit]
    if result.stopped_early:
        header += f" (the search stopped after {MAX_RECORDED_LINES} matching lines; narrow the pattern or path)"
    return "\n".join([header, *entries])


def _query(arguments: dict[str, Any], context: ToolContext) -> GrepQuery:
    path: str = arguments.get("path") or context.directory
    base = resolve_path(path, context)
    if not os.path.exists(base):
        raise ToolFailure(f"path not found: {path}")
    return GrepQuery(
        pattern=arguments["pattern"],
        base=base,
        base_is_dir=os.path.isdir(base),
        root=containing_root(base, context) or base,
        glob=arguments.get("glob") or None,
        case_insensitive=arguments["case_insensitive"],
        mode=arguments["output_mode"],
        protected=context.protected,
    )


class GrepTool(LocalTool):
    NAME = "grep"
    DESCRIPTION = (
        "Search file contents with a regular expression (ripgrep syntax: `def \\w+\\(`, `TODO|FIXME`, "
        "`^import `; escape literal braces, dots and parentheses). Searches `path` (a directory, recursively, "
        "or one file; default: the workspace directory), skipping .git, .gitignore'd and binary files.\n"
        "- output_mode: 'files_with_matches' (default) lists the files that match; 'content' shows matching "
        "lines as path:line:text; 'count' shows matching lines per file as path:count.\n"
        "- glob filters files, e.g. `*.py` or `*.{ts,tsx}` (a pattern without '/' matches file names at any "
        "depth; with '/' it matches the path relative to `path`; a leading '!' excludes).\n"
        "- case_insensitive for case-insensitive matching; head_limit keeps only the first N results.\n"
        "- Matches are within one line. Results are sorted by path; paths are absolute.\n"
        "- To find files by name use glob; use this instead of running grep or rg in the shell."
    )
    PARAMETERS = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "minLength": 1, "description": "Regular expression to search for."},
            "path": {
                "type": "string",
                "description": "File or directory to search (default: the workspace directory).",
            },
            "glob": {"type": "string", "description": "Only search files matching this glob, e.g. '*.py'."},
            "output_mode": {
                "type": "string",
                "enum": list(MODES),
                "default": "files_with_matches",
                "description": "files_with_matches (default), content or count.",
            },
            "case_insensitive": {
                "type": "boolean",
                "default": False,
                "description": "Ignore case when matching (default false).",
            },
            "head_limit": {
                "type": "integer",
                "minimum": 1,
                "description": "Show only the first N files, lines or counts.",
            },
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }

    def __init__(self, *, use_ripgrep: bool | None = None, max_output: int = DEFAULT_MAX_OUTPUT) -> None:
        """use_ripgrep: None picks ripgrep when `rg` is on PATH; False forces the Python search."""
        super().__init__()
        self.use_ripgrep = use_ripgrep
        self.max_output = max_output

    def _ripgrep(self) -> str | None:
        if self.use_ripgrep is False:
            return None
        found = shutil.which("rg")
        if found is None and self.use_ripgrep:
            raise ToolFailure("ripgrep (rg) is not installed")
        return found

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutput:
        query = await run_in_thread(lambda stop: _query(arguments, context))
        executable = self._ripgrep()
        if executable is not None:
            result = await ripgrep.search(executable, query)
        else:
            result = await run_in_thread(lambda stop: python_search(query, stop))
        text = format_result(result, query.mode, arguments.get("head_limit"))
        return ToolOutput(text=truncate_text(text, self.max_output))
