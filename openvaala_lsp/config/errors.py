"""`ConfigError`: one problem in one configuration file, located for a human."""

from __future__ import annotations

from pathlib import Path

import attrs


@attrs.frozen
class ConfigError:
    path: Path
    line: int | None  # 1-based; None when the problem has no place in the file
    field: str | None  # a wire path (`$.models[1].contextWindow`) or a front matter key; None: the whole file
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else str(self.path)
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


def split_problem(problem: str) -> tuple[str, str]:
    """`"<message> @ $.a.b"` (the converter's format) -> (`$.a.b`, `<message>`)."""
    message, sep, path = problem.rpartition(" @ ")
    return (path, message) if sep else ("$", problem)
