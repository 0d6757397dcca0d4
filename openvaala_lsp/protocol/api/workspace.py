"""Workspace directories and terminal workspaces."""

from __future__ import annotations

import attrs

from openvaala_lsp.model import (
    WorkspaceFolder,
    check_path,
)
from openvaala_lsp.protocol.api.common import (
    _check_environment,
)


@attrs.define(kw_only=True)
class GetWorkspaceDirectoriesParams:
    base_directory: str | None = attrs.field(default=None, validator=check_path)
    directory: str | None = attrs.field(default=None, validator=check_path)
    executor_id: str | None = None


@attrs.define(kw_only=True)
class WorkspaceDirectories:
    base_directory: str
    directory: str
    entries: list[WorkspaceFolder]
    workspace_folders: list[WorkspaceFolder]


@attrs.define(kw_only=True)
class ResolveWorkspaceDirectoryParams:
    directory: str = attrs.field(validator=check_path)
    base_directory: str | None = attrs.field(default=None, validator=check_path)
    executor_id: str | None = None


@attrs.define(kw_only=True)
class ResolveWorkspaceDirectoryResult:
    directory: str


@attrs.define(kw_only=True)
class OpenTerminalWorkspaceParams:
    directory: str | None = attrs.field(default=None, validator=check_path)
    environment: list[str] | None = attrs.field(default=None, validator=_check_environment)
    executor_id: str | None = None


@attrs.define(kw_only=True)
class Workspace:
    root: str
    environment: list[str]


@attrs.define(kw_only=True)
class TerminalWorkspace:
    directory: str
    executor_id: str
    workspace: Workspace
