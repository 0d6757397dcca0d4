"""One editor connection: the LSP lifecycle, `openvaala/*` requests translated into runtime calls,
and the connection's subscriptions drained into notifications.

A connection reads LSP frames from any async reader and writes to any stream writer, so the same
code serves stdio (standalone) and the runtime host's Unix socket connections.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import os
from collections.abc import Callable, Mapping
from typing import Any

from openvaala_lsp import framing
from openvaala_lsp.framing import METHOD_NOT_FOUND, FrameReader, Refused, frame
from openvaala_lsp.model import WorkspaceFolder, new_id
from openvaala_lsp.protocol.codes import SERVER_NOT_INITIALIZED
from openvaala_lsp.protocol.errors import RuntimeApiError, RuntimeStopped
from openvaala_lsp.protocol.methods import PREFIX, REQUESTS, RequestSpec
from openvaala_lsp.runtime import subscriptions
from openvaala_lsp.runtime.client import Client
from openvaala_lsp.runtime.core import Runtime
from openvaala_lsp.runtime.subscriptions import Subscription
from openvaala_lsp.server import messages
from openvaala_lsp.server.dispatch import closed_notification, dispatch, notifications, runtime_error
from openvaala_lsp.server.lsp import (
    CANCEL_REQUEST,
    EXIT,
    FOLDERS_CHANGED,
    INITIALIZE,
    SHUTDOWN,
    folder_list,
    fs_path,
    initialize_params,
    initialize_result,
)
from openvaala_lsp.server.peer import Peer, WireError, error

logger = logging.getLogger(__name__)

READ_SIZE = 65536
DEFAULT_EVENT_BATCH_MS = 4
MAX_EVENTS_PER_NOTIFICATION = 512
MIN_BUFFERED_EVENTS = 100
MAX_CLIENT_NAME = 100  # characters of clientName kept
FOLDERS_REQUEST_TIMEOUT = 5.0
# the requests this build answers (the runtime has a method for), advertised at initialize
METHODS = frozenset(spec.method for spec in REQUESTS.values() if hasattr(Runtime, spec.runtime))


class StreamWriterSink:
    """An asyncio stream writer that never blocks the loop and ignores writes once closing."""

    def __init__(self, stream: asyncio.StreamWriter) -> None:
        self.stream = stream

    def write(self, data: bytes) -> None:
        if not self.stream.is_closing():
            self.stream.write(data)

    def close(self) -> None:
        self.stream.close()

    async def drain(self) -> None:
        try:
            await self.stream.drain()
        except ConnectionError:
            pass


class ConnectionState(enum.Enum):
    """An editor connection's life: NEW until `initialize`, READY for requests, SHUT_DOWN after
    `shutdown` (requests answer runtimeStopped), EXITED after `exit`, CLOSED once released (after
    `exit`, or at once when the editor goes away)."""

    NEW = "new"
    READY = "ready"
    SHUT_DOWN = "shutDown"
    EXITED = "exited"
    CLOSED = "closed"


class Connection:
    """One editor connection: the LSP lifecycle (`initialize`, `shutdown`, `exit`, workspace folders),
    `openvaala/*` requests handed to the runtime through `dispatch`, and the connection's
    subscriptions drained into notifications."""

    def __init__(
        self,
        runtime: asyncio.Future[Runtime],
        writer: asyncio.StreamWriter,
        *,
        environment: Mapping[str, str],
        cwd: str,
        on_shutdown: Callable[[Connection], Any] | None = None,
    ) -> None:
        self.runtime_future = runtime
        self.writer = StreamWriterSink(writer)
        self.peer = Peer(self.writer)
        self.cwd = cwd
        self.client = Client(
            client_id=new_id("client"),
            environment=dict(environment),
            workspace_folders=self.workspace_folders,
            attach=self._attach,
            call_tool=self._call_client_tool,
        )
        self.state = ConnectionState.NEW
        self.exit_code = 0  # of an `exit`: 1 unless `shutdown` came first (the LSP rule)
        self._event_batch = DEFAULT_EVENT_BATCH_MS / 1000
        self._folders: dict[str, str] = {}  # workspace folder uri -> name, as the editor last said
        self._root: str | None = None  # rootUri / rootPath of initialize
        self._can_list_folders = False  # the editor answers workspace/workspaceFolders
        self._asked_folders: list[WorkspaceFolder] | None = None
        self._pumps: set[asyncio.Task[None]] = set()
        self._on_shutdown = on_shutdown

    # Requests

    async def call(self, spec: RequestSpec, params: Any) -> Any:
        if self.state is ConnectionState.NEW:
            raise WireError(SERVER_NOT_INITIALIZED, "server not initialized", {"kind": "serverNotInitialized"})
        return await dispatch(await self._runtime(), self.client, spec, params)

    async def _runtime(self) -> Runtime:
        try:
            runtime = await asyncio.shield(self.runtime_future)
        except RuntimeApiError as exc:
            raise runtime_error(exc) from None
        if runtime.stopped or self.state is not ConnectionState.READY:
            raise runtime_error(RuntimeStopped())
        runtime.connect(self.client)
        return runtime

    # Reading

    async def serve(self, reader: Any) -> None:
        """Reads and handles messages until EOF or `exit`, then releases the connection. A frame
        the reader refuses is answered, and reading goes on."""
        frames = FrameReader(framing.max_message_bytes())
        try:
            while True:
                try:
                    data = await reader.read(READ_SIZE)
                except ConnectionError:
                    break
                if not data:
                    break
                for body in frames.feed(data):
                    if isinstance(body, Refused):
                        self.writer.write(frame(body.response()))
                    else:
                        self._receive(body)
                    if self.state is ConnectionState.EXITED:
                        return
        finally:
            await self.close()

    def _receive(self, body: bytes) -> None:
        message, refusal = messages.check(body)
        if refusal is not None:
            self.writer.write(frame(refusal))
        if message is None:
            return
        if "method" not in message:
            self.peer.answered(message)
        elif "id" in message:
            self._request(message["id"], message["method"], message["params"])
        else:
            self._notification(message["method"], message["params"])

    def _request(self, msg_id: Any, method: str, params: Any) -> None:
        if self.state is not ConnectionState.NEW and self.state is not ConnectionState.READY:
            self.peer.fail(msg_id, runtime_error(RuntimeStopped()))  # after shutdown, every request
        elif method == INITIALIZE:
            try:
                self.peer.answer(msg_id, self._initialize(params))
            except WireError as exc:
                self.peer.fail(msg_id, exc)
        elif method == SHUTDOWN:
            self.state = ConnectionState.SHUT_DOWN
            self.peer.handle(msg_id, self._shutdown())
        elif (spec := REQUESTS.get(method)) is not None and spec.method in METHODS:
            self.peer.handle(msg_id, self.call(spec, params))
        else:
            self.peer.fail(msg_id, error(METHOD_NOT_FOUND, f"Method Not Found: {method}"))

    def _notification(self, method: str, params: Any) -> None:
        if method == EXIT:
            self.exit_code = 0 if self.state is ConnectionState.SHUT_DOWN else 1
            self.state = ConnectionState.EXITED
        elif method == CANCEL_REQUEST and isinstance(params, dict) and isinstance(params.get("id"), (int, str)):
            self.peer.cancel(params["id"])
        elif method == FOLDERS_CHANGED and isinstance(params, dict):
            self._folders_changed(params.get("event"))
        # anything else (initialized, $/setTrace, ...) needs nothing from this server

    async def _shutdown(self) -> None:
        if self._on_shutdown is not None:
            await self._on_shutdown(self)

    # Lifecycle

    def _initialize(self, params: Any) -> dict[str, Any]:
        init = initialize_params(params)
        self._folders = {uri: name for uri, name in init.folders}
        self._root = init.root
        self._can_list_folders = init.can_list_folders
        self._options(init.options)
        self.state = ConnectionState.READY
        return initialize_result(METHODS)

    def _options(self, options: Any) -> None:
        openvaala = options.get("openvaala") if isinstance(options, dict) else None
        if not isinstance(openvaala, dict):
            return
        if isinstance(client_id := openvaala.get("clientId"), str) and client_id:
            self.client.client_id = client_id
        if isinstance(name := openvaala.get("clientName"), str) and name.strip():
            self.client.name = name.strip()[:MAX_CLIENT_NAME]
        self.client.approvals = openvaala.get("approvals") is True
        buffered = openvaala.get("maxBufferedEvents")
        if isinstance(buffered, int) and not isinstance(buffered, bool) and buffered >= MIN_BUFFERED_EVENTS:
            self.client.max_buffered_events = buffered
        batch_ms = openvaala.get("eventBatchMs")
        if isinstance(batch_ms, (int, float)) and not isinstance(batch_ms, bool) and 0 <= batch_ms <= 1000:
            self._event_batch = batch_ms / 1000

    def _folders_changed(self, event: Any) -> None:
        if not isinstance(event, dict):
            return
        for uri, _ in folder_list(event.get("removed")):
            self._folders.pop(uri, None)
        self._folders.update(folder_list(event.get("added")))
        self._asked_folders = None

    async def close(self) -> None:
        """The editor went away or said `exit`: stop its work, end its subscriptions."""
        self.state = ConnectionState.CLOSED
        self.peer.close()
        if self.runtime_future.done() and not self.runtime_future.exception():
            self.runtime_future.result().disconnect(self.client)
        for pump in list(self._pumps):
            pump.cancel()
        await self.writer.drain()
        self.writer.close()

    # Workspace folders: initialize / didChangeWorkspaceFolders, else ask the client, else rootUri, else cwd

    async def workspace_folders(self) -> list[WorkspaceFolder]:
        folders = [
            WorkspaceFolder(name=name, path=path) for uri, name in self._folders.items() if (path := fs_path(uri))
        ]
        if folders:
            return folders
        if self._asked_folders is None and self._can_list_folders:
            self._asked_folders = await self._ask_folders()
        if self._asked_folders:
            return self._asked_folders
        root = self._root
        if root:
            return [WorkspaceFolder(name=os.path.basename(root) or root, path=root)]
        return [WorkspaceFolder(name=os.path.basename(self.cwd) or self.cwd, path=self.cwd)]

    async def _ask_folders(self) -> list[WorkspaceFolder]:
        try:
            answer = await asyncio.wait_for(
                self.peer.request("workspace/workspaceFolders", None), FOLDERS_REQUEST_TIMEOUT
            )
        except (TimeoutError, WireError):
            logger.warning("the client did not answer workspace/workspaceFolders")
            return []
        return [WorkspaceFolder(name=name, path=path) for uri, name in folder_list(answer) if (path := fs_path(uri))]

    async def _call_client_tool(
        self, conversation_id: str, server: str, tool: str, arguments: dict[str, Any]
    ) -> dict[str, Any]:
        """The server->client request `openvaala/callClientTool`."""
        params = {
            "clientId": self.client.client_id,
            "conversationId": conversation_id,
            "server": server,
            "tool": tool,
            "arguments": arguments,
        }
        result = await self.peer.request(PREFIX + "callClientTool", params)
        if not isinstance(result, dict):
            raise ValueError(f"callClientTool answered {type(result).__name__}, expected an object")
        return result

    # Subscriptions

    def _attach(self, sub: Subscription) -> None:
        pump = asyncio.get_running_loop().create_task(self._pump(sub))
        self._pumps.add(pump)
        pump.add_done_callback(self._pumps.discard)

    async def _pump(self, sub: Subscription) -> None:
        """Sends a subscription's events as they come. A session's deltas leave at once after a quiet
        spell (the first delta of an answer is not held back) and at most once per `eventBatchMs`
        while they keep coming, the ones in between riding along in one notification; any other
        event (an item saved, the turn's end, an approval asked) goes at once with the deltas before
        it (see `Subscription.hold`)."""
        seq = 0
        loop = asyncio.get_running_loop()
        sent_at = -1e9
        while True:
            batch = await sub.next_batch(MAX_EVENTS_PER_NOTIFICATION)
            if not batch:
                break
            wait = sent_at + self._event_batch - loop.time()
            if sub.kind == subscriptions.SESSION and wait > 0 and len(batch) < MAX_EVENTS_PER_NOTIFICATION:
                await sub.hold(wait)  # a few more deltas ride along
                batch += await sub.next_batch(MAX_EVENTS_PER_NOTIFICATION - len(batch)) if sub.pending() else []
            sent_at = loop.time()
            for method, params in notifications(sub, seq, batch):
                seq = params["seq"]
                self.peer.notify(method, params)
            await self.writer.drain()
        if self.state is not ConnectionState.CLOSED:
            self.peer.notify(*closed_notification(sub))
