"""What the local tools share: argument checking, failure reporting and thread offloading."""

from __future__ import annotations

import abc
import asyncio
import copy
import threading
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from openvaala_lsp.tools.arguments import ArgumentError, validate_arguments
from openvaala_lsp.tools.base import DEFAULT_TIME_LIMIT, ToolContext, ToolOutput

T = TypeVar("T")


class ToolFailure(Exception):
    """A failure reported to the model as an `is_error` output; the message is the whole text."""


class Cancelled(Exception):
    """Raised inside a worker thread once the awaiting coroutine has been cancelled."""


class StopFlag:
    """Lets a worker thread notice that nobody waits for its result any more."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def set(self) -> None:
        self._event.set()

    def check(self) -> None:
        if self._event.is_set():
            raise Cancelled


async def run_in_thread(function: Callable[[StopFlag], T]) -> T:
    """Runs blocking file work off the event loop. A cancelled caller returns at once; the thread
    stops at its next `check()` instead of walking a large tree for nobody."""
    stop = StopFlag()
    try:
        return await asyncio.to_thread(function, stop)
    except asyncio.CancelledError:
        stop.set()
        raise


def _os_error_text(error: OSError) -> str:
    reason = error.strerror or str(error)
    return f"{reason}: {error.filename}" if error.filename else reason


class LocalTool(abc.ABC):
    """Base of the local tools: subclasses give NAME, DESCRIPTION, PARAMETERS and `execute`.

    `run` never raises for bad arguments or failures (they become `is_error` outputs), only for
    cancellation, as the Tool contract asks."""

    NAME: ClassVar[str]
    DESCRIPTION: ClassVar[str]
    PARAMETERS: ClassVar[dict[str, Any]]
    TIME_LIMIT: ClassVar[float] = DEFAULT_TIME_LIMIT

    def __init__(self) -> None:
        self.name: str = self.NAME
        self.description: str = self.DESCRIPTION
        # A copy per instance, so a caller adjusting one tool's schema leaves the others alone.
        self.parameters: dict[str, Any] = copy.deepcopy(self.PARAMETERS)

    def time_limit(self, arguments: dict[str, Any]) -> float | None:
        return self.TIME_LIMIT

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutput:
        try:
            checked = validate_arguments(self.parameters, arguments)
        except ArgumentError as error:
            return ToolOutput(text=f"{self.name}: {error}", is_error=True)
        try:
            return await self.execute(checked, context)
        except ToolFailure as error:
            return ToolOutput(text=str(error), is_error=True)
        except OSError as error:
            return ToolOutput(text=f"{self.name} failed: {_os_error_text(error)}", is_error=True)
        except Exception as error:  # the contract: failures are outputs, never exceptions
            return ToolOutput(text=f"{self.name} failed unexpectedly: {type(error).__name__}: {error}", is_error=True)

    @abc.abstractmethod
    async def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutput:
        """Does the work with checked arguments; may raise ToolFailure or OSError."""
