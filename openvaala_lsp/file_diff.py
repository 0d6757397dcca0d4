"""A change to one file as data (`model.FileChange`): its unified diff, counted and capped.

One place for every producer of file changes (the file tools from the contents before and after,
the checkpoints from git's diffs), so a diff reads, counts and is cut the same wherever it comes
from. `FileChange.diff` holds the hunks only (from the first `@@` line): the path and the kind are
fields of their own. A diff past `MAX_DIFF_BYTES` or `MAX_DIFF_LINES` is cut at a line and ends with
one line starting `CUT_MARKER`, saying how much was left out; `additions` and `deletions` always
count the whole diff. A binary file (a NUL byte, or not UTF-8) is named, never diffed.
"""

from __future__ import annotations

import difflib
import re

from openvaala_lsp.model import FileChange, FileChangeKind

CONTEXT_LINES = 3
MAX_DIFF_BYTES = 64 * 1024  # a diff is for people and editors: past this, the rest is left out
MAX_DIFF_LINES = 2000
CUT_MARKER = "[diff cut:"
BINARY_SNIFF_BYTES = 8192
AUTOJUNK_LINES = 2000

# a hunk's header: old start, old length, new start, new length (a length left out is 1)
HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_NO_NEWLINE = "\\ No newline at end of file\n"


def is_binary(data: bytes) -> bool:
    """A NUL byte in the first block (git's and ripgrep's test), or bytes that are not UTF-8."""
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def change_between(
    path: str, before: bytes | None, after: bytes | None, *, moved_from: str | None = None
) -> FileChange | None:
    """The change from `before` to `after` (None: the file did not exist, or is gone); None when
    nothing changed. `moved_from`: the file's old path, when it moved (with or without an edit)."""
    if before == after and moved_from is None:
        return None
    if before is None:
        kind = FileChangeKind.ADD
    elif after is None:
        kind = FileChangeKind.DELETE
    else:
        kind = FileChangeKind.MOVE if moved_from is not None else FileChangeKind.UPDATE
    if any(is_binary(data) for data in (before, after) if data is not None):
        return FileChange(path=path, kind=kind, moved_from=moved_from, binary=True)
    old = _lines((before or b"").decode("utf-8"))
    new = _lines((after or b"").decode("utf-8"))
    return from_unified(path, kind, "".join(_hunks(old, new)), moved_from=moved_from)


def from_unified(path: str, kind: FileChangeKind, diff: str, *, moved_from: str | None = None) -> FileChange:
    """A FileChange from a unified diff of one file (difflib's or git's, its headers dropped):
    counted whole, then capped."""
    at = 0 if diff.startswith("@@") else diff.find("\n@@") + 1  # 0: no hunk (an empty file's add)
    hunks = diff[at:] if at > 0 or diff.startswith("@@") else ""
    additions, deletions = count_lines(hunks)
    return FileChange(
        path=path,
        kind=kind,
        moved_from=moved_from,
        diff=capped(hunks),
        additions=additions,
        deletions=deletions,
    )


def count_lines(diff: str) -> tuple[int, int]:
    """(added, deleted) lines of a unified diff, read by its hunk headers' counts, so a line whose
    text starts with `--` or `++` counts as the change it is and the headers of a next file never do."""
    additions = deletions = 0
    old_left = new_left = 0
    for line in diff.split("\n"):
        if old_left > 0 or new_left > 0:
            sign = line[:1]
            if sign == "-":
                deletions, old_left = deletions + 1, old_left - 1
            elif sign == "+":
                additions, new_left = additions + 1, new_left - 1
            elif sign == " " or line == "":
                old_left, new_left = old_left - 1, new_left - 1
            # "\ No newline at end of file" counts for neither side
            continue
        header = HUNK_HEADER.match(line)
        if header is not None:
            old_left = int(header.group(2) if header.group(2) is not None else 1)
            new_left = int(header.group(4) if header.group(4) is not None else 1)
    return additions, deletions


def capped(diff: str, *, max_bytes: int = MAX_DIFF_BYTES, max_lines: int = MAX_DIFF_LINES) -> str:
    """`diff` whole if it is within both limits; else its first whole lines within them and a last
    line saying how many lines and bytes were left out."""
    size = len(diff.encode("utf-8"))
    lines = _lines(diff)
    if size <= max_bytes and len(lines) <= max_lines:
        return diff
    kept: list[str] = []
    used = 0
    for line in lines:
        length = len(line.encode("utf-8"))
        if len(kept) >= max_lines or used + length > max_bytes:
            break
        kept.append(line)
        used += length
    if kept and not kept[-1].endswith("\n"):
        kept[-1] += "\n"
    left = len(lines) - len(kept)
    marker = (
        f"{CUT_MARKER} {left:,} more lines ({size - used:,} of {size:,} bytes) left out; "
        "additions and deletions count the whole diff]\n"
    )
    return "".join(kept) + marker


def _lines(text: str) -> list[str]:
    """The text's lines, each with its "\\n" (a last one may lack it). Not `splitlines`, which also
    splits at form feeds and Unicode line separators that are text within a line to git and editors."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _hunks(old: list[str], new: list[str]) -> list[str]:
    """Unified hunks with `CONTEXT_LINES` of context. The common head and tail are set aside first
    (an edit changes a few lines of a long file: the matcher then sees only those)."""
    head = 0
    while head < len(old) and head < len(new) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < len(old) - head and tail < len(new) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    old_end, new_end = len(old) - tail, len(new) - tail
    # junk (lines seen in over 1% of a long text) makes a long diff fast and a short one worse
    junk = max(old_end - head, new_end - head) > AUTOJUNK_LINES
    matcher = difflib.SequenceMatcher(None, old[head:old_end], new[head:new_end], autojunk=junk)
    opcodes = [("equal", 0, head, 0, head)] if head else []
    opcodes += [(tag, i1 + head, i2 + head, j1 + head, j2 + head) for tag, i1, i2, j1, j2 in matcher.get_opcodes()]
    if tail:
        opcodes.append(("equal", old_end, len(old), new_end, len(new)))
    out: list[str] = []
    for group in _grouped(opcodes):
        first, last = group[0], group[-1]
        out.append(f"@@ -{_range(first[1], last[2] - first[1])} +{_range(first[3], last[4] - first[3])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out += (_line(" ", line) for line in old[i1:i2])
                continue
            out += (_line("-", line) for line in old[i1:i2])
            out += (_line("+", line) for line in new[j1:j2])
    return out


Opcode = tuple[str, int, int, int, int]


def _grouped(opcodes: list[Opcode]) -> list[list[Opcode]]:
    """The changes in hunks, each with up to `CONTEXT_LINES` equal lines around it, as
    `SequenceMatcher.get_grouped_opcodes` groups them (here for opcodes put together from parts)."""
    context = CONTEXT_LINES
    codes = [code for code in opcodes if code[1] != code[2] or code[3] != code[4]]
    if not codes or all(code[0] == "equal" for code in codes):
        return []
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = tag, max(i1, i2 - context), i2, max(j1, j2 - context), j2
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)
    groups: list[list[Opcode]] = []
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        # an equal run longer than twice the context ends one hunk and starts the next
        if tag == "equal" and i2 - i1 > 2 * context:
            group.append((tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)))
            groups.append(group)
            group = []
            i1, j1 = max(i1, i2 - context), max(j1, j2 - context)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        groups.append(group)
    return groups


def _line(sign: str, line: str) -> str:
    return f"{sign}{line}" if line.endswith("\n") else f"{sign}{line}\n{_NO_NEWLINE}"


def _range(start: int, length: int) -> str:
    """A hunk side as unified diffs write it: 1-based, and an empty side names the line before it."""
    first = start + 1 if length else start
    return f"{first}" if length == 1 else f"{first},{length}"
