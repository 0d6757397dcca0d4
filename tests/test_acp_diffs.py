"""A FileChange's hunks as ACP's whole oldText/newText (acp_front/diffs.py), and the fallbacks when the
file no longer holds what the tool wrote."""

from __future__ import annotations

from openvaala_lsp.acp_front.diffs import texts
from openvaala_lsp.file_diff import change_between

BEFORE = "".join(f"line {n}\n" for n in range(1, 21))
AFTER = BEFORE.replace("line 3\n", "line three\n").replace("line 15\n", "").replace("line 20\n", "line 20\nline 21\n")


def change_of(before: str | None, after: str) -> dict[str, object]:
    made = change_between("/p/f.txt", None if before is None else before.encode(), after.encode())
    assert made is not None
    return {"kind": str(made.kind), "diff": made.diff, "binary": made.binary}


def test_the_whole_file_before_and_after_when_it_still_holds_what_was_written() -> None:
    assert texts(change_of(BEFORE, AFTER), AFTER) == (BEFORE, AFTER)


def test_the_hunks_alone_when_the_file_changed_since() -> None:
    old, new = texts(change_of(BEFORE, AFTER), "someone else's text\n") or (None, "")
    assert old is not None and "line 3" in old and "line 15" in old and "line 20" in old
    assert "line three" in new and "line 15" not in new and "line 21" in new
    assert "\n…\n" in new and "line 9" not in new  # only the changed regions, with their context


def test_an_added_file_has_no_old_text_and_a_binary_one_no_diff() -> None:
    assert texts(change_of(None, "new\nfile\n"), "new\nfile\n") == (None, "new\nfile\n")
    assert texts({"kind": "update", "binary": True}, None) is None


def test_a_cut_diff_shows_its_hunks_not_a_wrong_whole_file() -> None:
    cut = {"kind": "update", "diff": "@@ -1,2 +1,2 @@\n a\n-b\n+c\n[diff cut: 10 more lines]\n"}
    assert texts(cut, "a\nc\n") == ("a\nb", "a\nc")
