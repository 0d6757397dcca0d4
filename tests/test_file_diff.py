"""`file_diff`: a file's change as data. The hunks must apply (each is checked by applying it back),
the counts are the diff's own, a cut diff says so in its last line, and binary files are named only."""

from __future__ import annotations

import random
import re

from openvaala_lsp.file_diff import (
    CUT_MARKER,
    MAX_DIFF_BYTES,
    MAX_DIFF_LINES,
    capped,
    change_between,
    count_lines,
    from_unified,
    is_binary,
)
from openvaala_lsp.model import FileChangeKind

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _split(text: str) -> list[str]:
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def applied(old: str, diff: str) -> str:
    """`diff` applied to `old`, checking each context and deleted line against it."""
    source, out, at = _split(old), [], 0
    lines = diff.split("\n")
    index = 0
    while index < len(lines):
        header = _HUNK.match(lines[index])
        index += 1
        if header is None:
            continue
        start = int(header.group(1)) - (1 if header.group(2) != "0" else 0)
        out += source[at:start]
        at = start
        while index < len(lines) and lines[index][:1] in (" ", "-", "+", "\\"):
            line = lines[index]
            ends = not (index + 1 < len(lines) and lines[index + 1].startswith("\\"))
            text = line[1:] + ("\n" if ends else "")
            if line[0] in " -":
                assert source[at] == text, (line, source[at])
                at += 1
            if line[0] in " +":
                out.append(text)
            index += 1
    return "".join(out + source[at:])


def test_an_update_has_three_lines_of_context_and_counts_its_lines() -> None:
    before = "".join(f"line {n}\n" for n in range(1, 21)).encode()
    after = before.replace(b"line 10\n", b"line ten\nline ten and a half\n")
    change = change_between("/w/a.txt", before, after)
    assert change is not None
    assert change.kind is FileChangeKind.UPDATE and change.path == "/w/a.txt" and not change.binary
    assert (change.additions, change.deletions) == (2, 1)
    assert change.diff == (
        "@@ -7,7 +7,8 @@\n line 7\n line 8\n line 9\n-line 10\n+line ten\n+line ten and a half\n"
        " line 11\n line 12\n line 13\n"
    )


def test_an_add_a_delete_and_no_change() -> None:
    added = change_between("/w/new.py", None, b"a\nb\n")
    assert added is not None and added.kind is FileChangeKind.ADD
    assert (added.additions, added.deletions, added.diff) == (2, 0, "@@ -0,0 +1,2 @@\n+a\n+b\n")
    empty = change_between("/w/empty", None, b"")
    assert empty is not None and empty.kind is FileChangeKind.ADD and empty.diff == "" and empty.additions == 0
    gone = change_between("/w/old.py", b"x\n", None)
    assert gone is not None and gone.kind is FileChangeKind.DELETE and (gone.additions, gone.deletions) == (0, 1)
    assert change_between("/w/same", b"same\n", b"same\n") is None
    moved = change_between("/w/to", b"same\n", b"same\n", moved_from="/w/from")
    assert moved is not None and moved.kind is FileChangeKind.MOVE and moved.moved_from == "/w/from"
    assert moved.diff == "" and (moved.additions, moved.deletions) == (0, 0)


def test_a_last_line_without_newline_is_marked_like_git() -> None:
    change = change_between("/w/a", b"a\nb", b"a\nb\n")
    assert change is not None
    assert change.diff == "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"
    assert (change.additions, change.deletions) == (1, 1)


def test_lines_that_look_like_headers_count_as_the_change_they_are() -> None:
    before = b"--- not a header\n+++ nor this\n@@ -1 +1 @@ neither\nkeep\n"
    after = b"+++ nor this\n@@ -9 +9 @@ changed\nkeep\n--- added\n"
    change = change_between("/w/a", before, after)
    assert change is not None and change.diff is not None
    assert (change.additions, change.deletions) == (2, 2)
    assert applied(before.decode(), change.diff) == after.decode()


def test_form_feeds_and_unicode_separators_stay_within_their_line() -> None:
    before = "a\x0cb\u2028c\nsecond\n".encode()
    after = "a\x0cb\u2028c\nsecond!\n".encode()
    change = change_between("/w/a", before, after)
    assert change is not None and (change.additions, change.deletions) == (1, 1)


def test_crlf_lines_keep_their_carriage_returns() -> None:
    change = change_between("/w/a", b"one\r\ntwo\r\n", b"one\r\n2\r\n")
    assert change is not None and change.diff == "@@ -1,2 +1,2 @@\n one\r\n-two\r\n+2\r\n"


def test_random_edits_give_hunks_that_apply() -> None:
    rng = random.Random(7)
    words = ["a\n", "b\n", "\n", "--x\n", "++y\n", "@@ z\n", " c\n"]
    for _ in range(1500):
        old = [rng.choice(words) for _ in range(rng.randint(0, 40))]
        new = list(old)
        for _ in range(rng.randint(1, 6)):
            roll = rng.random()
            if roll < 0.4 and new:
                new.pop(rng.randrange(len(new)))
            elif roll < 0.8:
                new.insert(rng.randint(0, len(new)), rng.choice(words))
            elif new:
                new[rng.randrange(len(new))] = rng.choice(words)
        before, after = "".join(old), "".join(new)
        if rng.random() < 0.3:
            after = after.rstrip("\n")
        change = change_between("/w/f", before.encode(), after.encode())
        if change is None:
            assert before == after
            continue
        assert change.diff is not None
        assert applied(before, change.diff) == after
        lines = change.diff.split("\n")
        assert change.additions == sum(line.startswith("+") for line in lines)
        assert change.deletions == sum(line.startswith("-") for line in lines)


def test_binary_files_are_named_not_diffed() -> None:
    assert is_binary(b"\x89PNG\r\n\x1a\n\0\0") and is_binary(b"caf\xe9\n") and not is_binary("café\n".encode())
    for before, after in ((b"text\n", b"\0binary"), (b"\xff\xfe", b"text\n"), (None, b"\0")):
        change = change_between("/w/image.png", before, after)
        assert change is not None and change.binary is True
        assert change.diff is None and (change.additions, change.deletions) == (0, 0)


def test_a_huge_diff_is_cut_at_a_line_with_a_marker_and_counted_whole() -> None:
    after = "".join(f"new line {n} {'x' * 60}\n" for n in range(20_000)).encode()
    change = change_between("/w/big", None, after)
    assert change is not None and change.diff is not None
    assert (change.additions, change.deletions) == (20_000, 0)
    assert len(change.diff.encode()) <= MAX_DIFF_BYTES + 200
    *shown, marker, end = change.diff.split("\n")
    assert end == "" and marker.startswith(CUT_MARKER)
    assert all(line.startswith(("@@", "+new line")) for line in shown)
    assert f"{20_001 - len(shown):,} more lines" in marker


def test_the_cap_counts_lines_too_and_leaves_a_small_diff_alone() -> None:
    diff = "@@ -1,3000 +1,3000 @@\n" + "".join(f"-{n}\n+{n}!\n" for n in range(3000))
    cut = capped(diff)
    assert cut.count("\n") == MAX_DIFF_LINES + 1 and cut.splitlines()[-1].startswith(CUT_MARKER)
    assert count_lines(diff) == (3000, 3000)
    assert capped("@@ -1 +1 @@\n-a\n+b\n") == "@@ -1 +1 @@\n-a\n+b\n"


def test_a_git_diff_is_taken_from_its_first_hunk() -> None:
    git = (
        "diff --git a/x.txt b/x.txt\nindex 1111111..2222222 100644\n--- a/x.txt\n+++ b/x.txt\n"
        "@@ -1,2 +1,2 @@\n-old\n+new\n same\n"
    )
    change = from_unified("/w/x.txt", FileChangeKind.UPDATE, git)
    assert change.diff == "@@ -1,2 +1,2 @@\n-old\n+new\n same\n"
    assert (change.additions, change.deletions) == (1, 1)
    mode_only = from_unified("/w/x.sh", FileChangeKind.UPDATE, "diff --git a/x.sh b/x.sh\nold mode 100644\n")
    assert mode_only.diff == "" and (mode_only.additions, mode_only.deletions) == (0, 0)
