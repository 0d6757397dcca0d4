"""Matchers, with Claude Code's rules: absent, empty or `*` match everything; a string made only of
letters, digits, `_`, `-`, spaces, `,` and `|` is a list of exact names; anything else is an
unanchored regular expression (Python's `re.search`; the usual JavaScript patterns mean the same)."""

from __future__ import annotations

import re

import attrs

_NAME_LIST = re.compile(r"[A-Za-z0-9_\- ,|]*")


@attrs.frozen
class Matcher:
    names: frozenset[str] | None = None  # exact names
    pattern: re.Pattern[str] | None = None  # neither set: matches everything

    @property
    def matches_everything(self) -> bool:
        return self.names is None and self.pattern is None

    def matches(self, value: str | None) -> bool:
        if self.matches_everything:
            return True
        if value is None:
            return False  # nothing to test a specific matcher against
        if self.names is not None:
            return value in self.names
        assert self.pattern is not None
        return self.pattern.search(value) is not None


def compile_matcher(text: str | None) -> Matcher:
    """The matcher for `text`; `re.error` if it is an invalid regular expression."""
    if text is None or text.strip() in ("", "*"):
        return Matcher()
    if _NAME_LIST.fullmatch(text):
        return Matcher(names=frozenset(name.strip() for name in re.split(r"[|,]", text) if name.strip()))
    return Matcher(pattern=re.compile(text))
