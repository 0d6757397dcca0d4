"""A session's pending inputs: submitted, durably recorded, not yet taken into a turn.

An input is `taken` from the moment a starting turn claims it until the turn has recorded it in the
log (then it leaves the queue) or gives it back (interrupted before that). `input_ids` maps the
client's idempotency keys to item ids so a retried submit adds nothing.
"""

from __future__ import annotations

from openvaala_lsp.model import Item, ItemStatus, PendingInput, SessionInputMode
from openvaala_lsp.protocol.api import PendingInputInfo
from openvaala_lsp.protocol.errors import InvalidState, NotFound
from openvaala_lsp.storage.interfaces import Storage


class InputQueue:
    def __init__(self, storage: Storage, conversation_id: str) -> None:
        self._storage = storage
        self._conversation_id = conversation_id
        self.pending: list[PendingInput] = []
        self.taken: set[str] = set()  # item ids claimed by a starting turn
        self.input_ids: dict[str, str] = {}  # inputId -> item id

    @property
    def waiting(self) -> bool:
        """Whether an input waits that no turn has claimed."""
        return any(p.item.id not in self.taken for p in self.pending)

    def infos(self) -> list[PendingInputInfo]:
        return [PendingInputInfo(item=p.item, mode=p.mode, turn_id=p.turn_id) for p in self.pending]

    def restore(self, pending: PendingInput) -> None:
        """An input saved by an earlier run of the runtime."""
        self.pending.append(pending)
        if pending.input_id:
            self.input_ids[pending.input_id] = pending.item.id

    async def add(self, pending: PendingInput) -> None:
        """Queued, and its row with the storage's next commit, which the caller awaits (a turn that
        takes the input at once commits it with its own start)."""
        self.pending.append(pending)
        try:
            await self._storage.save_pending_input(pending, new=True, durable=False)
        except BaseException:  # the storage is closed
            self.unsaved(pending)
            raise

    def unsaved(self, pending: PendingInput) -> None:
        """The input's commit failed: it leaves the queue, unless a turn has taken it."""
        if pending in self.pending and pending.item.id not in self.taken:
            self.pending.remove(pending)

    def find(self, item_id: str) -> PendingInput:
        """A pending input that no turn has taken."""
        for pending in self.pending:
            if pending.item.id == item_id:
                if item_id in self.taken:
                    raise InvalidState(f"input already taken into a turn: {item_id}")
                return pending
        raise NotFound(f"pending input not found: {item_id}")

    async def steer(self, item_id: str, turn_id: str) -> None:
        pending = self.find(item_id)
        pending.mode = SessionInputMode.STEER
        pending.turn_id = turn_id
        await self._storage.save_pending_input(pending)

    async def withdraw(self, item_id: str) -> Item:
        pending = self.find(item_id)
        self.pending.remove(pending)
        await self._storage.remove_pending_input(self._conversation_id, item_id)
        pending.item.status = ItemStatus.WITHDRAWN
        return pending.item

    def run_next(self, item_id: str) -> None:
        """The input runs first in the next turn (interruptTurnWithInput)."""
        pending = self.find(item_id)
        self.pending.remove(pending)
        self.pending.insert(0, pending)
        pending.mode = SessionInputMode.QUEUE

    def claim(self) -> list[PendingInput]:
        """Every input no turn has taken, now taken by the turn that starts."""
        inputs = [p for p in self.pending if p.item.id not in self.taken]
        self.taken.update(p.item.id for p in inputs)
        return inputs

    def claim_steering(self, turn_id: str) -> list[PendingInput]:
        """The inputs steered into `turn_id`, taken by it."""
        inputs = [p for p in self.pending if p.mode == SessionInputMode.STEER and p.turn_id == turn_id]
        self.taken.update(p.item.id for p in inputs)
        return inputs

    async def recorded(self, pending: PendingInput) -> None:
        """The turn has logged the input: it leaves the queue (committed with the turn's next commit)."""
        await self._storage.remove_pending_input(self._conversation_id, pending.item.id, durable=False)
        if pending in self.pending:
            self.pending.remove(pending)
        self.taken.discard(pending.item.id)

    def release(self) -> None:
        """Claimed inputs a turn never recorded (it was interrupted first) wait again."""
        self.taken.difference_update(p.item.id for p in self.pending)
