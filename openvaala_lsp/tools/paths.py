"""The workspace path policy every file tool goes through.

A path given by the model resolves against the conversation directory when relative; its real path
(symlinks followed, `..` folded) must lie inside one of the context's roots, themselves taken as
real paths, and outside what no tool may read or change (`ToolContext.protected`: credentials, an
agent's `denyRead`, openvaala's own files). Checking the real path rather than the spelling is what
stops `../x`, absolute paths and symlinks that point out of the workspace alike, including a new
file created under a symlinked directory. Tools then operate on the returned real path, never on
the spelling. A write to what governs the agent needs the user's approval of that very call
(`writable_path`), checked again here as the tool runs: a link made after the call was decided
changes the real path, and the approval does not follow it.
"""

from __future__ import annotations

import os

from openvaala_lsp.tools.base import ToolContext
from openvaala_lsp.tools.common import ToolFailure


class PathOutsideWorkspace(ToolFailure):
    def __init__(self, path: str) -> None:
        super().__init__(f"path outside the workspace: {path}")


class ProtectedPath(ToolFailure):
    def __init__(self, path: str, holder: str) -> None:
        super().__init__(
            f"refused: {path} is protected: it lies in {holder}, which no tool may read or change (credentials, "
            "paths the agent's sandbox denies, or openvaala's own files)"
        )


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
    holder = context.protected.unreadable_at(real)
    if holder is not None:
        raise ProtectedPath(path, holder)
    return real


def writable_path(path: str, context: ToolContext) -> str:
    """`resolve_path` for a write: what governs the agent only if the user approved this call's
    write of that very file."""
    real = resolve_path(path, context)
    if context.protected.governing_at(real) is not None and real != context.approved_write:
        raise ToolFailure(
            f"refused: {path} is {real}, which governs the agent; writing it needs the user's approval of that "
            "one write, which this call does not have (the path changed after the call was decided)"
        )
    return real
