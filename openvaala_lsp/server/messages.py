"""What the server checks of each message before it handles it: that it is JSON, a JSON-RPC 2.0
message within the limits, with text that JSON allows but UTF-8 (and so DuckDB and the OS) does not.

`check` never raises: a message it refuses becomes an error response with `data.kind`.
"""

from __future__ import annotations

import re
from typing import Any

from openvaala_lsp.wire import framing
from openvaala_lsp.wire.framing import INVALID_PARAMS, INVALID_REQUEST, MESSAGE_TOO_LARGE, PARSE_ERROR

PREFIX = "openvaala/"
MAX_QUOTED = 200  # characters of a bad value quoted back in an error message
MAX_PROBLEMS = 20
# a \u escape of a UTF-16 surrogate: only then can a decoded string hold a lone one
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def quote(value: Any) -> str:
    """repr of a bad value for an error message, cut to its first MAX_QUOTED characters."""
    text = repr(value[: MAX_QUOTED + 1] if isinstance(value, (str, bytes)) else value)
    return text if len(text) <= MAX_QUOTED else text[:MAX_QUOTED] + "…"


def check(body: bytes) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(message, None) for a message to handle, with absent or null `params` made `{}` for
    openvaala methods; (None, response) for one answered with an error; (None, None) for one that
    cannot be answered (a malformed response or notification) and is dropped."""
    try:
        data = framing.decode(body)
    except RecursionError:
        return None, _refuse(body, MESSAGE_TOO_LARGE, f"nested deeper than {framing.MAX_DEPTH} levels")
    except ValueError as exc:
        return None, _refuse(body, PARSE_ERROR, f"parse error: {str(exc)[:MAX_QUOTED]}")
    if isinstance(data, list):
        return None, framing.error_response(None, INVALID_REQUEST, "invalid request: batches are not supported")
    if not isinstance(data, dict):
        return None, framing.error_response(None, INVALID_REQUEST, "invalid request: expected a JSON-RPC 2.0 object")
    has_id = "id" in data
    msg_id = data.get("id")
    if has_id and (isinstance(msg_id, bool) or not isinstance(msg_id, (int, str))):
        return None, framing.error_response(None, INVALID_REQUEST, "invalid request: id must be a string or an integer")
    reply_id = msg_id if has_id else None
    if data.get("jsonrpc") != "2.0":
        return None, _answer(has_id, reply_id, INVALID_REQUEST, 'invalid request: "jsonrpc" must be "2.0"')
    if "method" not in data:
        if has_id and ("result" in data or isinstance(data.get("error"), dict)):
            return data, None  # a client's answer to one of our requests
        return None, framing.error_response(reply_id, INVALID_REQUEST, "invalid request: no method, result or error")
    method = data["method"]
    if not isinstance(method, str):
        return None, _answer(has_id, reply_id, INVALID_REQUEST, "invalid request: method must be a string")
    if framing.too_deep(body, data):
        message = f"nested deeper than {framing.MAX_DEPTH} levels"
        return None, _answer(has_id, reply_id, MESSAGE_TOO_LARGE, message)
    params = data.get("params")
    if _SURROGATE_ESCAPE.search(body) and (problems := lone_surrogates(params, "$")):
        return None, params_error(reply_id, method, problems) if has_id else None
    if params is None:
        data["params"] = {} if method.startswith(PREFIX) else None
    elif method.startswith(PREFIX) and not isinstance(params, dict):
        return None, params_error(reply_id, method, ["expected object @ $"]) if has_id else None
    return data, None


def _refuse(body: bytes, error: tuple[str, int], message: str) -> dict[str, Any]:
    # the body is no JSON we can read: the id, if any, comes from a scan of its first bytes
    return framing.error_response(framing.top_level_id(body[: framing.ID_SCAN_BYTES]), error, message)


def _answer(has_id: bool, msg_id: Any, error: tuple[str, int], message: str, **data: Any) -> dict[str, Any] | None:
    """An error response for a request; nothing for a notification, which has no one to answer."""
    return framing.error_response(msg_id, error, message, **data) if has_id else None


def params_error(msg_id: Any, method: str, problems: list[str]) -> dict[str, Any]:
    problems = bounded_problems(problems)
    message = f"invalid params for {quote(method)[1:-1]}: {'; '.join(problems)}"
    return framing.error_response(msg_id, INVALID_PARAMS, message, errors=problems)


def lone_surrogates(value: Any, path: str) -> list[str]:
    """Problems for every string (or key) in `value` holding a lone UTF-16 surrogate."""
    problems: list[str] = []
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack and len(problems) < MAX_PROBLEMS:
        node, where = stack.pop()
        if isinstance(node, str):
            if not _utf8(node):
                problems.append(f"invalid Unicode: a lone surrogate in a string @ {where}")
        elif isinstance(node, dict):
            for key, child in node.items():
                if not _utf8(key):
                    problems.append(f"invalid Unicode: a lone surrogate in a key @ {where}")
                else:
                    stack.append((child, f"{where}.{key}"))
        elif isinstance(node, list):
            stack.extend((child, f"{where}[{index}]") for index, child in enumerate(node))
    return sorted(problems)


def _utf8(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def bounded_problems(problems: list[str]) -> list[str]:
    """At most MAX_PROBLEMS problems, each cut to a readable length."""
    kept = [p if len(p) <= 2 * MAX_QUOTED else p[: 2 * MAX_QUOTED] + "…" for p in problems[:MAX_PROBLEMS]]
    if len(problems) > MAX_PROBLEMS:
        kept.append(f"… and {len(problems) - MAX_PROBLEMS} more")
    return kept
