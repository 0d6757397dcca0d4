"""The little of LSP an openvaala server speaks: `initialize` (its params as far as they matter
here, and a result that advertises the protocol in `capabilities.experimental.openvaala`),
`shutdown`, `exit`, `$/cancelRequest` and workspace folders (file URIs as paths)."""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Iterable
from typing import Any

import attrs

from openvaala_lsp import __version__
from openvaala_lsp.fieldrepr import FieldRepr
from openvaala_lsp.framing import INVALID_PARAMS
from openvaala_lsp.protocol import PROTOCOL_VERSION
from openvaala_lsp.protocol.methods import NOTIFICATIONS
from openvaala_lsp.server.peer import error
from openvaala_lsp.tools import sandbox

INITIALIZE = "initialize"
SHUTDOWN = "shutdown"
EXIT = "exit"
CANCEL_REQUEST = "$/cancelRequest"
FOLDERS_CHANGED = "workspace/didChangeWorkspaceFolders"
SERVER_NAME = "openvaala-lsp"


@attrs.frozen
class InitializeParams(FieldRepr):
    folders: list[tuple[str, str]]  # (uri, name) of workspaceFolders
    root: str | None  # rootUri as a path, else rootPath
    can_list_folders: bool  # capabilities.workspace.workspaceFolders
    options: Any  # initializationOptions


def initialize_params(params: Any) -> InitializeParams:
    """What `initialize` tells this server; invalidParams naming the field that is not as LSP says."""
    problems: list[str] = []

    def expect(value: Any, kinds: tuple[type, ...], what: str, path: str) -> Any:
        if value is not None and (not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds)):
            problems.append(f"expected {what} @ {path}")
            return None
        return value

    if not isinstance(params, dict):
        raise error(
            INVALID_PARAMS, "invalid params for initialize: expected object @ $", errors=["expected object @ $"]
        )
    expect(params.get("processId"), (int,), "integer or null", "$.processId")
    capabilities = expect(params.get("capabilities"), (dict,), "object", "$.capabilities") or {}
    workspace = expect(capabilities.get("workspace"), (dict,), "object", "$.capabilities.workspace") or {}
    can_list = workspace.get("workspaceFolders") is True
    folders: list[tuple[str, str]] = []
    for index, folder in enumerate(
        expect(params.get("workspaceFolders"), (list,), "array or null", "$.workspaceFolders") or []
    ):
        where = f"$.workspaceFolders[{index}]"
        if not isinstance(folder, dict):
            problems.append(f"expected object @ {where}")
            continue
        uri, name = folder.get("uri"), folder.get("name")
        if not isinstance(uri, str):
            problems.append(f"expected string @ {where}.uri")
        elif not isinstance(name, str):
            problems.append(f"expected string @ {where}.name")
        else:
            folders.append((uri, name))
    root_uri = expect(params.get("rootUri"), (str,), "string or null", "$.rootUri")
    root_path = expect(params.get("rootPath"), (str,), "string or null", "$.rootPath")
    if problems:
        raise error(INVALID_PARAMS, f"invalid params for initialize: {'; '.join(problems)}", errors=problems)
    root = (fs_path(root_uri) if root_uri else None) or root_path or None
    return InitializeParams(folders, root, can_list, params.get("initializationOptions"))


def initialize_result(methods: Iterable[str]) -> dict[str, Any]:
    state = sandbox.state()  # probed as the runtime starts, so usually known by now
    return {
        "capabilities": {
            "positionEncoding": "utf-16",
            "workspace": {"workspaceFolders": {"supported": True, "changeNotifications": True}},
            "experimental": {
                "openvaala": {
                    "protocolVersion": PROTOCOL_VERSION,
                    "serverVersion": __version__,
                    "methods": sorted(methods),
                    "notifications": sorted(NOTIFICATIONS),
                    "sandbox": {"usable": state.usable, "reason": state.reason},
                }
            },
        },
        "serverInfo": {"name": SERVER_NAME, "version": __version__},
    }


def fs_path(uri: str) -> str | None:
    """The path of a `file:` URI; None for any other scheme."""
    parsed = urllib.parse.urlparse(uri)
    if parsed.scheme != "file":
        return None
    path = urllib.parse.unquote(parsed.path)
    return os.path.normpath(path) if path else None


def folder_list(answer: Any) -> list[tuple[str, str]]:
    """(uri, name) of a list of workspace folders (a `workspace/workspaceFolders` answer, the added or
    removed ones of a change), skipping what is not a folder."""
    if not isinstance(answer, list):
        return []
    return [
        (folder["uri"], str(folder.get("name") or folder["uri"]))
        for folder in answer
        if isinstance(folder, dict) and isinstance(folder.get("uri"), str)
    ]
