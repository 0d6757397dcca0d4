"""The `glob` tool: files matching a glob pattern, most recently modified first."""

from __future__ import annotations

import os
import re
from typing import Any

from openvaala_lsp.tools.base import ToolContext, ToolOutput
from openvaala_lsp.tools.common import LocalTool, StopFlag, ToolFailure, run_in_thread
from openvaala_lsp.tools.globbing import compile_glob, walk_files
from openvaala_lsp.tools.paths import containing_root, resolve_path

MAX_GLOB_RESULTS = 1000
_MAGIC = re.compile(r"[*?\[\]{}\\]")


def literal_prefix(pattern: str) -> tuple[str, str]:
    """Splits off leading segments without wildcards, so only that subdirectory is walked."""
    segments = pattern.split("/")
    literal: list[str] = []
    while len(segments) > 1 and not _MAGIC.search(segments[0]):
        literal.append(segments.pop(0))
    return "/".join(literal), "/".join(segments)


def _glob(path: str, pattern: str, context: ToolContext, limit: int, stop: StopFlag) -> tuple[str, list[str], int]:
    """The base directory, the newest `limit` matching files and how many matched in all."""
    base = resolve_path(path, context)
    if not os.path.isdir(base):
        raise ToolFailure(f"not a directory: {path}")
    root = containing_root(base, context) or base
    prefix, _ = literal_prefix(pattern)
    start = os.path.join(base, prefix) if prefix else base
    # A symlink in the literal prefix could lead out of the workspace; base itself is a real path.
    if os.path.realpath(start) != os.path.normpath(start) or not os.path.isdir(start):
        return base, [], 0
    regex = compile_glob(pattern)
    found: list[tuple[float, str]] = []
    for entry in walk_files(start, root, stop, context.protected):
        relative = os.path.relpath(entry.path, base).replace(os.sep, "/")
        if regex.fullmatch(relative):
            try:
                mtime = entry.stat(follow_symlinks=False).st_mtime
            except OSError:
                continue  # deleted while walking
            found.append((mtime, entry.path))
    found.sort(key=lambda item: (-item[0], item[1]))
    return base, [path for _, path in found[:limit]], len(found)


class GlobTool(LocalTool):
    NAME = "glob"
    DESCRIPTION = (
        "Find files by name with a glob pattern, e.g. `**/*.py`, `src/**/test_*.ts`, `*.{json,yaml}`. Returns "
        "absolute paths, most recently modified first.\n"
        "- The pattern is matched against the path relative to `path` (default: the workspace directory): "
        "`*` and `?` do not cross '/', `**` matches any number of directories, so `*.py` finds only files "
        "directly in the directory and `**/*.py` finds them at any depth.\n"
        f"- At most {MAX_GLOB_RESULTS} paths are returned; narrow the pattern if the note says more matched.\n"
        "- Only files are listed (not directories or symbolic links); `.git` and files excluded by "
        ".gitignore are skipped.\n"
        "- To search file contents use grep."
    )
    PARAMETERS = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "minLength": 1, "description": "Glob pattern, relative to path."},
            "path": {
                "type": "string",
                "description": "Directory to search in (default: the workspace directory).",
            },
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }

    def __init__(self, *, max_results: int = MAX_GLOB_RESULTS) -> None:
        super().__init__()
        self.max_results = max_results

    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutput:
        pattern: str = arguments["pattern"]
        if pattern.startswith("/"):
            raise ToolFailure("pattern must be relative; give the directory to search in as `path`")
        if ".." in pattern.split("/"):
            raise ToolFailure("pattern must not contain '..'; give the directory to search in as `path`")
        path: str = arguments.get("path") or context.directory
        limit = self.max_results
        base, paths, total = await run_in_thread(lambda stop: _glob(path, pattern, context, limit, stop))
        if not paths:
            return ToolOutput(text=f"No files match {pattern} in {base}")
        text = "\n".join(paths)
        if total > len(paths):
            text += f"\n\n[{total} files match; showing the {len(paths)} most recently modified. Narrow the pattern.]"
        return ToolOutput(text=text)
