"""Glob patterns, a small `.gitignore` reader and the tree walk that the glob and grep tools share.

Globs: `*` and `?` stay within one path segment, `**` spans segments (`**/x`, `a/**`, `a/**/b`),
`[abc]`/`[!abc]` classes, `{a,b}` alternatives, backslash escapes a character.

`.gitignore` support is the common subset: comments, blank lines, `!` negation (last match wins),
a trailing `/` for directories only, a leading or inner `/` anchoring the pattern to the file's own
directory, otherwise matching a name at any depth. Every `.gitignore` from the workspace root down
to each directory walked applies. As in git, a file inside an excluded directory is never reached,
so a later `!` pattern cannot bring it back. Not read: `.git/info/exclude` and global excludes.
Symbolic links are neither followed nor listed, so a walk never leaves the tree it started in.
What no tool may read (`protected.py`) is neither listed nor walked into.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

import attrs

from openvaala_lsp.tools.common import StopFlag
from openvaala_lsp.tools.protected import Protected

SKIPPED_DIRECTORIES = frozenset({".git"})
_NOTHING_PROTECTED = Protected()


def _brace_balanced(pattern: str) -> bool:
    depth = 0
    escaped = False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def _char_class(pattern: str, start: int) -> tuple[str, int] | None:
    """The regex for the class starting at pattern[start] == '[' and the index after it."""
    index = start + 1
    negated = index < len(pattern) and pattern[index] in "!^"
    if negated:
        index += 1
    body_start = index
    if index < len(pattern) and pattern[index] == "]":
        index += 1  # a leading ']' is a member, not the end
    end = pattern.find("]", index)
    if end < 0:
        return None
    body = "".join(char if char == "-" else re.escape(char) for char in pattern[body_start:end])
    return f"[{'^' if negated else ''}{body}]", end + 1


def glob_to_regex(pattern: str) -> str:
    """A regex (for fullmatch) equivalent to the glob `pattern` over '/'-separated relative paths."""
    braces = _brace_balanced(pattern)
    out: list[str] = []
    depth = 0
    index = 0
    while index < len(pattern):
        char = pattern[index]
        at_segment_start = index == 0 or pattern[index - 1] == "/"
        if char == "*" and pattern.startswith("**", index) and at_segment_start:
            rest = pattern[index + 2 :]
            if rest.startswith("/"):
                out.append("(?:.*/)?")
                index += 3
                continue
            if not rest or (depth and rest[0] in ",}"):
                out.append(".*")
                index += 2
                continue
        if char == "*":
            while index < len(pattern) and pattern[index] == "*":
                index += 1
            out.append("[^/]*")
            continue
        if char == "?":
            out.append("[^/]")
        elif char == "[":
            found = _char_class(pattern, index)
            if found is not None:
                out.append(found[0])
                index = found[1]
                continue
            out.append(re.escape(char))
        elif char == "{" and braces:
            out.append("(?:")
            depth += 1
        elif char == "," and depth:
            out.append("|")
        elif char == "}" and depth:
            out.append(")")
            depth -= 1
        elif char == "\\" and index + 1 < len(pattern):
            index += 1
            out.append(re.escape(pattern[index]))
        else:
            out.append(re.escape(char))
        index += 1
    return "".join(out)


def compile_glob(pattern: str) -> re.Pattern[str]:
    return re.compile(glob_to_regex(pattern), re.DOTALL)


@attrs.frozen
class PathRule:
    """One gitignore-style pattern: anchored ones match the path relative to their base directory,
    the others match the last path segment at any depth."""

    regex: re.Pattern[str]
    negated: bool
    directory_only: bool
    anchored: bool

    @classmethod
    def parse(cls, line: str) -> PathRule | None:
        line = line.rstrip("\n").rstrip("\r")
        if not line.endswith("\\ "):
            line = line.rstrip(" ")
        if not line or line.startswith("#"):
            return None
        negated = line.startswith("!")
        if negated:
            line = line[1:]
        directory_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            return None
        anchored = "/" in line
        line = line.lstrip("/")
        return cls(regex=compile_glob(line), negated=negated, directory_only=directory_only, anchored=anchored)

    def matches(self, relative: str, is_dir: bool) -> bool:
        if self.directory_only and not is_dir:
            return False
        subject = relative if self.anchored else relative.rsplit("/", 1)[-1]
        return self.regex.fullmatch(subject) is not None


def _read_gitignore(directory: str) -> list[PathRule]:
    try:
        with open(os.path.join(directory, ".gitignore"), encoding="utf-8", errors="replace") as file:
            lines = file.readlines()
    except OSError:
        return []
    return [rule for rule in map(PathRule.parse, lines) if rule is not None]


@attrs.frozen
class IgnoreRules:
    """The `.gitignore` rules in force in one directory: its own and all its ancestors' (to the root)."""

    layers: tuple[tuple[str, tuple[PathRule, ...]], ...] = ()

    def enter(self, directory: str) -> IgnoreRules:
        rules = _read_gitignore(directory)
        return IgnoreRules(layers=(*self.layers, (directory, tuple(rules)))) if rules else self

    def ignored(self, path: str, is_dir: bool) -> bool:
        verdict = False
        for base, rules in self.layers:
            relative = os.path.relpath(path, base).replace(os.sep, "/")
            for rule in rules:
                if rule.matches(relative, is_dir):
                    verdict = not rule.negated
        return verdict

    @classmethod
    def for_directory(cls, directory: str, root: str) -> IgnoreRules:
        """The rules in force in `directory`, read from every `.gitignore` from `root` down to it."""
        chain = [directory]
        while chain[-1] != root and chain[-1].startswith(root + os.sep):
            chain.append(os.path.dirname(chain[-1]))
        rules = cls()
        for each in reversed(chain):
            rules = rules.enter(each)
        return rules


def walk_files(
    start: str, root: str, stop: StopFlag, protected: Protected = _NOTHING_PROTECTED
) -> Iterator[os.DirEntry[str]]:
    """Regular files under `start` (depth first, names sorted), skipping `.git`, symbolic links,
    whatever `.gitignore` files between `root` and each directory exclude, and what is `protected`
    (no tool reads it: it is not even listed)."""
    if protected.unreadable_at(start):
        return
    pending: list[tuple[str, IgnoreRules]] = [(start, IgnoreRules.for_directory(start, root))]
    while pending:
        stop.check()
        directory, rules = pending.pop()
        try:
            with os.scandir(directory) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError:
            continue  # unreadable or vanished since it was listed: nothing to report from it
        subdirectories: list[tuple[str, IgnoreRules]] = []
        for entry in entries:
            if entry.is_symlink() or protected.unreadable_at(entry.path):
                continue
            if entry.is_dir(follow_symlinks=False):
                if entry.name in SKIPPED_DIRECTORIES or rules.ignored(entry.path, True):
                    continue
                subdirectories.append((entry.path, rules.enter(entry.path)))
            elif entry.is_file(follow_symlinks=False) and not rules.ignored(entry.path, False):
                yield entry
        # Reversed, so popping from the end visits them in name order.
        pending.extend(reversed(subdirectories))
