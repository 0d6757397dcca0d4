"""Loads one TOML configuration file into `Definitions`, or into located errors."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from openvaala_lsp.definitions import Definitions

from .errors import ConfigError
from .tomlscan import key_lines, line_of
from .validate import check_document

_AT_LINE = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")


def load_toml_file(path: Path, *, user: bool = False) -> tuple[Definitions | None, list[ConfigError]]:
    """A missing file is no error; a file with any error contributes nothing. `user`: the user's own
    file, which may hold more than definitions (`validate.check_document`)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, []
    except (OSError, UnicodeDecodeError) as exc:
        return None, [ConfigError(path=path, line=None, field=None, message=f"cannot read: {exc}")]
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return None, [syntax_error(path, exc)]
    definitions, problems = check_document(doc, user=user)
    if definitions is None:
        lines = key_lines(text)
        return None, [
            ConfigError(path=path, line=line_of(lines, field), field=field, message=message)
            for field, message in problems
        ]
    for skill in definitions.skills:
        if skill.path is not None:  # relative to the file, as a reader of the file would expect
            skill.path = str((path.parent / skill.path).resolve())
    return definitions, []


def syntax_error(path: Path, exc: tomllib.TOMLDecodeError) -> ConfigError:
    # tomllib (3.11) keeps the position only in its message: "... (at line 3, column 7)"
    message = str(exc)
    match = _AT_LINE.search(message)
    if match is None:
        return ConfigError(path=path, line=None, field=None, message=f"invalid TOML: {message}")
    text = message[: match.start()]
    return ConfigError(path=path, line=int(match[1]), field=None, message=f"invalid TOML: {text} (column {match[2]})")
