"""A running turn's checkpoints: the workspace folders it may write are snapshotted before its first
call that may change files, and again after each such call. The difference is the call's
`fileChanges` (a shell command's too, which no tool reports by itself), and the turn's diff so far
is announced (`turnDiffUpdated`). The snapshots are kept as refs of each folder's shadow repository
(`refs/openvaala/<conversation>/<turn>/before|after`), so the storage knows nothing of them.

Checkpoints never fail a call: git missing, or failing, leaves the turn without them (logged)."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from typing import Any

import attrs

from openvaala_lsp.checkpoints import diffs
from openvaala_lsp.checkpoints.shadow import Checkpoint, ShadowRepo
from openvaala_lsp.checkpoints.store import CheckpointStore
from openvaala_lsp.model import FileChange
from openvaala_lsp.protocol import events
from openvaala_lsp.tools.base import Tool, ToolContext, ToolOutput

logger = logging.getLogger(__name__)

# tools that only read: no checkpoint around them (every other tool, an MCP server's or a
# sub-agent's included, may change files)
READ_ONLY_TOOLS = frozenset({"read_file", "glob", "grep", "skill"})


def changes_files(tool_name: str) -> bool:
    return tool_name not in READ_ONLY_TOOLS


def outermost(folders: list[str]) -> list[str]:
    """The folders not inside another of them (a folder inside another is snapshotted with it)."""
    real = sorted({os.path.realpath(folder) for folder in folders})
    kept: list[str] = []
    for folder in real:
        if not any(folder.startswith(parent.rstrip(os.sep) + os.sep) for parent in kept):
            kept.append(folder)
    return kept


class TurnCheckpoints:
    def __init__(
        self,
        store: CheckpointStore,
        conversation_id: str,
        turn_id: str,
        folders: list[str],
        publish: Callable[[Any], None],
    ) -> None:
        self.conversation_id = conversation_id
        self.turn_id = turn_id
        self.repos = [store.repo(folder) for folder in outermost(folders)]
        self.publish = publish
        self.before: dict[str, Checkpoint] | None = None  # by folder
        self.last: dict[str, Checkpoint] = {}
        self.dirty = False  # a call ran since the last snapshot
        self.broken = False

    async def before_call(self) -> None:
        """Before a call that may change files: the turn's first checkpoint, once."""
        if self.broken:
            return
        if self.before is None:
            taken = await self._snapshot_all("before")
            if taken is None:
                return
            self.before = taken
            self.last = dict(taken)
        self.dirty = True

    async def after_call(self, *, announce: bool = True) -> list[FileChange] | None:
        """After such a call: what it changed (None: checkpoints are off); the turn's diff so far is
        announced when the call changed something (and `announce`)."""
        if self.broken or self.before is None:
            return None
        self.dirty = False
        taken = await self._snapshot_all("after")
        if taken is None:
            return None
        changes: list[FileChange] = []
        summary: list[FileChange] = []
        try:
            for repo in self.repos:
                folder = repo.work_tree
                old, new = self.last[folder], taken[folder]
                if old.tree != new.tree or old.skipped != new.skipped:
                    changes += await asyncio.to_thread(diffs.diff, repo, old, new)
            first = self.last == self.before  # the turn's first change: its diff so far is this call's
            self.last = taken
            if changes and announce and first:
                summary = changes
            elif changes and announce:
                for repo in self.repos:
                    before, now = self.before[repo.work_tree], taken[repo.work_tree]
                    summary += await asyncio.to_thread(diffs.diff, repo, before, now, patches=False)
        except Exception:
            self._fail("diffing")
            return None
        if changes and announce:
            files = [
                events.FileChangeSummary(
                    path=change.path,
                    kind=change.kind,
                    additions=change.additions,
                    deletions=change.deletions,
                    moved_from=change.moved_from,
                )
                for change in summary
            ]
            self.publish(events.TurnDiffUpdated(turn_id=self.turn_id, files=files))
        return changes

    async def finish(self) -> None:
        """At the turn's end: a call cut short (an interrupt) may have changed files after the last
        snapshot; the turn's `after` is taken once more (announced to nobody: the turn has ended)."""
        if self.dirty:
            await self.after_call(announce=False)

    async def _snapshot_all(self, name: str) -> dict[str, Checkpoint] | None:
        try:
            taken = {}
            for repo in self.repos:
                checkpoint = await asyncio.to_thread(self._take, repo, name)
                taken[repo.work_tree] = checkpoint
            return taken
        except Exception:
            self._fail(f"its {name} checkpoint")
            return None

    def _take(self, repo: ShadowRepo, name: str) -> Checkpoint:
        checkpoint = repo.snapshot()
        repo.set_ref(self.conversation_id, self.turn_id, name, checkpoint.commit)
        if name == "before":  # until a call ends, its after is its before
            repo.set_ref(self.conversation_id, self.turn_id, "after", checkpoint.commit)
        return checkpoint

    def _fail(self, what: str) -> None:
        logger.exception("turn %s: %s failed; the turn goes on without checkpoints", self.turn_id, what)
        self.broken = True


class CheckpointedTool:
    """A tool that may change files, with the turn's checkpoints around each call: the call's
    `fileChanges` are what the snapshots saw, unless the tool reported its own (write_file and edit
    know their change exactly)."""

    def __init__(self, tool: Tool, checkpoints: TurnCheckpoints) -> None:
        self.tool = tool
        self.checkpoints = checkpoints
        self.name = tool.name
        self.description = tool.description
        self.parameters = tool.parameters

    def time_limit(self, arguments: dict[str, Any]) -> float | None:
        return self.tool.time_limit(arguments)

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutput:
        await self.checkpoints.before_call()
        output = await self.tool.run(arguments, context)
        changes = await self.checkpoints.after_call()
        if output.file_changes is None and changes:
            output = attrs.evolve(output, file_changes=changes)
        return output


def checkpointed(tools: list[Tool], checkpoints: TurnCheckpoints | None) -> list[Tool]:
    """The tools, those that may change files checkpointed (none without checkpoints)."""
    if checkpoints is None:
        return tools
    return [CheckpointedTool(tool, checkpoints) if changes_files(tool.name) else tool for tool in tools]
