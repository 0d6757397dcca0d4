"""Asking the user: the approvals a session's tool calls wait for, and their answers.

A call that asks is announced (`approvalRequested`) to every subscriber of its session, and of the
sessions above it for a sub-agent's (it asks within milliseconds of starting, before any editor could
subscribe to it), and waits for the first `answerApproval`; everyone then hears `approvalResolved`
with who decided. Only clients that declared `approvals` at initialization can answer: while none of
them subscribes to the session (or one above it) an ask is refused at once, and a pending one is
refused when the last of them leaves, so a turn never hangs on a question nobody can see.
Interrupting the turn cancels the question.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable
from typing import Any

import attrs

from openvaala_lsp.model import Address, AddressKind, ItemId, SessionId
from openvaala_lsp.protocol import events
from openvaala_lsp.protocol.api import ApprovalDecision, ApprovalRequest, PendingApproval
from openvaala_lsp.protocol.errors import InvalidState, NotFound

REMEMBERED_ANSWERS = 1000  # answered item ids kept to tell "already answered" from "unknown"
NOBODY_TO_ASK = "no editor that can answer approvals is watching this session, so the user could not be asked"
NOBODY_LEFT = "every editor that could answer left before the user answered"


@attrs.frozen
class Answer:
    decision: ApprovalDecision
    by: Address
    message: str | None = None  # the user's words, passed to the model with a denial

    @property
    def allowed(self) -> bool:
        return self.decision is not ApprovalDecision.DENY


class Approvals:
    def __init__(self, session_id: SessionId, publish: Callable[[Any], None], can_answer: Callable[[], bool]) -> None:
        self.session_id = session_id
        self._session = Address(kind=AddressKind.SESSION, session_id=session_id)
        self._publish = publish  # to the session's subscribers and those of the sessions above it
        self._can_answer = can_answer  # whether a subscriber that declared `approvals` is there
        self._pending: dict[ItemId, asyncio.Future[Answer]] = {}
        self._requests: dict[ItemId, ApprovalRequest] = {}
        self._answered: collections.OrderedDict[ItemId, None] = collections.OrderedDict()

    @property
    def pending(self) -> bool:
        return bool(self._pending)

    def has(self, item_id: ItemId) -> bool:
        return item_id in self._pending or item_id in self._answered

    def waiting(self) -> list[PendingApproval]:
        """What is asked now, for a subscriber's snapshot."""
        return [
            PendingApproval(item_id=item_id, session_id=self.session_id, approval=request)
            for item_id, request in self._requests.items()
        ]

    async def ask(self, item_id: ItemId, request: ApprovalRequest) -> Answer:
        """The user's answer; a refusal at once when nobody can answer. Cancelled (the turn was
        interrupted), the question is withdrawn as denied by the user."""
        if not self._can_answer():
            return Answer(ApprovalDecision.DENY, self._session, NOBODY_TO_ASK)
        answer: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._pending[item_id] = answer
        self._requests[item_id] = request
        self._publish(events.ApprovalRequested(item_id=item_id, session_id=self.session_id, approval=request))
        try:
            return await answer
        except asyncio.CancelledError:
            self._resolve(item_id, Answer(ApprovalDecision.DENY, Address(kind=AddressKind.USER), "interrupted"))
            raise
        finally:
            self._pending.pop(item_id, None)
            self._requests.pop(item_id, None)

    def answer(self, item_id: ItemId, answer: Answer) -> None:
        """The first answer wins; a later one is `invalidState`, one for no question `notFound`."""
        if item_id in self._answered:
            raise InvalidState(f"approval for item {item_id} was already answered")
        if item_id not in self._pending:
            raise NotFound(f"no approval is pending for item {item_id}")
        self._resolve(item_id, answer)

    def subscribers_changed(self) -> None:
        """Refuses what is pending once no subscriber can answer it."""
        if self._pending and not self._can_answer():
            for item_id in list(self._pending):
                self._resolve(item_id, Answer(ApprovalDecision.DENY, self._session, NOBODY_LEFT))

    def _resolve(self, item_id: ItemId, answer: Answer) -> None:
        waiting = self._pending.pop(item_id, None)
        self._requests.pop(item_id, None)
        if waiting is None or item_id in self._answered:
            return
        self._answered[item_id] = None
        if len(self._answered) > REMEMBERED_ANSWERS:
            self._answered.popitem(last=False)
        event = events.ApprovalResolved(
            item_id=item_id, session_id=self.session_id, decision=answer.decision, by=answer.by
        )
        self._publish(event)
        if not waiting.done():
            waiting.set_result(answer)
