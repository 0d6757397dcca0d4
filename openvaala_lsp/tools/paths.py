"""The workspace path policy every file tool goes through.

A path given by the model resolves against the conversation directory when relative; its real path
(symlinks followed, `..` folded) must lie inside one of the context's roots, themselves taken as
real paths. Checking the real path rather than the spelling is what stops `../x`, absolute paths
and symlinks that point out of the workspace alike, including a new file created under a symlinked
directory. Tools then operate on the returned real path, never on the spelling.
"""

from __future__ import annotations

import os

from openvaala_lsp.tools.base import ToolContext
from openvaala_lsp.tools.common import ToolFailure


class PathOutsideWorkspace(ToolFailure):
    def __init__(self, path: str) -> None:
        super().__init__(f"path outside the workspace: {path}")


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def workspace_roots(context: ToolContext) -> list[str]:
    """The real paths of the roots; with no roots given the conversation directory is the only one."""
    roots = context.roots or [context.directory]
    return [os.path.realpath(root) for root in roots]


def containing_root(real_path: str, context: ToolContext) -> str | None:
    """The innermost root holding `real_path` (already a real path)."""
    matches = [root for root in workspace_roots(context) if _inside(real_path, root)]
    return max(matches, key=len, default=None)


def resolve_path(path: str, context: ToolContext) -> str:
    """The real absolute path of `path`, or PathOutsideWorkspace. The file need not exist."""
    if "\0" in path:
        raise ToolFailure(f"invalid path (contains a NUL byte): {path!r}")
    candidate = path if os.path.isabs(path) else os.path.join(context.directory, path)
    # realpath resolves every existing component (so a symlinked parent of a new file counts)
    # and folds `..` lexically only past the point where the path stops existing.
    real = os.path.realpath(candidate)
    if containing_root(real, context) is None:
        raise PathOutsideWorkspace(path)
    return real
