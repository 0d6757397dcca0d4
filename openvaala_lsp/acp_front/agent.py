"""The ACP agent: each ACP method as requests of the runtime's LSP-framed protocol, each runtime event
as `session/update`s, each approval as `session/request_permission` (docs/ACP.md has the table)."""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from acp import PROTOCOL_VERSION, Client, RequestError, helpers
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    AvailableCommand,
    ClientCapabilities,
    CurrentModeUpdate,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    SessionAdditionalDirectoriesCapabilities,
    SessionCapabilities,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionInfo,
    SessionListCapabilities,
    SessionMode,
    SessionModeState,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    ToolCallUpdate,
)

from openvaala_lsp import __version__
from openvaala_lsp.acp_front import updates
from openvaala_lsp.acp_front.content import Block, invalid_params, prompt_response, runtime_content
from openvaala_lsp.acp_front.host_link import HostClient, connect_host, start_standalone
from openvaala_lsp.acp_front.mcp_servers import EditorMcpServers
from openvaala_lsp.acp_front.sessions import AcpSession
from openvaala_lsp.protocol.codes import CODES
from openvaala_lsp.wire.client import ResponseError, ServerBroke

logger = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

COMMANDS = {
    "compact": "summarize the conversation so far to free the model's context",
    "fork": "copy this conversation into a new one (load it by its id)",
    "title": "name this conversation: /title <text>",
    "undo": "take back the last turn: its file changes and its place in the model's context",
}
PERMISSION_OPTIONS = [
    PermissionOption(option_id="allowOnce", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="allowAlways", name="Allow always", kind="allow_always"),
    PermissionOption(option_id="deny", name="Reject", kind="reject_once"),
]
MODEL_OPTION = "model"
PAGE = 500
MAX_RESTARTS = 3  # host restarts within RESTART_WINDOW, as the LSP front allows
RESTART_WINDOW = 60.0


def lost_host() -> RequestError:
    return RequestError(CODES["runtimeStopped"], "the openvaala runtime host stopped", {"kind": "runtimeStopped"})


def translated(method: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """The runtime's errors as ACP errors with the same code and kind; a host gone is `runtimeStopped`."""

    @functools.wraps(method)
    async def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await method(*args, **kwargs)
        except ResponseError as exc:
            raise RequestError(int(exc.code), exc.message, exc.data) from None
        except (ServerBroke, ConnectionError):
            raise lost_host() from None

    return call


class OpenvaalaAgent:
    def __init__(self, *, standalone: bool = False) -> None:
        self.standalone = standalone
        self.editor: Client | None = None
        self.host: HostClient | None = None
        self.sessions: dict[str, AcpSession] = {}
        self.by_subscription: dict[str, AcpSession] = {}
        self.client_name = "ACP editor"
        self.capabilities = ClientCapabilities()
        self.folders: list[str] = []
        self.client_id = f"acp-{os.getpid()}-{id(self):x}"  # names this connection's client tools
        self._connecting = asyncio.Lock()
        self._events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._pump: asyncio.Task[None] | None = None
        self._restarts: list[float] = []
        self._tasks: set[asyncio.Task[Any]] = set()

    def on_connect(self, conn: Client) -> None:
        self.editor = conn

    # The link to the runtime

    async def _host(self) -> HostClient:
        async with self._connecting:
            if self.host is None or self.host.broken is not None:
                self.host = await self._connect()
            return self.host

    async def _connect(self) -> HostClient:
        restarting = self.host is not None
        if restarting:
            now = asyncio.get_running_loop().time()
            self._restarts = [t for t in self._restarts if now - t < RESTART_WINDOW] + [now]
            if self.standalone or len(self._restarts) > MAX_RESTARTS:
                raise lost_host()
        open_link = start_standalone if self.standalone else connect_host
        host = await open_link(self._events.put_nowait)
        host.on_lost = self._lost
        host.handlers["openvaala/callClientTool"] = self._call_client_tool
        host.handlers["openvaala/readTextFile"] = self._read_text_file
        host.handlers["openvaala/writeTextFile"] = self._write_text_file
        options: dict[str, Any] = {
            "clientName": self.client_name,
            "clientId": self.client_id,
            "approvals": True,
            "eventBatchMs": 5,
        }
        fs = self.capabilities.fs
        if fs is not None and fs.read_text_file:  # the file tools read what the editor holds, saved or not
            options["readTextFile"] = True
        if fs is not None and fs.write_text_file:  # and write through it, which records the edit
            options["writeTextFile"] = True
        folders = [{"uri": Path(f).as_uri(), "name": os.path.basename(f) or f} for f in self.folders]
        await host.initialize({"workspaceFolders": folders or None, "initializationOptions": {"openvaala": options}})
        if self._pump is None:
            self._pump = asyncio.get_running_loop().create_task(self._pump_events())
        if restarting:  # the new host has nothing open: open and subscribe every session again
            for session in list(self.sessions.values()):
                await host.request("openvaala/openConversation", {"conversationId": session.conversation_id})
                await self._subscribe(host, session)
                if session.mcp_tools:
                    await host.request("openvaala/setClientMcpServers", self._tools_of(session))
        return host

    async def _request(self, method: str, params: Any = None) -> Any:
        """Never sent twice: a request the host took with it is the caller's `runtimeStopped`."""
        host = await self._host()
        return await host.request(f"openvaala/{method}", params)

    def _lost(self) -> None:
        """The host went away: the prompts waiting end with `runtimeStopped` (their turns were cut),
        and a new host is reached now, so the sessions stream again without waiting for a request."""
        for session in self.sessions.values():
            session.fail_all(lost_host())
        if not self.standalone:
            self._spawn(self._reconnect())

    async def _reconnect(self) -> None:
        try:
            await self._host()
        except (RequestError, ResponseError, ServerBroke, OSError) as exc:
            logger.warning("the runtime host could not be reached again: %s", exc)

    async def _subscribe(self, host: HostClient, session: AcpSession) -> dict[str, Any]:
        params = {"conversationId": session.conversation_id, "sessionId": session.session_id}
        subscribed: dict[str, Any] = await host.request("openvaala/subscribeSession", params)
        self.by_subscription.pop(session.subscription_id, None)
        session.subscription_id = str(subscribed["subscriptionId"])
        self.by_subscription[session.subscription_id] = session
        for approval in subscribed.get("pendingApprovals") or []:
            self._spawn(self._ask(session, approval))
        return subscribed

    # Runtime events -> ACP

    async def _pump_events(self) -> None:
        while True:
            message = await self._events.get()
            try:
                await self._on_notification(message)
            except Exception:  # one event that cannot be told must not stop the stream
                logger.exception("an event could not be relayed to the ACP editor")

    async def _on_notification(self, message: dict[str, Any]) -> None:
        params = message.get("params") or {}
        session = self.by_subscription.get(str(params.get("subscriptionId")))
        if session is None:
            return
        if message.get("method") == "openvaala/subscriptionClosed":
            reason = params.get("reason") or {}
            if reason.get("kind") != "unsubscribed" and session.id in self.sessions:
                self._spawn(self._resubscribe(session))
            return
        if message.get("method") != "openvaala/sessionEvent":
            return
        for event in params.get("events") or []:
            if session.held is not None:
                session.held.append(event)
            else:
                await self._relay(session, event)

    async def _relay(self, session: AcpSession, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "itemCompleted":
            item = event.get("item") or {}
            if item.get("type") == "userMessage" and item.get("turnId"):
                session.input_taken(str(item.get("id")), str(item["turnId"]))
        elif kind == "pendingInputRemoved" and event.get("reason") != "taken":
            session.input_dropped(str(event.get("itemId")))
        elif kind == "turnCompleted":
            session.turn_ended(event.get("turn") or {})
        elif kind == "approvalRequested":
            self._spawn(self._ask(session, event))
        for update in session.translator.event(event):
            await self._send(session, update)

    async def _send(self, session: AcpSession, update: Any) -> None:
        if self.editor is not None:
            await self.editor.session_update(session_id=session.id, update=update)

    async def _resubscribe(self, session: AcpSession) -> None:
        """A subscription the runtime closed (too slow, reconfigured): subscribe again, and end the
        prompts whose turns ended meanwhile."""
        try:
            await self._subscribe(await self._host(), session)
            waiting = list(session.turns)
            if waiting:
                ended = await self._request("getTurns", {"conversationId": session.conversation_id, "turnIds": waiting})
                for turn in ended.get("turns") or []:
                    if turn.get("status") != "running":
                        session.turn_ended(turn)
        except (ResponseError, ServerBroke, RequestError):
            logger.warning("could not subscribe again to %s", session.conversation_id)

    async def _ask(self, session: AcpSession, request: dict[str, Any]) -> None:
        """An approval as session/request_permission; the first answer of any editor wins."""
        item_id = str(request.get("itemId"))
        approval = request.get("approval") or {}
        if item_id in session.asked or self.editor is None:
            return
        session.asked.add(item_id)
        tool = str(approval.get("tool", ""))
        arguments = approval.get("arguments")
        call = ToolCallUpdate(
            tool_call_id=item_id,
            title=str(approval.get("command") or updates.title(tool, arguments)),
            kind=updates.tool_kind(tool),
            status="pending",
            raw_input=arguments,
            locations=updates.locations(arguments),
        )
        try:
            answer = await self.editor.request_permission(
                session_id=session.id, tool_call=call, options=PERMISSION_OPTIONS
            )
            outcome = answer.outcome
            decision = outcome.option_id if isinstance(outcome, AllowedOutcome) else "deny"
            if decision not in ("allowOnce", "allowAlways", "deny"):
                decision = "deny"
            await self._request(
                "answerApproval",
                {"conversationId": session.conversation_id, "itemId": item_id, "decision": decision},
            )
        except ResponseError as exc:
            if exc.kind != "invalidState":  # invalidState: another editor answered first
                logger.warning("approval %s: %s", item_id, exc)
        except (RequestError, ServerBroke, ConnectionError) as exc:
            logger.warning("approval %s not answered: %s", item_id, exc)

    # The editor's MCP servers

    def _tools_of(self, session: AcpSession) -> dict[str, Any]:
        return {"conversationId": session.conversation_id, "clientId": self.client_id, "servers": session.mcp_tools}

    async def _start_mcp(self, session: AcpSession, servers: list[Any] | None, cwd: str) -> None:
        if not servers:
            return
        session.mcp = EditorMcpServers(servers, cwd)
        session.mcp_tools = await session.mcp.start()
        if session.mcp_tools:
            await self._request("setClientMcpServers", self._tools_of(session))

    async def _call_client_tool(self, params: Any) -> dict[str, Any]:
        """The runtime runs a tool of one of the editor's MCP servers; never raises (an exception here
        would break the link to the host)."""
        params = params if isinstance(params, dict) else {}
        session = next((s for s in self.sessions.values() if s.conversation_id == params.get("conversationId")), None)
        if session is None or session.mcp is None:
            return {"content": [{"type": "text", "text": "no such MCP server in this editor"}], "isError": True}
        try:
            return await session.mcp.call(str(params.get("server")), str(params.get("tool")), params.get("arguments"))
        except Exception as exc:
            logger.exception("an MCP tool of the editor failed")
            return {"content": [{"type": "text", "text": f"the tool failed: {exc}"}], "isError": True}

    def _editor_session(self, params: Any) -> tuple[Client, AcpSession, str]:
        """The editor, the ACP session of the conversation a file request names, and the file's path."""
        params = params if isinstance(params, dict) else {}
        session = next((s for s in self.sessions.values() if s.conversation_id == params.get("conversationId")), None)
        path = params.get("path")
        if self.editor is None or session is None or not isinstance(path, str):
            raise ValueError("no ACP session of this conversation in this editor")
        return self.editor, session, path

    async def _read_text_file(self, params: Any) -> dict[str, Any]:
        """The runtime's read_file asks for a file's text: the editor's `fs/read_text_file`."""
        editor, session, path = self._editor_session(params)
        answer = await editor.read_text_file(session_id=session.id, path=path)
        return {"text": answer.content}

    async def _write_text_file(self, params: Any) -> dict[str, Any]:
        """The runtime's write_file or edit writes a file: the editor's `fs/write_text_file`."""
        editor, session, path = self._editor_session(params)
        text = params.get("text")
        if not isinstance(text, str):
            raise ValueError("writeTextFile without text")
        await editor.write_text_file(session_id=session.id, path=path, content=text)
        return {}

    def _spawn(self, work: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ACP -> the runtime

    @translated
    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        if client_info is not None:
            self.client_name = (client_info.title or client_info.name or self.client_name)[:100]
        self.capabilities = client_capabilities or ClientCapabilities()
        await self._host()
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=True, audio=False, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=False),
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities(), additional_directories=SessionAdditionalDirectoriesCapabilities()
                ),
            ),
            agent_info=Implementation(name="openvaala", title="openvaala", version=__version__),
            auth_methods=[],
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        raise invalid_params("openvaala needs no authentication: its models are configured with `openvaala setup`")

    async def _add_folder(self, cwd: str, field: str) -> None:
        if not os.path.isabs(cwd) or not await asyncio.to_thread(os.path.isdir, cwd):
            raise invalid_params(f"{field}: not an absolute path of a directory: {cwd!r}")
        if cwd in self.folders:
            return
        self.folders.append(cwd)
        host = await self._host()
        event = {"added": [{"uri": Path(cwd).as_uri(), "name": os.path.basename(cwd) or cwd}], "removed": []}
        await host.notify("workspace/didChangeWorkspaceFolders", {"event": event})

    @translated
    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, additional_directories: list[str] | None = None, **_: Any
    ) -> NewSessionResponse:
        await self._add_folder(cwd, "$.cwd")
        for index, folder in enumerate(additional_directories or []):  # the agent's workspace too
            await self._add_folder(folder, f"$.additionalDirectories[{index}]")
        conversation = await self._request("createConversation", {"executorSettings": {"directory": cwd}})
        session = await self._open(conversation, cwd)
        await self._subscribe(await self._host(), session)
        await self._start_mcp(session, mcp_servers, cwd)
        self._spawn(self._send(session, helpers.update_available_commands(_commands())))
        return NewSessionResponse(
            session_id=session.id, modes=await self._modes(session), config_options=await self._options(session)
        )

    async def _open(self, conversation: dict[str, Any], cwd: str, acp_id: str | None = None) -> AcpSession:
        sessions = await self._request("listSessions", {"conversationId": conversation["id"]})
        main = sessions["items"][0]
        session = AcpSession(
            id=acp_id or str(conversation["id"]),
            conversation_id=str(conversation["id"]),
            session_id=str(main["id"]),
            agent_name=str(conversation.get("agentName") or main.get("agentName") or ""),
            cwd=cwd,
        )
        self.sessions[session.id] = session
        return session

    @translated
    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        **_: Any,
    ) -> LoadSessionResponse:
        await self._add_folder(cwd, "$.cwd")
        for index, folder in enumerate(additional_directories or []):  # the agent's workspace too
            await self._add_folder(folder, f"$.additionalDirectories[{index}]")
        old = self.sessions.pop(session_id, None)
        if old is not None:
            self.by_subscription.pop(old.subscription_id, None)
            await self._unsubscribe(old)
            if old.mcp is not None:
                await old.mcp.close()
        conversation = await self._request("openConversation", {"conversationId": session_id})
        session = await self._open(conversation, cwd)
        session.held = []  # events wait until the history is told
        try:
            subscribed = await self._subscribe(await self._host(), session)
            await self._replay(session, int(subscribed.get("lastSavedOrdinal") or 0))
        finally:
            await self._release(session)
        await self._start_mcp(session, mcp_servers, cwd)
        self._spawn(self._send(session, helpers.update_available_commands(_commands())))
        return LoadSessionResponse(modes=await self._modes(session), config_options=await self._options(session))

    async def _replay(self, session: AcpSession, last: int) -> None:
        """The conversation's log up to the subscription's snapshot, as session/updates."""
        cursor: Any = None
        while True:
            params = {"conversationId": session.conversation_id, "limit": PAGE, "order": "asc"}
            page = await self._request("listItems", params if cursor is None else {**params, "cursor": cursor})
            for logged in page.get("items") or []:
                if int(logged.get("ordinal") or 0) > last:
                    return
                for update in session.translator.item(logged.get("item") or {}):
                    await self._send(session, update)
            cursor = page.get("nextCursor")
            if cursor is None:
                return

    async def _unsubscribe(self, session: AcpSession) -> None:
        try:
            await self._request("unsubscribe", {"subscriptionId": session.subscription_id})
        except ResponseError:
            pass  # already closed

    @translated
    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **_: Any) -> ListSessionsResponse:
        params: dict[str, Any] = {"limit": 50, "order": "desc"}
        if cursor is not None:
            params["cursor"] = cursor
        page = await self._request("listConversations", params)
        infos = []
        for entry in page.get("items") or []:
            conversation = entry.get("conversation") or {}
            directory = (conversation.get("executorSettings") or {}).get("directory") or os.getcwd()
            if cwd is None or directory == cwd:
                infos.append(
                    SessionInfo(
                        session_id=str(conversation["id"]),
                        cwd=directory,
                        title=conversation.get("title") or None,
                        updated_at=entry.get("lastActivityAt") or conversation.get("updatedAt"),
                    )
                )
        next_cursor = page.get("nextCursor")
        return ListSessionsResponse(sessions=infos, next_cursor=None if next_cursor is None else str(next_cursor))

    def _session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError(
                CODES["conversationNotOpen"],
                f"no session {session_id!r} here: session/new or session/load first",
                {"kind": "conversationNotOpen"},
            )
        return session

    @translated
    async def prompt(self, prompt: list[Block], session_id: str, **_: Any) -> PromptResponse:
        session = self._session(session_id)
        content = runtime_content(prompt)
        command = _command(content)
        if command is not None:
            await self._command(session, *command)
            return PromptResponse(stop_reason="end_turn")
        # events wait until the input's id is known, so this editor's own prompt is not echoed back
        held = session.held is None
        if held:
            session.held = []
        try:
            params = {"conversationId": session.conversation_id, "content": content}
            item_id = str((await self._request("submitInput", params))["itemId"])
            session.translator.own_inputs.add(item_id)
            waiting = session.wait_input(item_id)
        finally:
            if held:
                await self._release(session)
        return prompt_response(await waiting)

    async def _release(self, session: AcpSession) -> None:
        """Relays the events held back, and those that come meanwhile, then lets them flow."""
        while session.held:
            await self._relay(session, session.held.pop(0))
        session.held = None

    async def cancel(self, session_id: str, **_: Any) -> None:
        """Withdraws this editor's prompts still queued and interrupts the running turn."""
        session = self.sessions.get(session_id)
        if session is None:
            return
        try:
            for item_id in list(session.inputs):
                try:
                    await self._request("withdrawInput", {"conversationId": session.conversation_id, "itemId": item_id})
                    session.input_dropped(item_id)
                except ResponseError:
                    pass  # taken by a turn meanwhile: the interrupt ends it
            if session.turns:
                await self._request("interruptTurn", {"conversationId": session.conversation_id})
        except ResponseError as exc:
            logger.info("cancel of %s: %s", session_id, exc)
        except ServerBroke:
            pass  # the turn ended with the host

    @translated
    async def set_session_mode(self, mode_id: str, session_id: str, **_: Any) -> SetSessionModeResponse:
        """A mode is an agent. A conversation's agent is fixed once it has turns; before its first,
        the session moves to a new conversation of that agent (the empty one is deleted)."""
        session = self._session(session_id)
        agents = await self._request("listAgents")
        if mode_id not in {a.get("name") for a in agents.get("agents") or []}:
            raise invalid_params(f"$.modeId: no agent {mode_id!r}")
        if mode_id == session.agent_name:
            return SetSessionModeResponse()
        turns = await self._request("listTurns", {"conversationId": session.conversation_id, "limit": 1})
        if turns.get("items"):
            raise RequestError(
                CODES["invalidState"],
                "a conversation keeps its agent once it has turns: start a new session in that mode",
                {"kind": "invalidState"},
            )
        await self._unsubscribe(session)
        self.by_subscription.pop(session.subscription_id, None)
        old = session.conversation_id
        created = await self._request(
            "createConversation", {"agentName": mode_id, "executorSettings": {"directory": session.cwd}}
        )
        moved = await self._open(created, session.cwd, acp_id=session.id)
        await self._subscribe(await self._host(), moved)
        moved.mcp, moved.mcp_tools = session.mcp, session.mcp_tools
        if moved.mcp_tools:
            await self._request("setClientMcpServers", self._tools_of(moved))
        await self._request("deleteConversation", {"conversationId": old})
        self._spawn(self._send(moved, CurrentModeUpdate(session_update="current_mode_update", current_mode_id=mode_id)))
        return SetSessionModeResponse()

    @translated
    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **_: Any
    ) -> SetSessionConfigOptionResponse:
        session = self._session(session_id)
        if config_id != MODEL_OPTION or not isinstance(value, str):
            raise invalid_params(f"$.configId: no option {config_id!r} (only {MODEL_OPTION!r})")
        refs = await self._models(session)
        if value not in refs:
            raise invalid_params(f"$.value: no model {value!r}")
        provider, _slash, name = value.partition("/")
        await self._request(
            "setSessionModel",
            {
                "conversationId": session.conversation_id,
                "sessionId": session.session_id,
                "model": {"model": {"provider": provider, "name": name}},
            },
        )
        return SetSessionConfigOptionResponse(config_options=await self._options(session))

    # Modes, models, commands

    async def _modes(self, session: AcpSession) -> SessionModeState:
        agents = await self._request("listAgents")
        modes = [
            SessionMode(id=str(a["name"]), name=str(a["name"]), description=a.get("description"))
            for a in agents.get("agents") or []
        ]
        current = session.agent_name or (modes[0].id if modes else "default")
        return SessionModeState(available_modes=modes, current_mode_id=current)

    async def _models(self, session: AcpSession) -> list[str]:
        listed = await self._request("listModels", {"agentName": session.agent_name} if session.agent_name else {})
        return [f"{m['ref']['provider']}/{m['ref']['name']}" for m in listed.get("models") or []]

    async def _options(self, session: AcpSession) -> list[Any]:
        refs = await self._models(session)
        if not refs:
            return []
        details = await self._request("getSessionById", {"sessionId": session.session_id})
        chosen = (details.get("model") or {}).get("model")
        if not chosen:
            listed = await self._request("listModels", {"agentName": session.agent_name} if session.agent_name else {})
            chosen = listed.get("agentDefaultModel")
        current = f"{chosen['provider']}/{chosen['name']}" if isinstance(chosen, dict) else refs[0]
        return [
            SessionConfigOptionSelect(
                type="select",
                id=MODEL_OPTION,
                name="Model",
                category="model",
                current_value=current if current in refs else refs[0],
                options=[SessionConfigSelectOption(value=ref, name=ref) for ref in refs],
            )
        ]

    async def _command(self, session: AcpSession, name: str, argument: str) -> None:
        conversation = {"conversationId": session.conversation_id}
        if name == "compact":
            await self._request("compactContext", conversation)
            said = "Compacting the conversation's context."
        elif name == "fork":
            fork = await self._request("forkConversation", conversation)
            said = f"Forked into conversation {fork['id']}: load that session to continue there."
        elif name == "title":
            if not argument:
                raise invalid_params("/title needs the new title: /title <text>")
            await self._request("setConversationTitle", {**conversation, "title": argument})
            said = f"Titled: {argument}"
        else:
            said = await self._undo(session)
        await self._send(session, helpers.update_agent_message_text(said))

    async def _undo(self, session: AcpSession) -> str:
        turns = await self._request(
            "listTurns", {"conversationId": session.conversation_id, "limit": 50, "order": "desc"}
        )
        last = next((t for t in turns.get("items") or [] if not t.get("revertedBy")), None)
        if last is None:
            return "Nothing to undo."
        reverted = await self._request(
            "revertTurn", {"conversationId": session.conversation_id, "turnId": last["id"], "history": True}
        )
        files = ", ".join(str(f.get("path")) for f in reverted.get("files") or []) or "no files"
        return f"Undid turn {last['id']} ({files})."

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for session in self.sessions.values():
            if session.mcp is not None:
                await session.mcp.close()
        if self._pump is not None:
            self._pump.cancel()
        host = self.host
        if host is not None:
            if host.broken is None:
                try:
                    async with asyncio.timeout(5):
                        await host.shutdown()
                except (ServerBroke, ConnectionError, TimeoutError, ResponseError):
                    pass
            if host.stop is not None:
                await host.stop()
            await host.close()


def _commands() -> list[AvailableCommand]:
    return [AvailableCommand(name=name, description=text) for name, text in COMMANDS.items()]


def _command(content: list[dict[str, Any]]) -> tuple[str, str] | None:
    """`/compact`, `/fork`, `/title <text>`, `/undo` as a prompt of one text block."""
    if len(content) != 1 or content[0].get("type") != "text":
        return None
    text = str(content[0].get("text") or "").strip()
    if not text.startswith("/"):
        return None
    name, _, argument = text[1:].partition(" ")
    return (name, argument.strip()) if name in COMMANDS else None
