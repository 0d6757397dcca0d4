"""Where openvaala keeps its files: `OPENVAALA_HOME` when set, else the XDG base directories."""

from __future__ import annotations

import os
from pathlib import Path


def _xdg(variable: str, default: str) -> Path:
    value = os.environ.get(variable)
    return Path(value) if value and os.path.isabs(value) else Path.home() / default


def home() -> Path | None:
    value = os.environ.get("OPENVAALA_HOME")
    return Path(value).expanduser().resolve() if value else None


def config_dir() -> Path:
    return home() or _xdg("XDG_CONFIG_HOME", ".config") / "openvaala"


def data_dir() -> Path:
    return home() or _xdg("XDG_DATA_HOME", ".local/share") / "openvaala"


def state_dir() -> Path:
    """Logs."""
    base = home()
    return base / "logs" if base else _xdg("XDG_STATE_HOME", ".local/state") / "openvaala"


def database_path() -> Path:
    return data_dir() / "openvaala.duckdb"
