"""`write_user_config`: merges definitions into the user's `config.toml` (what a setup wizard saves)."""

from __future__ import annotations

import copy
import os
import tempfile
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from openvaala_lsp import paths

from .merge import merge_raw
from .tomlwrite import dumps
from .validate import check_document, list_keys

HEADER = (
    "openvaala configuration. Keys are the wire names of openvaala/setDefinitions.\n"
    "Written by openvaala: comments are not kept."
)


def write_user_config(definitions_fragment: Mapping[str, Any], *, config_dir: Path | None = None) -> Path:
    """Merges each list of the wire-shaped fragment (`{"models": [...], "agents": [...]}`) into the
    user file by key and rewrites it. Raises ValueError for an invalid fragment or an existing file
    that is not TOML (overwriting it would lose what the user wrote). Comments are not kept."""
    fragment = copy.deepcopy(dict(definitions_fragment))
    _, problems = check_document(fragment)  # also turns `ref = "p/n"` into a table
    if problems:
        raise ValueError("; ".join(f"{message} @ {path}" for path, message in problems))
    path = (config_dir or paths.config_dir()) / "config.toml"
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        doc = {}
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path} is not valid TOML ({exc}); fix it before saving into it") from None
    for key in list_keys():
        if key in fragment:
            existing = doc.get(key, [])
            doc[key] = merge_raw(key, existing if isinstance(existing, list) else [existing], fragment[key])
    _write_atomically(path, dumps(doc, header=HEADER))
    return path


def _write_atomically(path: Path, text: str) -> None:
    """A crash mid-write must not leave half a config; a watcher must never read one either."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=".config.", suffix=".toml", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
        if path.exists():
            os.chmod(temporary, path.stat().st_mode & 0o7777)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
