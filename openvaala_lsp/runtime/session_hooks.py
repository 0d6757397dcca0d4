"""Hooks fired for one session, the same way at every point of its life: with the session's ids in
the payload, in the conversation's directory and environment. A hook that fails is reported to the
session's subscribers as an `error` event and never fails the turn."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from openvaala_lsp.hooks.outcome import HookOutcome
from openvaala_lsp.hooks.runner import HookRunner
from openvaala_lsp.model import ErrorInfo, Session
from openvaala_lsp.protocol import events
from openvaala_lsp.telemetry.base import NOTHING, Parent

HOOK_FAILED = "hookFailed"


class SessionHooks:
    def __init__(
        self,
        runner: HookRunner,
        session: Session,
        *,
        cwd: str,
        environment: Mapping[str, str],
        publish: Callable[[Any], None],
        trace: Parent = NOTHING,
    ) -> None:
        self.runner = runner  # the hooks of the definitions the turn started with
        self._session = session
        self._cwd = cwd
        self._environment = environment
        self._publish = publish
        self._trace = trace  # the turn's span: each hook that runs is a span in it

    async def fire(self, event: str, payload: dict[str, Any], match: str | None = None) -> HookOutcome:
        if not self.runner.matching(event, match):
            return HookOutcome()
        payload = {"session_id": self._session.id, "conversation_id": self._session.conversation_id, **payload}
        span = self._trace.hook(event)
        try:
            outcome = await self.runner.run(event, payload, match=match, cwd=self._cwd, environment=self._environment)
        except BaseException as exc:
            span.end(type(exc).__name__)
            raise
        span.end(HOOK_FAILED if outcome.errors else None)
        for message in [*outcome.errors, *outcome.system_messages]:
            self._publish(events.ErrorEvent(error=ErrorInfo(kind=HOOK_FAILED, message=message)))
        return outcome
