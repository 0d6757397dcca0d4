"""A runtime FileChange (a unified diff's hunks) as ACP's `diff {path, oldText, newText}`.

ACP wants whole texts. The file as it is now, with the hunks taken back out of it, gives both when the
file still holds what the tool wrote; otherwise (changed since, cut or binary diff) the hunks alone
give the changed regions with their context, which is what ACP clients show anyway."""

from __future__ import annotations

from typing import Any

from openvaala_lsp.file_diff import CUT_MARKER, HUNK_HEADER


def _hunks(diff: str) -> list[tuple[int, list[str], list[str]]]:
    """(first line of the new side, old side lines, new side lines) per hunk."""
    hunks: list[tuple[int, list[str], list[str]]] = []
    for line in diff.splitlines():
        if match := HUNK_HEADER.match(line):
            hunks.append((int(match.group(3)), [], []))
        elif hunks and line[:1] in (" ", "-", "+"):
            _, old, new = hunks[-1]
            if line[0] != "+":
                old.append(line[1:])
            if line[0] != "-":
                new.append(line[1:])
    return hunks


def _unapply(current: str, hunks: list[tuple[int, list[str], list[str]]]) -> str | None:
    """`current` with every hunk's new side replaced by its old side, or None when it does not match."""
    lines = current.splitlines()
    trailing = current.endswith("\n")
    for start, old, new in reversed(hunks):
        at = max(start - 1, 0) if new else start  # a pure deletion's new side starts after its position
        if lines[at : at + len(new)] != new:
            return None
        lines[at : at + len(new)] = old
    text = "\n".join(lines)
    return text + "\n" if trailing and lines else text


def texts(change: dict[str, Any], current: str | None) -> tuple[str | None, str] | None:
    """(oldText, newText) of one FileChange, or None when it has no text to show (a binary file)."""
    diff = change.get("diff")
    kind = change.get("kind")
    if not isinstance(diff, str) or change.get("binary"):
        return None
    hunks = _hunks(diff)
    if current is not None and CUT_MARKER not in diff and kind != "delete":
        if kind == "add":
            return None, current
        old = _unapply(current, hunks)
        if old is not None:
            return old, current
    old_parts = ["\n".join(old) for _, old, _ in hunks]
    new_parts = ["\n".join(new) for _, _, new in hunks]
    gap = "\n…\n"
    return (None if kind == "add" else gap.join(old_parts)), ("" if kind == "delete" else gap.join(new_parts))
