"""Where openvaala keeps its files: `OPENVAALA_HOME` when set, else the XDG base directories; and
keeping them private. The data (the history), state (logs) and run directories are 0700, the files
in them 0600, also when an older openvaala made them open: the history is every prompt and answer."""

from __future__ import annotations

import os
import stat
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


def ensure_private_dir(path: str | os.PathLike[str]) -> None:
    """Creates the directory (missing parents as the umask says) and closes it to other users."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    mode = stat.S_IMODE(os.stat(path).st_mode)
    if mode != 0o700:
        os.chmod(path, 0o700)  # an older openvaala's 0755, or a umask that left us without access


def make_private(path: str | os.PathLike[str]) -> None:
    """Closes an existing file to other users (0600); a missing one is left missing."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISREG(info.st_mode) and info.st_mode & 0o077:
        os.chmod(path, stat.S_IMODE(info.st_mode) & 0o700)


def write_private(path: str | os.PathLike[str], text: str) -> None:
    """Replaces the file with `text`, made 0600 from its first byte (a rename: readers see either)."""
    temporary = f"{os.fspath(path)}.{os.getpid()}"
    with open(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600), "w") as out:
        out.write(text)
    os.replace(temporary, path)
