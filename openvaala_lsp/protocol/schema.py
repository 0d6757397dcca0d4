"""JSON Schema (2020-12) of the wire, generated from the attrs classes of the method registry.

The schemas describe exactly what `converter` produces and accepts, so each type has up to two
variants. *Output* (what the server sends: results, notifications, params of server requests): a
field is absent only when its value is None (fields whose default is None), every other field is
always present. *Input* (what the server reads: request params, results of server requests): a
field is required iff it has no default; `null` is accepted where the type admits None and means
absent. Where both variants of a type are used and differ, the input one is named `<Type>Input`.
Unknown keys are ignored on input, so no object sets `additionalProperties: false`.

    python -m openvaala_lsp.protocol.schema --write   # regenerate schemas/
    python -m openvaala_lsp.protocol.schema --check   # exit 1 listing stale, missing, extra files
"""

from __future__ import annotations

import argparse
import datetime as dt
import enum
import functools
import inspect
import json
import operator
import sys
import types
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

import attrs

from openvaala_lsp.protocol import PROTOCOL_VERSION, api, errors, events
from openvaala_lsp.protocol.codes import CODES
from openvaala_lsp.protocol.converter import unstructure, wire_name
from openvaala_lsp.protocol.methods import NOTIFICATIONS, PREFIX, REQUESTS, SERVER_REQUESTS

DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMAS_DIR = Path(__file__).resolve().parents[2] / "schemas"
Mode = Literal["input", "output"]
_Key = tuple[Any, str]  # (type, mode)

WIRE_RULES = (
    "Shared definitions of the openvaala editor protocol; `x-methods` maps each method to its params and result "
    "definitions. Output types (what the server sends) omit a field only when its value is None; every other field is "
    "always present. Input types (`<Type>Input` where they differ) require exactly the fields without a default and "
    "accept null for optional fields. Unknown keys are ignored on input, so objects never forbid additional "
    "properties. Times are RFC 3339 UTC strings with milliseconds and `Z`."
)
_SCALARS: dict[Any, str] = {str: "string", int: "integer", bool: "boolean", float: "number"}
_UNION_NAMES: dict[Any, str] = {events.ConversationEvent: "ConversationEvent", events.SessionEvent: "SessionEvent"}
# Range and format checks of attrs validators, until the fields carry them as metadata["schema"]
_VALIDATOR_SCHEMAS: dict[Any, dict[str, Any]] = {
    api._check_limit: {"minimum": 1, "maximum": api.MAX_LIMIT, "default": api.DEFAULT_LIMIT},
    api._check_query_limit: {"minimum": 1, "maximum": api.MAX_QUERY_LIMIT, "default": api.DEFAULT_QUERY_LIMIT},
    api._check_query_timeout: {
        "minimum": 1,
        "maximum": api.MAX_QUERY_TIMEOUT_MS,
        "default": api.DEFAULT_QUERY_TIMEOUT_MS,
    },
    api._check_environment: {"items": {"pattern": "^[^=]+="}},
}


def _is_union(tp: Any) -> bool:
    return get_origin(tp) in (Union, types.UnionType)


def _describe(cls: Any) -> dict[str, str]:
    doc = (get_origin(cls) or cls).__dict__.get("__doc__")
    return {"description": " ".join(inspect.cleandoc(doc).split())} if doc else {}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    if isinstance(schema.get("type"), str):
        return {**schema, "type": [schema["type"], "null"]}
    return {"anyOf": [schema, {"type": "null"}]}


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        old = merged.get(key)
        merged[key] = _merge(old, value) if isinstance(old, dict) and isinstance(value, dict) else value
    return merged


def _bind(hint: Any, bound: dict[Any, Any]) -> Any:
    """Substitutes the type variables of a generic class: `list[T]` -> `list[Turn]`."""
    if isinstance(hint, TypeVar):
        return bound[hint]
    params = getattr(hint, "__parameters__", ()) if bound else ()
    return hint[tuple(bound[p] for p in params)] if params else hint


def _default(field: attrs.Attribute[Any]) -> Any:
    factory = getattr(field.default, "factory", None)
    return unstructure(factory() if callable(factory) else field.default)


class _Generator:
    """Collects type bodies keyed by (type, mode); refs stay placeholders until names are final."""

    def __init__(self) -> None:
        self.bodies: dict[_Key, dict[str, Any]] = {}
        self.names: dict[_Key, str] = {}

    def ref(self, tp: Any, mode: Mode) -> dict[str, Any]:
        key: _Key = (tp, "output" if isinstance(tp, type) and issubclass(tp, enum.Enum) else mode)
        if key not in self.bodies:
            self.bodies[key] = {}
            self.bodies[key] = self._body(tp, mode)
        return {"$ref": key}

    def schema(self, tp: Any, mode: Mode) -> dict[str, Any]:
        if tp is Any:
            return {}
        if tp in _SCALARS:
            return {"type": _SCALARS[tp]}
        if tp is dt.datetime:
            return {"type": "string", "format": "date-time"}
        origin, args = get_origin(tp), get_args(tp)
        if origin is Literal:
            return {"const": args[0]} if len(args) == 1 else {"enum": list(args)}
        if origin is list:
            return {"type": "array", "items": self.schema(args[0], mode)}
        if origin is dict:
            return {"type": "object", "additionalProperties": self.schema(args[1], mode)}
        if _is_union(tp):
            rest = tuple(a for a in args if a is not types.NoneType)
            if len(rest) < len(args):
                return _nullable(self.schema(functools.reduce(operator.or_, rest), mode))
            if tp in _UNION_NAMES:
                return self.ref(tp, mode)
            return self._union(args, mode)
        if attrs.has(tp) or (isinstance(tp, type) and issubclass(tp, enum.Enum)):
            return self.ref(tp, mode)
        raise TypeError(f"no JSON Schema for {tp!r}")

    def _union(self, args: tuple[Any, ...], mode: Mode) -> dict[str, Any]:
        tagged = all(attrs.has(a) and "type" in attrs.fields_dict(a) for a in args)
        members = [self.schema(a, mode) for a in args]
        return {"oneOf": members, "description": "Discriminated by `type`."} if tagged else {"anyOf": members}

    def _body(self, tp: Any, mode: Mode) -> dict[str, Any]:
        if _is_union(tp):
            return self._union(get_args(tp), mode)
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            return {"type": "string", "enum": [m.value for m in tp], **_describe(tp)}
        cls = get_origin(tp) or tp
        bound = dict(zip(getattr(cls, "__parameters__", ()), get_args(tp), strict=True))
        hints = get_type_hints(cls)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for field in attrs.fields(cls):
            hint = _bind(hints[field.name], bound)
            optional = _is_union(hint) and types.NoneType in get_args(hint)
            if optional:
                hint = functools.reduce(operator.or_, [a for a in get_args(hint) if a is not types.NoneType])
            schema = self.schema(hint, mode)
            if mode == "input":
                schema = _nullable(schema) if optional else schema
                if field.default is attrs.NOTHING:
                    required.append(wire_name(field.name))
                elif field.default is not None:
                    schema["default"] = _default(field)
            elif field.default is not None:
                required.append(wire_name(field.name))
                schema = _nullable(schema) if optional else schema  # a None value would be sent as null
            extra = _merge(_VALIDATOR_SCHEMAS.get(field.validator, {}), field.metadata.get("schema", {}))
            properties[wire_name(field.name)] = _merge(schema, extra)
        body: dict[str, Any] = {"type": "object", "properties": properties, **_describe(tp)}
        return {**body, "required": required} if required else body

    def name(self, key: _Key) -> str:
        if key not in self.names:
            tp, mode = key
            origin: Any = get_origin(tp)
            if tp in _UNION_NAMES:
                name = _UNION_NAMES[tp]
            elif origin is not None:  # Page[Turn, str] -> TurnPage
                name = get_args(tp)[0].__name__ + origin.__name__
            else:
                name = tp.__name__
            output = (tp, "output")
            if mode == "input" and output in self.bodies:
                if self.resolve(self.bodies[key]) != self.resolve(self.bodies[output]):
                    name += "Input"
            self.names[key] = name
        return self.names[key]

    def resolve(self, value: Any) -> Any:
        if isinstance(value, dict):
            ref = value.get("$ref")
            if isinstance(ref, tuple):
                return {**value, "$ref": "#/$defs/" + self.name(ref)}
            return {k: self.resolve(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        return value

    def defs(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, body in self.bodies.items():
            name, resolved = self.name(key), self.resolve(body)
            if out.setdefault(name, resolved) != resolved:
                raise ValueError(f"two different types are named {name}")
        return out


def _reachable(root: Any, defs: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    todo = [root]
    while todo:
        value = todo.pop()
        if isinstance(value, dict):
            ref = value.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] not in found:
                found[ref[8:]] = defs[ref[8:]]
                todo.append(defs[ref[8:]])
            todo.extend(value.values())
        elif isinstance(value, list):
            todo.extend(value)
    return found


_ERROR_NOTES = {
    "internal": "a bug in the server (it logs the details), or a limit it ran into (a query's time limit, the "
    "database's memory); the message names what failed (never a traceback)",
    "serverNotInitialized": "a request before `initialize`",
    "parseError": "the body is not JSON (NaN and Infinity are not JSON), or its framing is broken; `id` is null "
    "unless a top-level id could be read from the body's first bytes",
    "invalidRequest": "not a JSON-RPC 2.0 request: method not a string, id neither a string nor an integer "
    "(answered with id null), a batch",
    "methodNotFound": "no such method in this build",
    "requestCancelled": "cancelled with `$/cancelRequest`",
    "messageTooLarge": "a message over the limit (64 MiB unless OPENVAALA_MAX_MESSAGE_BYTES says otherwise; "
    "refused without reading it into memory), nesting deeper than 100 levels, or a field over its limit",
    errors.NotFound.kind: "a turn, item, input, agent, model or executor that does not exist",
    errors.InvalidState.kind: "e.g. steering when no turn runs, withdrawing an input already taken",
    errors.WorkspaceDenied.kind: "a directory outside the workspace folders or that does not exist",
    errors.InvalidParams.kind: 'malformed params; `data.errors` lists every problem as "<problem> @ $.path"',
}


def _errors_schema() -> dict[str, Any]:
    by_kind = {e.kind: e.default_message for e in errors.ALL_ERRORS}
    codes = CODES
    variants = []
    for kind, code in sorted(codes.items(), key=lambda kv: -kv[1]):
        data: dict[str, Any] = {"properties": {"kind": {"const": kind}}}
        if kind == errors.InvalidParams.kind:
            data["required"] = ["kind", "errors"]
        variants.append(
            {
                "title": kind,
                "description": _ERROR_NOTES.get(kind) or by_kind[kind],
                "properties": {"code": {"const": code}, "data": data},
            }
        )
    return {
        "$schema": DIALECT,
        "title": "openvaala JSON-RPC error (the `error` member of a response)",
        "description": "Every error carries `data.kind`, fixed per code. `message` is for humans (at most 1000 "
        "characters; a bad value is quoted by its first 200); match on `data.kind` (or `code`). invalidParams "
        'also carries `data.errors`: every problem as "<problem> @ $.path" with wire field names (at most 20).',
        "type": "object",
        "required": ["code", "message", "data"],
        "properties": {
            "code": {"type": "integer"},
            "message": {"type": "string"},
            "data": {"$ref": "#/$defs/ErrorData"},
        },
        "oneOf": variants,
        "x-codes": codes,
        "$defs": {
            "ErrorData": {
                "type": "object",
                "required": ["kind"],
                "properties": {
                    "kind": {"type": "string", "enum": sorted(codes)},
                    "errors": {"type": "array", "items": {"type": "string"}},
                },
            }
        },
    }


def generate() -> dict[str, str]:
    """Every generated file under `schemas/`: relative path -> text."""
    gen = _Generator()
    roots: dict[str, tuple[str, Any]] = {}  # relative path -> (title, placeholder root)
    rows: list[tuple[dict[str, Any], dict[str, _Key]]] = []  # methods.json entry, its types
    specs = [("requests", "clientToServer", s) for s in REQUESTS.values()]
    specs += [("serverRequests", "serverToClient", s) for s in SERVER_REQUESTS.values()]
    for folder, direction, spec in specs:
        short = spec.method.removeprefix(PREFIX)
        params_mode: Mode = "input" if direction == "clientToServer" else "output"
        result_mode: Mode = "output" if direction == "clientToServer" else "input"
        roots[f"{folder}/{short}.params.json"] = (f"{spec.method} params", gen.ref(spec.params, params_mode))
        roots[f"{folder}/{short}.result.json"] = (f"{spec.method} result", gen.ref(spec.result, result_mode))
        entry: dict[str, Any] = {"method": spec.method, "direction": direction, "kind": "request"}
        entry |= {"params": {"$ref": f"{folder}/{short}.params.json"}}
        entry |= {"result": {"$ref": f"{folder}/{short}.result.json"}}
        rows.append((entry, {"params": (spec.params, params_mode), "result": (spec.result, result_mode)}))
    for method, params in NOTIFICATIONS.items():
        short = method.removeprefix(PREFIX)
        roots[f"notifications/{short}.json"] = (f"{method} params", gen.ref(params, "output"))
        entry = {"method": method, "direction": "serverToClient", "kind": "notification"}
        rows.append((entry | {"params": {"$ref": f"notifications/{short}.json"}}, {"params": (params, "output")}))
    defs = gen.defs()
    files: dict[str, Any] = {}
    for path, (title, placeholder) in roots.items():
        root = gen.resolve(placeholder)
        files[path] = {"$schema": DIALECT, "title": title, **root, "$defs": _reachable(root, defs)}
    table = [entry | {k + "Type": gen.name(key) for k, key in keys.items()} for entry, keys in rows]
    index = {entry["method"]: {k: "#/$defs/" + gen.name(key) for k, key in keys.items()} for entry, keys in rows}
    files["openvaala.schema.json"] = {
        "$schema": DIALECT,
        "title": f"openvaala editor protocol {PROTOCOL_VERSION}",
        "description": WIRE_RULES,
        "$defs": defs,
        "x-methods": index,
    }
    files["methods.json"] = {"protocolVersion": PROTOCOL_VERSION, "methods": table, "errors": {"$ref": "errors.json"}}
    files["errors.json"] = _errors_schema()
    return {path: json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n" for path, doc in files.items()}


def diff(root: Path = SCHEMAS_DIR) -> list[str]:
    """Problems between `generate()` and the files under `root` (hand-written non-JSON files are left alone)."""
    expected = generate()
    problems = []
    for rel, text in sorted(expected.items()):
        path = root / rel
        if not path.is_file():
            problems.append(f"missing: {rel}")
        elif path.read_text(encoding="utf-8") != text:
            problems.append(f"stale: {rel}")
    problems += [f"extra: {rel}" for rel in _json_files(root) if rel not in expected]
    return problems


def _json_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.json")) if root.is_dir() else []


def write(root: Path = SCHEMAS_DIR) -> None:
    expected = generate()
    for rel in _json_files(root):
        if rel not in expected:
            (root / rel).unlink()
    for rel, text in expected.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m openvaala_lsp.protocol.schema", description=__doc__)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true", help="regenerate the schema files")
    action.add_argument("--check", action="store_true", help="exit 1 if any file is stale, missing or extra")
    parser.add_argument("--dir", type=Path, default=SCHEMAS_DIR, help="the schemas folder (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.write:
        write(args.dir)
        return 0
    problems = diff(args.dir)
    for problem in problems:
        sys.stderr.write(problem + "\n")
    if problems:
        sys.stderr.write("run: python -m openvaala_lsp.protocol.schema --write\n")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
