"""Markdown with YAML front matter between `---` lines, as Claude Code and Agent Skills write it.

Real agent files often hold YAML that a strict parser refuses (an unquoted description with
`Examples: <example>` in it), so when PyYAML fails a lenient `key: value` reading takes over.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import attrs
import yaml

_KEY = re.compile(r"^([A-Za-z0-9_-]+)\s*:(.*)$")
_BLOCK = {"|": "\n", "|-": "\n", ">": " ", ">-": " "}


@attrs.frozen
class FrontMatter:
    data: dict[str, Any]
    body: str
    lines: dict[str, int]  # front matter key -> 1-based line in the file
    error: str | None = None  # set: the front matter could not be read; `data` is empty


def _is_fence(line: str) -> bool:
    return line.strip() == "---"


def parse(text: str) -> FrontMatter:
    lines = text.removeprefix("\ufeff").splitlines(keepends=True)
    if not lines or not _is_fence(lines[0]):
        return FrontMatter(data={}, body=text, lines={})
    end = next((i for i in range(1, len(lines)) if _is_fence(lines[i])), None)
    if end is None:
        return FrontMatter(data={}, body="", lines={}, error="front matter is not closed by a '---' line")
    head = "".join(lines[1:end])
    key_lines: dict[str, int] = {}
    for number, line in enumerate(lines[1:end], start=2):
        match = _KEY.match(line)
        if match:
            key_lines.setdefault(match[1], number)

    try:
        data: Any = yaml.safe_load(head)
    except yaml.YAMLError:
        data = _lenient(head)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return FrontMatter(data={}, body="", lines={}, error="front matter must be `key: value` lines")
    return FrontMatter(data={str(k): v for k, v in data.items()}, body="".join(lines[end + 1 :]), lines=key_lines)


def read(path: Path, *, with_body: bool = True) -> FrontMatter:
    """Without the body, reading stops at the closing fence (a skill's body stays on disk)."""
    if with_body:
        return parse(path.read_text(encoding="utf-8"))
    head: list[str] = []
    with path.open(encoding="utf-8") as file:
        for line in file:
            head.append(line)
            if len(head) == 1 and not _is_fence(line.removeprefix("\ufeff")):
                break
            if len(head) > 1 and _is_fence(line):
                break
    return attrs.evolve(parse("".join(head)), body="")


def _lenient(text: str) -> dict[str, Any]:
    """Top-level `key: value` lines, `- item` lists and indented continuation lines."""
    data: dict[str, Any] = {}
    key: str | None = None
    joiner = " "
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _KEY.match(line)
        if match:
            key, value = match[1], match[2].strip()
            joiner = _BLOCK.get(value, " ")
            data[key] = "" if value in _BLOCK else (_unquote(value) if value else None)
        elif key is not None and stripped.startswith("- ") and not isinstance(data[key], str):
            data[key] = [*(data[key] or []), _unquote(stripped[2:].strip())]
        elif key is not None and isinstance(data[key], str | None):
            data[key] = joiner.join(filter(None, [data[key], stripped]))
    return data


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value
