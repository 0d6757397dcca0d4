"""Where each key of a TOML file is: a line-oriented scan good enough to point an error at its line.

tomllib keeps no positions, so this follows table headers (`[[models]]` counts elements) and
`key = value` lines, skipping the continuation lines of multi-line strings and arrays. A wire path
the scan does not know falls back to its nearest known parent (an inline table's key, the header).
"""

from __future__ import annotations

import ast
import re

import attrs

KeyPath = tuple[str | int, ...]

# `.name`, `[3]` (a list index) or `['KEY']` (a dict key, as the converter writes it with repr)
_WIRE_PART = re.compile(r"""\.([^.\[]+)|\[(\d+)\]|\[('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")\]""")


def parse_wire_path(path: str) -> KeyPath:
    """`$.models[1].env['A']` -> `("models", 1, "env", "A")`."""
    parts: list[str | int] = []
    for name, index, key in _WIRE_PART.findall(path.removeprefix("$")):
        parts.append(name or (int(index) if index else str(ast.literal_eval(key))))
    return tuple(parts)


def line_of(lines: dict[KeyPath, int], wire_path: str) -> int | None:
    path = parse_wire_path(wire_path)
    while path:
        if path in lines:
            return lines[path]
        path = path[:-1]
    return None


@attrs.define
class _State:
    depth: int = 0  # open `[` / `{` of a value
    multiline: str | None = None  # the delimiter of an open multi-line string

    @property
    def inside_value(self) -> bool:
        return self.depth > 0 or self.multiline is not None


def key_lines(text: str) -> dict[KeyPath, int]:
    """Every key path (array elements as indices) to the 1-based line that defines it."""
    lines: dict[KeyPath, int] = {}
    arrays: dict[KeyPath, int] = {}  # an array of tables -> index of its current element
    table: KeyPath = ()
    state = _State()
    for number, raw in enumerate(text.splitlines(), start=1):
        if state.inside_value:
            _scan_value(raw, state)
            continue
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("[["):
            parts = _split_key(_header(stripped, 2, "]]"))
            array = _resolve(parts[:-1], arrays) + tuple(parts[-1:])
            arrays[array] = arrays.get(array, -1) + 1
            table = (*array, arrays[array])
            lines.setdefault(array, number)
            lines[table] = number
        elif stripped.startswith("["):
            table = _resolve(_split_key(_header(stripped, 1, "]")), arrays)
            lines.setdefault(table, number)
        else:
            equals = _find(stripped, "=")
            if equals < 0:
                continue
            key = (*table, *_split_key(stripped[:equals]))
            for end in range(len(table) + 1, len(key) + 1):
                lines.setdefault(key[:end], number)
            _scan_value(stripped[equals + 1 :], state)
    return lines


def _resolve(parts: list[str], arrays: dict[KeyPath, int]) -> KeyPath:
    """A dotted header name: each array of tables on the way means its current element."""
    path: KeyPath = ()
    for part in parts:
        path = (*path, part)
        if path in arrays:
            path = (*path, arrays[path])
    return path


def _find(text: str, needle: str) -> int:
    """The first `needle` outside quotes, or -1 (a quoted key may hold `=` or `]`)."""
    quote: str | None = None
    for i, char in enumerate(text):
        if quote:
            quote = None if char == quote else quote
        elif char in "\"'":
            quote = char
        elif text.startswith(needle, i):
            return i
    return -1


def _header(line: str, start: int, close: str) -> str:
    end = _find(line, close)
    return line[start : end if end >= 0 else len(line)]


def _split_key(key: str) -> list[str]:
    """`a."b.c".d` -> `["a", "b.c", "d"]`."""
    parts: list[str] = []
    current = ""
    quote: str | None = None
    for char in key:
        if quote:
            if char == quote:
                quote = None
            else:
                current += char
        elif char in "\"'":
            quote = char
        elif char == ".":
            parts.append(current.strip())
            current = ""
        else:
            current += char
    parts.append(current.strip())
    return parts


def _scan_value(text: str, state: _State) -> None:
    """Tracks open brackets and multi-line strings across lines; stops at a comment."""
    i = 0
    while i < len(text):
        if state.multiline:
            end = _multiline_end(text, i, state.multiline)
            if end < 0:
                return
            i, state.multiline = end, None
            continue
        char = text[i]
        if char == "#":
            return
        if text.startswith('"""', i) or text.startswith("'''", i):
            state.multiline = text[i : i + 3]
            i += 3
        elif char in "\"'":
            i = _string_end(text, i + 1, char)
        else:
            if char in "[{":
                state.depth += 1
            elif char in "]}":
                state.depth -= 1
            i += 1


def _string_end(text: str, i: int, quote: str) -> int:
    while i < len(text):
        if text[i] == "\\" and quote == '"':
            i += 2
        elif text[i] == quote:
            return i + 1
        else:
            i += 1
    return i


def _multiline_end(text: str, i: int, delimiter: str) -> int:
    while i < len(text):
        if text[i] == "\\" and delimiter == '"""':
            i += 2
        elif text.startswith(delimiter, i):
            end = i + 3
            while end < len(text) and text[end] == delimiter[0]:  # `""""` closes after one more quote
                end += 1
            return end
        else:
            i += 1
    return -1
