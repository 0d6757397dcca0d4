"""What turns did to the workspace, from their checkpoints (`checkpointing.py`): a turn's diff
(getTurnDiff), reverting turns (revertTurn) and a fork's files (forkConversation.restoreFiles).

A revert undoes a turn and every later one, per folder, from their checkpoints; it never overwrites
a file changed since the agent left it unless forced (`checkpoints.reverting`). It is recorded as a
turn of its own (no items) with its own checkpoints and, in each folder it touched, a `reverted`
ref listing the turns it undid; reverting that turn undoes the revert (a redo). With `history`,
the turns also leave the model's context (`Turn.reverted_by`), and a redo brings them back."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections import defaultdict

from openvaala_lsp.checkpoints import diffs, restore, reverting
from openvaala_lsp.checkpoints.shadow import ShadowRepo
from openvaala_lsp.model import (
    FileChange,
    Order,
    Turn,
    TurnReason,
    TurnStatus,
    WorkspaceFolder,
    new_id,
    utcnow,
)
from openvaala_lsp.protocol import api
from openvaala_lsp.protocol.errors import Conflict, InvalidParams, InvalidState, NotFound
from openvaala_lsp.runtime.checkpointing import outermost
from openvaala_lsp.runtime.client import Client
from openvaala_lsp.runtime.state import RuntimeState
from openvaala_lsp.storage.interfaces import ALL_PAGE_SIZE, every_page
from openvaala_lsp.tools.protected import credential_paths, governing_paths, runtime_paths

RESTORE_FIELD = "$.restoreFiles.directory"
MAX_CONFLICTS_NAMED = 5


def _key(turn: Turn) -> tuple[object, str]:
    return (turn.started_at, turn.id)


class TurnFiles:
    def __init__(self, state: RuntimeState) -> None:
        self.state = state
        self._locks: dict[str, asyncio.Lock] = defaultdict(asyncio.Lock)  # one revert per conversation at a time

    async def _turns(self, conversation_id: str) -> list[Turn]:
        storage = self.state.storage
        turns = await every_page(
            lambda cursor: storage.list_turns(
                conversation_id, session_id=None, cursor=cursor, limit=ALL_PAGE_SIZE, order=Order.ASC
            )
        )
        return sorted(turns, key=_key)

    def _running(self, conversation_id: str) -> set[str]:
        opened = self.state.open.get(conversation_id)
        if opened is None:
            return set()
        return {runner.active.turn.id for runner in opened.runners.values() if runner.active is not None}

    @staticmethod
    def _named(turns: list[Turn], turn_id: str, conversation_id: str) -> Turn:
        found = next((turn for turn in turns if turn.id == turn_id), None)
        if found is None:
            raise NotFound(f"turn not found in conversation {conversation_id}: {turn_id} @ $.turnId")
        return found

    # getTurnDiff

    async def get_turn_diff(self, client: Client, params: api.GetTurnDiffParams) -> api.GetTurnDiffResult:
        conversation_id, turn_id = params.conversation_id, params.turn_id
        await self.state.conversation(conversation_id)
        if not await self.state.storage.get_turns(conversation_id, [turn_id]):
            raise NotFound(f"turn not found in conversation {conversation_id}: {turn_id} @ $.turnId")
        if not self.state.checkpoints.usable:  # no git: nothing was checkpointed, nothing is known
            return api.GetTurnDiffResult(turn_id=turn_id, files=[], complete=False)
        running = turn_id in self._running(conversation_id)
        files = await asyncio.to_thread(self._turn_diff, conversation_id, turn_id, running)
        return api.GetTurnDiffResult(turn_id=turn_id, files=files, complete=not any(f.skipped for f in files))

    def _turn_diff(self, conversation_id: str, turn_id: str, running: bool) -> list[FileChange]:
        budget = [diffs.MAX_TOTAL_DIFF_BYTES]  # for the diffs of every folder together
        files: list[FileChange] = []
        for repo in self.state.checkpoints.repos_of(conversation_id):
            refs = repo.refs(conversation_id, turn_id)
            before = refs.get((turn_id, "before"))
            if before is None:
                continue  # the turn changed nothing here
            after = refs.get((turn_id, "after"))
            now = repo.snapshot() if running or after is None else repo.checkpoint(after)
            files += diffs.diff(repo, repo.checkpoint(before), now, budget=budget)
        return files

    # revertTurn

    async def revert_turn(self, client: Client, params: api.RevertTurnParams) -> api.RevertTurnResult:
        if not params.files and not params.history:
            raise InvalidParams("nothing to revert: files and history are both false @ $.files")
        conversation_id = params.conversation_id
        async with self._locks[conversation_id]:
            await self.state.conversation(conversation_id)
            turns = await self._turns(conversation_id)
            target = self._named(turns, params.turn_id, conversation_id)
            if self._running(conversation_id) or any(turn.status is TurnStatus.RUNNING for turn in turns):
                raise InvalidState("a turn of the conversation is running: interrupt it, or revert once it ends")
            if params.history and target.reverted_by is not None:
                by = target.reverted_by
                raise InvalidState(
                    f"turn {target.id} was taken out of the context by {by}: revert that turn to redo it"
                )
            if params.files and not self.state.checkpoints.usable:
                raise InvalidState(f"files cannot be reverted: {self.state.checkpoints.state.reason}")
            later = [turn for turn in turns if _key(turn) >= _key(target)]
            revert_id = new_id("turn")
            changed: list[FileChange] = []
            reverted: set[str] = set()
            if params.files:
                changed, reverted = await asyncio.to_thread(
                    self._revert_files, conversation_id, later, target.id, params.force, revert_id
                )
            if params.history:
                reverted |= await self._revert_history(conversation_id, turns, later, target, revert_id)
            if not reverted:
                return api.RevertTurnResult(files=[], reverted_turn_ids=[])
            await self._record(target, revert_id)
            return api.RevertTurnResult(
                files=changed,
                reverted_turn_ids=[turn.id for turn in turns if turn.id in reverted],
                reverted_by=revert_id,
            )

    def _revert_files(
        self, conversation_id: str, later: list[Turn], target_id: str, force: bool, revert_id: str
    ) -> tuple[list[FileChange], set[str]]:
        plans = []
        # the order the turns ended in: a sub-agent's turn ends before the turn that started it
        ended = [turn.id for turn in sorted(later, key=lambda t: (t.ended_at or t.started_at, t.id))]
        for repo in self.state.checkpoints.repos_of(conversation_id):
            refs = repo.refs(conversation_id)
            undone = _undone(repo, refs)
            spans = [
                reverting.Span(
                    turn_id=turn.id,
                    before=refs[(turn.id, "before")],
                    after=refs[(turn.id, "after")],
                    ended=ended.index(turn.id),
                )
                for turn in later
                if turn.id not in undone
                # a revert among the later turns undid some of them: it and they cancel out
                and (turn.id == target_id or (turn.id, "reverted") not in refs)
                and (turn.id, "before") in refs
                and (turn.id, "after") in refs
            ]
            if spans:
                now = repo.snapshot()
                plans.append((repo, spans, now, reverting.plan(repo, spans, now)))
        conflicts = [change for *_, plan in plans for change in plan.conflicts]
        if conflicts and not force:
            names = ", ".join(change.path for change in conflicts[:MAX_CONFLICTS_NAMED])
            more = f" and {len(conflicts) - MAX_CONFLICTS_NAMED} more" if len(conflicts) > MAX_CONFLICTS_NAMED else ""
            raise Conflict(
                f"changed since the agent's last change, the revert would overwrite: {names}{more} "
                "(revert with force to overwrite them)",
                conflicts,
            )
        changed: list[FileChange] = []
        reverted: set[str] = set()
        for repo, spans, now, plan in plans:
            reverting.apply(repo, plan.writes)
            after = repo.snapshot()
            changed += diffs.diff(repo, now, after)
            repo.set_ref(conversation_id, revert_id, "before", now.commit)
            repo.set_ref(conversation_id, revert_id, "after", after.commit)
            ids = [span.turn_id for span in spans]
            record = repo.git("commit-tree", after.tree, stdin=json.dumps({"reverted": ids}).encode()).decode()
            repo.set_ref(conversation_id, revert_id, "reverted", record.strip())
            reverted.update(ids)
        return changed, reverted

    async def _revert_history(
        self, conversation_id: str, turns: list[Turn], later: list[Turn], target: Turn, revert_id: str
    ) -> set[str]:
        reverts = {turn.reverted_by for turn in turns if turn.reverted_by is not None}
        chosen = [
            turn.id for turn in later if turn.reverted_by is None and (turn.id == target.id or turn.id not in reverts)
        ]
        storage = self.state.storage
        # a revert taken out redoes: what it took out comes back
        redone = [turn.id for turn in turns if turn.reverted_by in set(chosen)]
        if redone:
            await storage.mark_reverted(conversation_id, redone, None)
        await storage.mark_reverted(conversation_id, chosen, revert_id)
        opened = self.state.open.get(conversation_id)
        if opened is not None:
            for runner in opened.runners.values():
                runner.loaded_history = None  # read again, without the reverted turns
        return set(chosen)

    async def _record(self, target: Turn, revert_id: str) -> None:
        """The revert as a turn of the reverted turn's session: no items, its own checkpoints."""
        now = utcnow()
        turn = Turn(
            id=revert_id,
            conversation_id=target.conversation_id,
            session_id=target.session_id,
            status=TurnStatus.COMPLETED,
            reason=TurnReason.COMPLETED,
            started_at=now,
            ended_at=now,
        )
        await self.state.storage.save_turn(turn, new=True)
        await self.state.storage.touch_conversation(turn.conversation_id, now)
        await self.state.storage.flush()

    # forkConversation.restoreFiles

    async def check_out_fork(
        self, conversation_id: str, turns: list[Turn], kept: set[str], folders: list[WorkspaceFolder], directory: str
    ) -> None:
        """The source's files at the fork's cut, into `directory`: the checkpoint before the first
        turn after the cut that changed files, else the folder as it is now. One folder goes into
        `directory` itself; several go into a directory each, named as the folder."""
        store = self.state.checkpoints
        if not store.usable:
            raise InvalidState(f"the fork's files cannot be checked out: {store.state.reason}")
        roots = outermost([folder.path for folder in folders])
        if not roots:
            raise InvalidState("the client has no workspace folders to take the files from")
        real, created = _prepare_directory(directory, roots)
        after_cut = [turn for turn in sorted(turns, key=_key) if turn.id not in kept]
        try:
            await asyncio.to_thread(self._check_out, conversation_id, after_cut, roots, real)
        except BaseException:
            if created:
                shutil.rmtree(real, ignore_errors=True)
            else:
                _empty(real)
            raise

    def _check_out(self, conversation_id: str, after_cut: list[Turn], roots: list[str], directory: str) -> None:
        names = [os.path.basename(root) or "root" for root in roots]
        for index, root in enumerate(roots):
            repo = self.state.checkpoints.repo(root)
            refs = repo.refs(conversation_id)
            commit = next((refs[(t.id, "before")] for t in after_cut if (t.id, "before") in refs), None)
            tree = repo.checkpoint(commit).tree if commit is not None else repo.snapshot().tree
            target = directory
            if len(roots) > 1:
                name = names[index] if names.count(names[index]) == 1 else f"{names[index]}-{index + 1}"
                target = os.path.join(directory, name)
                os.mkdir(target)
            restore.check_out(repo, tree, target)


def _undone(repo: ShadowRepo, refs: dict[tuple[str, str], str]) -> set[str]:
    """The turns whose changes in this folder a revert undid and no redo brought back, from the
    `reverted` records in the order the reverts were made (turn ids sort by their time)."""
    recorded = {turn_id: commit for (turn_id, name), commit in refs.items() if name == "reverted"}
    undone: set[str] = set()
    for revert in sorted(recorded):
        for turn_id in _listed(repo, recorded[revert]):
            undone.add(turn_id)
            if turn_id in recorded:  # a revert undone: what it undid is back
                undone.difference_update(_listed(repo, recorded[turn_id]))
    return undone


def _listed(repo: ShadowRepo, commit: str) -> list[str]:
    raw = repo.git("cat-file", "commit", commit).decode(errors="replace")
    try:
        ids = json.loads(raw.partition("\n\n")[2]).get("reverted", [])
    except (ValueError, AttributeError):
        return []
    return [turn_id for turn_id in ids if isinstance(turn_id, str)]


def _inside(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _prepare_directory(directory: str, roots: list[str]) -> tuple[str, bool]:
    """`directory` checked (and made when new): not a symlink, empty, writable by the user, and not
    openvaala's own files, a credential path or what governs the agent. (real path, made by us)."""
    real = os.path.realpath(directory)
    refused = [*runtime_paths(), *credential_paths((), roots)]
    holder = next((path for path in refused if _inside(real, path) or _inside(path, real)), None)
    if holder is not None:
        raise InvalidParams(
            f"{directory} is or holds openvaala's own files or credentials ({holder}) @ {RESTORE_FIELD}"
        )
    governing = next((path for path in governing_paths(roots) if _inside(real, path)), None)
    if governing is not None or ".git" in real.split("/"):
        raise InvalidParams(f"{directory} lies in what governs the agent or a .git directory @ {RESTORE_FIELD}")
    if os.path.islink(directory):
        raise InvalidParams(f"{directory} is a symlink: name the directory itself @ {RESTORE_FIELD}")
    if os.path.lexists(real):
        if not os.path.isdir(real):
            raise InvalidParams(f"{directory} exists and is not a directory @ {RESTORE_FIELD}")
        if os.listdir(real):
            raise InvalidParams(f"{directory} is not empty: give a new or empty directory @ {RESTORE_FIELD}")
        if not os.access(real, os.W_OK | os.X_OK):
            raise InvalidParams(f"{directory} is not writable @ {RESTORE_FIELD}")
        return real, False
    parent = os.path.dirname(real)
    if not os.path.isdir(parent):
        raise InvalidParams(f"the parent of {directory} does not exist @ {RESTORE_FIELD}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InvalidParams(f"{directory} cannot be made: its parent is not writable @ {RESTORE_FIELD}")
    os.mkdir(real, 0o777)
    return real, True


def _empty(directory: str) -> None:
    """What a failed check-out left in a directory that was empty before it."""
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
