"""The command line's parser: every mistake is one line on stderr naming what was wrong, exit code 2.

argparse prints its usage block and words like "argument report: invalid choice"; worse, a
misspelled option (`usage --sinse 7d`) is blamed on its value, because argparse sets the unknown
option aside and then finds `7d` where the report name goes. `CliParser` first looks for an option
this command does not have, and names it (with the nearest one it does have).
"""

from __future__ import annotations

import argparse
import difflib
import re
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

USAGE_ERROR = 2  # what argparse and most Unix tools exit with for a wrong command line
_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")  # argparse reads these as values, not options


class BadArgument(Exception):
    """A value the parser could not check alone (say, --until before --since); the message is for the user."""


class CliParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line, and that names an unknown option before anything else."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._given: list[str] = []

    def parse_known_args(  # type: ignore[override]  # typeshed's overloads; the signature is argparse's
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._given = list(sys.argv[1:] if args is None else args)
        found = self.unknown_option(self._given)
        if found is not None:
            parser, option = found
            fail(parser.prog, parser.unknown_words(option))
        return super().parse_known_args(self._given, namespace)

    def parse_args(  # type: ignore[override]  # as parse_known_args
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:  # what no command takes; unknown options were named in parse_known_args
            command = self._subcommand(self._given)
            words = " ".join(shlex.quote(extra) for extra in extras)
            noun = "argument" if len(extras) == 1 else "arguments"
            fail(command.prog if command else self.prog, f"unexpected {noun}: {words}")
        return parsed

    def error(self, message: str) -> NoReturn:
        # argparse's "unrecognized arguments" comes from the top parser: name the sub-command they were given to
        command = self._subcommand(self._given)
        fail(command.prog if command else self.prog, _plain(message))

    def unknown_option(self, given: Sequence[str]) -> tuple[CliParser, str] | None:
        """The first token of `given` that looks like an option its command does not have, with that
        command's parser. Searched up to `--`, and up to the sub-command, whose own options follow it."""
        commands = self._subcommands()
        for index, token in enumerate(given):
            if token == "--":
                return None
            if token in commands:
                return commands[token].unknown_option(given[index + 1 :])
            if commands and not _looks_like_option(token):
                return None  # not a command: argparse's error names it
            name = token.split("=", 1)[0]
            if _looks_like_option(token) and not self._known(name):
                return self, name
        return None

    def unknown_words(self, option: str) -> str:
        nearest = difflib.get_close_matches(option, self._option_names(), n=1, cutoff=0.6)
        hint = f" (did you mean {nearest[0]}?)" if nearest else ""
        return f"unknown option {option}{hint}"

    def _subcommand(self, given: Sequence[str]) -> CliParser | None:
        commands = self._subcommands()
        return next((commands[token] for token in given if token in commands), None)

    def _known(self, name: str) -> bool:
        names = self._option_names()
        if name in names:
            return True
        # argparse takes a unique prefix of a long option (--lim for --limit)
        return self.allow_abbrev and name.startswith("--") and len([n for n in names if n.startswith(name)]) == 1

    def _option_names(self) -> list[str]:
        return [name for action in self._actions for name in action.option_strings]

    def _subcommands(self) -> dict[str, CliParser]:
        return {
            name: parser
            for action in self._actions
            if isinstance(action, argparse._SubParsersAction)  # argparse has no public way to see them
            for name, parser in action.choices.items()
            if isinstance(parser, CliParser)
        }


def fail(prog: str, message: str) -> NoReturn:
    """One line on stderr, and exit 2: how every command line mistake ends."""
    # a value may hold a newline or a terminal escape: shown escaped, so the line stays one line
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
    print(f"{prog}: {shown} (see {prog} --help)", file=sys.stderr)
    sys.exit(USAGE_ERROR)


def _looks_like_option(token: str) -> bool:
    # as argparse decides: a dash, not a negative number, no space (`sql "-- a comment"` is a value)
    return token.startswith("-") and token != "-" and not _NUMBER.match(token) and " " not in token


_INVALID_TYPE = re.compile(r"^argument (\S+?)(?:/\S+)?: invalid (\w+) value: (.*)$")
_INVALID_CHOICE = re.compile(r"^argument (\S+?)(?:/\S+)?: invalid choice: (.*?) \(choose from (.*)\)$")
_ARGUMENT = re.compile(r"^argument (\S+?)(?:/\S+)?: (.*)$")
_TYPE_WORDS = {"int": "a whole number", "float": "a number"}


def _plain(message: str) -> str:
    """argparse's message in a user's words: the option (or value) first, then what is wrong with it."""
    invalid = _INVALID_TYPE.match(message)
    if invalid:
        option, kind, value = invalid.groups()
        return f"{option} needs {_TYPE_WORDS.get(kind, kind)}, not {value}"
    choice = _INVALID_CHOICE.match(message)
    if choice:
        name, value, choices = choice.groups()
        choices = choices.replace("'", "")  # Python 3.11 quotes them, 3.12 does not
        if name.startswith("-"):
            return f"{name} cannot be {value} (choose from {choices})"
        return f"unknown {name} {value} (choose from {choices})"
    argument = _ARGUMENT.match(message)
    if argument:
        name, problem = argument.groups()
        # a positional's own check already says what it is ("no such directory: ..."); an option is named
        return f"{name}: {problem}" if name.startswith("-") else problem
    return message


def user_path(text: str) -> Path:
    """An argparse `type`: a path with `~` or `~user` expanded (a user that does not exist is a mistake)."""
    try:
        return Path(text).expanduser()
    except RuntimeError:  # pathlib's word for "no such user"
        raise argparse.ArgumentTypeError(f"no such user's home: {text.split('/', 1)[0]}") from None


def existing_directory(text: str) -> Path:
    """An argparse `type`: a directory that exists, made absolute."""
    path = user_path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"not a directory: {text}" if path.exists() else f"no such directory: {text}")
    return path.resolve()


def whole_number(low: int, high: int) -> Any:
    """An argparse `type`: a whole number from `low` to `high`."""

    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low} and {high:,}, not {value}")
        return value

    return convert


def plural(count: int, word: str, many: str | None = None) -> str:
    """`1 call`, `2 calls`, `1,000 calls` (`many` for words that do not just take an s)."""
    return f"{count:,} {word if count == 1 else many or word + 's'}"
