"""One editor connection: a pygls `LanguageServer` whose features are the `openvaala/*` requests,
translated into runtime calls (`dispatch.py`), with the connection's subscriptions drained into
notifications.

pygls handles the LSP lifecycle, workspace folders, cancellation and the server's requests to the
editor (`protocol.py` fixes the few cases it gets wrong here). What pygls lacks stays in front of it:
frames are cut by `framing.FrameReader` (size, header and length limits, resync after garbage) and
each message is checked by `messages.check` before pygls sees it.

A connection reads from any async reader and writes to any stream writer, so the same code serves
stdio (standalone) and the runtime host's Unix socket connections.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import os
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from openvaala_lsp import __version__
from openvaala_lsp.model import WorkspaceFolder, new_id
from openvaala_lsp.protocol.codes import SERVER_NOT_INITIALIZED
from openvaala_lsp.protocol.converter import describe_error
from openvaala_lsp.protocol.errors import RuntimeApiError
from openvaala_lsp.protocol.methods import PREFIX, REQUESTS, RequestSpec
from openvaala_lsp.runtime import subscriptions
from openvaala_lsp.runtime.client import Client
from openvaala_lsp.runtime.core import Runtime
from openvaala_lsp.runtime.subscriptions import Subscription
from openvaala_lsp.server import messages
from openvaala_lsp.server.dispatch import closed_notification, dispatch, notifications, runtime_error
from openvaala_lsp.server.editor_face import EditorFace
from openvaala_lsp.server.protocol import OpenvaalaProtocol, WireError, error, runtime_stopped, shared_converter
from openvaala_lsp.wire import framing
from openvaala_lsp.wire.framing import METHOD_NOT_FOUND, FrameReader, Refused, frame

logger = logging.getLogger(__name__)

SERVER_NAME = "openvaala-lsp"
READ_SIZE = 65536
DEFAULT_EVENT_BATCH_MS = 4
MAX_EVENTS_PER_NOTIFICATION = 512
MIN_BUFFERED_EVENTS = 100
MAX_CLIENT_NAME = 100  # characters of clientName kept
FOLDERS_REQUEST_TIMEOUT = 5.0
# the requests this build answers (the runtime has a method for), advertised at initialize
METHODS = tuple(sorted(spec.method for spec in REQUESTS.values() if hasattr(Runtime, spec.runtime)))


class StreamWriterSink:
    """pygls' writer over an asyncio stream writer: writes never block the loop, and stop once closing."""

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


class Connection(LanguageServer):
    protocol: OpenvaalaProtocol

    def __init__(
        self,
        runtime: asyncio.Future[Runtime],
        writer: asyncio.StreamWriter,
        *,
        environment: Mapping[str, str],
        cwd: str,
        on_shutdown: Callable[[Connection], Any] | None = None,
    ) -> None:
        super().__init__(SERVER_NAME, __version__, protocol_cls=OpenvaalaProtocol, converter_factory=shared_converter)
        self.runtime_future = runtime
        self.writer = StreamWriterSink(writer)
        self.protocol.set_writer(self.writer, include_headers=True)
        self.protocol.methods = METHODS
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
        self._asked_folders: list[WorkspaceFolder] | None = None
        self._pumps: set[asyncio.Task[None]] = set()  # subscriptions drained, and other work of its own
        self._on_shutdown = on_shutdown
        for method in METHODS:
            self.feature(method)(_handler(REQUESTS[method]))
        self._register_lifecycle()
        self.face = EditorFace(self, self)
        self.face.register()
        self.client.open_buffer = self.face.open_buffer

    # Requests

    async def call(self, spec: RequestSpec, params: Any) -> Any:
        if self.state is ConnectionState.NEW:
            raise WireError(SERVER_NOT_INITIALIZED, "server not initialized", {"kind": "serverNotInitialized"})
        return await dispatch(await self.runtime(), self.client, spec, params)

    async def runtime(self) -> Runtime:
        """The runtime, for a connection that is ready; WireError (runtimeStopped) otherwise."""
        try:
            runtime = await asyncio.shield(self.runtime_future)
        except RuntimeApiError as exc:
            raise runtime_error(exc) from None
        if runtime.stopped or self.state is not ConnectionState.READY:
            raise runtime_stopped()
        runtime.connect(self.client)
        return runtime

    # The lifecycle, after pygls' own handling of each message

    def _register_lifecycle(self) -> None:
        @self.feature(types.INITIALIZE)
        def on_initialize(ls: Connection, params: types.InitializeParams) -> None:
            ls._options(params.initialization_options)
            if params.client_info is not None and params.client_info.name.strip():
                ls.face.editor_name = params.client_info.name.strip()[:MAX_CLIENT_NAME]
            ls.state = ConnectionState.READY

        @self.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
        def on_folders_changed(ls: Connection, params: types.DidChangeWorkspaceFoldersParams) -> None:
            ls._asked_folders = None

        @self.feature(types.SHUTDOWN)
        async def on_shutdown(ls: Connection, params: Any) -> None:
            ls.state = ConnectionState.SHUT_DOWN
            if ls._on_shutdown is not None:
                await ls._on_shutdown(ls)

        @self.feature(types.EXIT)
        def on_exit(ls: Connection, params: Any) -> None:
            ls.exit_code = 0 if ls.state is ConnectionState.SHUT_DOWN else 1
            ls.state = ConnectionState.EXITED

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
        self.face.open_changed_files = openvaala.get("openChangedFiles") is True
        # the file tools of its turns read and write through it (openvaala/readTextFile, writeTextFile)
        self.client.read_text = self._read_text_file if openvaala.get("readTextFile") is True else None
        self.client.write_text = self._write_text_file if openvaala.get("writeTextFile") is True else None

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
        data, refusal = messages.check(body)
        if refusal is not None:
            self.writer.write(frame(refusal))
        if data is None:
            return
        if "id" in data and isinstance(method := data.get("method"), str) and not self._answers(method):
            self.protocol._send_response(data["id"], error=_not_found(method).to_response_error())
            return
        try:
            message = self.protocol.structure_message(data)
        except JsonRpcException as exc:  # LSP params (or an editor's answer) pygls could not structure
            self._unstructurable(data, exc)
            return
        self.protocol.handle_message(message)

    def _answers(self, method: str) -> bool:
        """Whether a request for `method` has a handler here (pygls would log a traceback for one
        that has not)."""
        features = self.protocol.fm
        return method in features.features or method in features.builtin_features

    def _unstructurable(self, data: dict[str, Any], exc: JsonRpcException) -> None:
        problems = describe_error(exc.__cause__) if exc.__cause__ is not None else [str(exc)]
        if "method" in data:
            if "id" in data:
                self.writer.write(frame(messages.params_error(data["id"], data["method"], problems)))
            return
        # an answer to one of our requests that is no JSON-RPC answer: its waiter hears so
        failure = types.ResponseError(code=framing.INTERNAL[1], message=f"a malformed answer: {'; '.join(problems)}")
        self.protocol._handle_response(data["id"], None, failure)

    def report_server_error(self, error: Exception, source: Any) -> None:
        # pygls would show the editor a message for it; a notification this server could not handle
        # is logged instead (requests are answered with their error)
        logger.warning("%s: %s", getattr(source, "__name__", source), error)

    def spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        """Work of this connection's own (telling the editor of a turn), ended with it."""
        task = asyncio.get_running_loop().create_task(work)
        self._pumps.add(task)
        task.add_done_callback(self._pumps.discard)

    async def close(self) -> None:
        """The editor went away or said `exit`: stop its work, end its subscriptions."""
        self.state = ConnectionState.CLOSED
        self.protocol.close()
        runtime = (
            self.runtime_future.result() if self.runtime_future.done() and not self.runtime_future.exception() else None
        )
        if runtime is not None:
            runtime.disconnect(self.client)
        self.face.close(runtime)
        for pump in list(self._pumps):
            pump.cancel()
        await self.writer.drain()
        self.writer.close()

    # Workspace folders: initialize / didChangeWorkspaceFolders, else ask the client, else rootUri, else cwd

    async def workspace_folders(self) -> list[WorkspaceFolder]:
        workspace = self.workspace
        folders = [
            WorkspaceFolder(name=folder.name, path=path)
            for folder in workspace.folders.values()
            if (path := to_fs_path(folder.uri))
        ]
        if folders:
            return folders
        if self._asked_folders is None and self._lists_folders():
            self._asked_folders = await self._ask_folders()
        if self._asked_folders:
            return self._asked_folders
        root = workspace.root_path
        if root:
            return [WorkspaceFolder(name=os.path.basename(root) or root, path=root)]
        return [WorkspaceFolder(name=os.path.basename(self.cwd) or self.cwd, path=self.cwd)]

    def _lists_folders(self) -> bool:
        workspace = self.client_capabilities.workspace
        return bool(workspace and workspace.workspace_folders)

    async def _ask_folders(self) -> list[WorkspaceFolder]:
        try:
            answer = await asyncio.wait_for(self.workspace_workspace_folders_async(None), FOLDERS_REQUEST_TIMEOUT)
        except (TimeoutError, JsonRpcException):
            logger.warning("the client did not answer workspace/workspaceFolders")
            return []
        return [
            WorkspaceFolder(name=folder.name, path=path) for folder in answer or [] if (path := to_fs_path(folder.uri))
        ]

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
        result = await self.protocol.send_request_async(PREFIX + "callClientTool", params)
        if not isinstance(result, dict):
            raise ValueError(f"callClientTool answered {type(result).__name__}, expected an object")
        return result

    async def _read_text_file(self, conversation_id: str, path: str) -> str:
        """The server->client request `openvaala/readTextFile`: the file's text as the editor holds it."""
        params = {"clientId": self.client.client_id, "conversationId": conversation_id, "path": path}
        result = await self.protocol.send_request_async(PREFIX + "readTextFile", params)
        text = result.get("text") if isinstance(result, dict) else None
        if not isinstance(text, str):
            raise ValueError("readTextFile answered no text")
        return text

    async def _write_text_file(self, conversation_id: str, path: str, text: str) -> None:
        """The server->client request `openvaala/writeTextFile`: the editor writes the file."""
        params = {"clientId": self.client.client_id, "conversationId": conversation_id, "path": path, "text": text}
        await self.protocol.send_request_async(PREFIX + "writeTextFile", params)

    # Subscriptions

    def _attach(self, sub: Subscription) -> None:
        self.spawn(self._pump(sub))

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
                self.protocol.notify(method, params)
            await self.writer.drain()
        if self.state is not ConnectionState.CLOSED:
            self.protocol.notify(*closed_notification(sub))


def _not_found(method: str) -> WireError:
    return error(METHOD_NOT_FOUND, f"Method Not Found: {messages.quote(method)[1:-1]}")


def _handler(spec: RequestSpec) -> Callable[[Connection, Any], Any]:
    async def handler(ls: Connection, params: Any) -> Any:
        return await ls.call(spec, params)

    handler.__name__ = spec.runtime
    return handler
