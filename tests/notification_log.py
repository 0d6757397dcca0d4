"""Waiting for and picking out notifications, the same for a real process (`lsp_client.LspClient`)
and the in-process runtime (`runtime/harness.Harness`): each keeps `notifications` in arrival order
and notifies `_notified` when one arrives."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

TIMEOUT = 20.0


class NotificationLog:
    notifications: list[dict[str, Any]]
    _notified: asyncio.Condition

    async def wait_for(
        self, predicate: Callable[[dict[str, Any]], bool], *, timeout: float = TIMEOUT
    ) -> dict[str, Any]:
        """The first notification (received so far or later) matching `predicate`."""
        async with self._notified:
            async with asyncio.timeout(timeout):
                while True:
                    for message in self.notifications:
                        if predicate(message):
                            return message
                    await self._notified.wait()

    def of(self, method: str, subscription_id: str | None = None) -> list[dict[str, Any]]:
        return [
            m["params"]
            for m in self.notifications
            if m["method"] == method
            and (subscription_id is None or m["params"].get("subscriptionId") == subscription_id)
        ]
