"""What `allowAlways` remembers of a shell command, and which later commands that covers.

A remembered command covers itself, character for character. It covers longer commands only when
it is one of `EXTENDABLE`: commands whose further arguments can neither run code, nor write files,
nor read what the sandbox hides (`git status`, `git diff`, `git log`, `git show`, `ls`, `pwd`),
and then only plain arguments (no chaining, substitution or redirection) and none of the options
listed for it, nor an abbreviation of one (git takes `--outp` for `--output`). Everything else is
remembered whole: an interpreter (`python3 build.py` is not `python3 -c ...`), a shell (`bash -c`),
a wrapper that runs its arguments (`timeout`, `env`, `nice`, `nohup`, `xargs`, `sudo`, `find -exec`),
a build or test runner (`make`, `npm run`, `pytest`: they run the project's code), a reader of any
file (`cat`, `rg`: outside the sandbox nothing hides `~/.ssh`).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence

_CONTROL = re.compile(r"[;&|`$<>()\n\r]")  # chaining, substitution, redirection, subshells
# git's options that walk into submodules, whose own config may name commands (git_guard keeps git out)
_GIT_SUBMODULES = frozenset({"--ignore-submodules", "--submodule", "--recurse-submodules"})
# and its diff options that write a file (`--output`), read any file (`--no-index`) or run the
# configured external diff (`--ext-diff`)
_GIT_DIFF_OPTIONS = _GIT_SUBMODULES | {"--output", "--no-index", "--ext-diff"}
EXTENDABLE: dict[tuple[str, ...], frozenset[str]] = {
    ("git", "status"): _GIT_SUBMODULES,
    ("git", "diff"): _GIT_DIFF_OPTIONS,
    ("git", "log"): _GIT_DIFF_OPTIONS,
    ("git", "show"): _GIT_DIFF_OPTIONS,
    ("ls",): frozenset(),
    ("pwd",): frozenset(),
}


def plain_words(command: str) -> list[str] | None:
    """The words of a simple command (one program and its arguments), None for anything more."""
    if _CONTROL.search(command):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    return words or None


def _extends(words: list[str], prefix: tuple[str, ...]) -> bool:
    """Whether `words` are `prefix` with arguments none of which is a refused option."""
    if tuple(words[: len(prefix)]) != prefix:
        return False
    refused = EXTENDABLE[prefix]
    for word in words[len(prefix) :]:
        name = word.split("=", 1)[0]
        if name.startswith("--") and len(name) > 2 and any(option.startswith(name) for option in refused):
            return False
    return True


def remembered(command: str) -> str:
    """What `allowAlways` keeps of `command`: its `EXTENDABLE` prefix if it is one with safe
    arguments (`git status -s` keeps `git status`), else the whole command line."""
    words = plain_words(command)
    if words is not None:
        for prefix in EXTENDABLE:
            if _extends(words, prefix):
                return " ".join(prefix)
    return command


def covers(kept: str, command: str) -> bool:
    """Whether a remembered `kept` covers `command`: the same line, or a safe extension of a kept
    `EXTENDABLE` prefix."""
    if command == kept:
        return True
    prefix = tuple(kept.split(" "))
    words = plain_words(command)
    return prefix in EXTENDABLE and words is not None and _extends(words, prefix)


def planted_path(command: str, environment: Mapping[str, str], roots: Sequence[str]) -> str | None:
    """The PATH entry a program the agent could write would be taken from instead of the one the
    user approved: a relative entry, or one inside the workspace, ahead of where the command's
    program is found now (it may not be there yet). None when the program comes from elsewhere."""
    words = plain_words(command) or _first_words(command)
    program = next((word for word in words if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", word)), None)
    if program is None or "/" in program:
        return None  # a path the user saw, or only assignments
    real_roots = [os.path.realpath(root) for root in roots]
    for entry in environment.get("PATH", os.defpath).split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            return entry or "."
        real = os.path.realpath(entry)
        if any(real == root or real.startswith(root.rstrip("/") + "/") for root in real_roots):
            return entry
        found = os.path.join(entry, program)
        if os.path.isfile(found) and os.access(found, os.X_OK):
            return None
    return None


def _first_words(command: str) -> list[str]:
    """The words before the first control character, for a command line that is more than one."""
    head = _CONTROL.split(command, 1)[0]
    try:
        return shlex.split(head)
    except ValueError:
        return head.split()
