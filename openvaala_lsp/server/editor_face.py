"""What any LSP editor gets of openvaala, with no plugin of ours (Helix, Emacs eglot, Sublime LSP,
Kate, Neovim's own client): LSP's own requests and notifications, translated into runtime calls.

- Open documents are synced into pygls' workspace; the agent's file tools read a buffer's unsaved
  text from it (`Client.open_buffer`) and say so.
- Code actions on a selection or a diagnostic ("Ask openvaala", "Explain with openvaala", "Fix with
  openvaala") and the command `openvaala.ask` (`workspace/executeCommand`, a prompt as its argument)
  start a turn in the project's conversation, with the selection, the file and the diagnostics as
  context. The project's conversation is the newest one whose directory is the first workspace
  folder, made when there is none.
- A running turn is work-done progress (`$/progress`: the tool it runs; cancelling it interrupts the
  turn), or log-type `window/showMessage`s in an editor without it (eglot 1.9); its end is a
  `window/showMessage` (the answer, or why it failed), the whole answer goes to
  `window/logMessage`, and with `initializationOptions.openvaala.openChangedFiles` the files it
  wrote open with `window/showDocument`.
- A tool call that asks first is a `window/showMessageRequest`: allow once, allow for this
  conversation, or deny.

It drives the runtime through a client of its own (`Client`), beside the connection's, so its
subscription feeds these messages and not `openvaala/*` notifications the editor does not know.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from openvaala_lsp.model import Content, ExecutorSettings, ItemType, TurnStatus, WorkspaceFolder, new_id
from openvaala_lsp.protocol import api, events
from openvaala_lsp.protocol.errors import ConversationNotFound, InvalidParams, RuntimeApiError
from openvaala_lsp.runtime.client import Client
from openvaala_lsp.runtime.subscriptions import Subscription
from openvaala_lsp.server.dispatch import runtime_error
from openvaala_lsp.tools.base import OpenBuffer

if TYPE_CHECKING:
    from openvaala_lsp.runtime.core import Runtime

logger = logging.getLogger(__name__)

ASK_COMMAND = "openvaala.ask"
ASK, EXPLAIN, FIX = "ask", "explain", "fix"
TITLES = {ASK: "Ask openvaala", EXPLAIN: "Explain with openvaala", FIX: "Fix with openvaala"}
MAX_SELECTION_LINES = 400  # of a selection sent as context; the agent reads the rest itself
MAX_SHOWN_ANSWER = 1000  # characters of an answer in window/showMessage (all of it goes to the log)
MAX_OPENED_FILES = 5
CONVERSATIONS_SEARCHED = 200  # newest conversations looked through for the project's
FILE_TOOLS = ("write_file", "edit")
ALLOW_ONCE, ALLOW_ALWAYS, DENY = "Allow once", "Allow for this conversation", "Deny"
DECISIONS = {
    ALLOW_ONCE: api.ApprovalDecision.ALLOW_ONCE,
    ALLOW_ALWAYS: api.ApprovalDecision.ALLOW_ALWAYS,
    DENY: api.ApprovalDecision.DENY,
}


class Connection(Protocol):
    """What the face needs of its connection (`connection.Connection`, a pygls LanguageServer too)."""

    client: Client
    cwd: str

    async def runtime(self) -> Runtime: ...

    def spawn(self, work: Coroutine[Any, Any, Any]) -> None: ...

    async def workspace_folders(self) -> list[WorkspaceFolder]: ...


class EditorFace:
    """The LSP face of one editor connection."""

    def __init__(self, server: LanguageServer, connection: Connection) -> None:
        self.server = server
        self.connection = connection
        self.client: Client | None = None  # made at the first ask
        self.conversation_id: str | None = None
        self.subscription: str | None = None
        self.open_changed_files = False  # initializationOptions.openvaala.openChangedFiles
        self.editor_name: str | None = None  # initialize's clientInfo.name ("Neovim", "Eglot")
        self._watching: set[asyncio.Task[None]] = set()
        self._progress: dict[str, str | None] = {}  # turn id -> progress token; None: told in messages
        self._answers: dict[str, str] = {}  # turn id -> the last answer text so far
        self._written: dict[str, list[str]] = {}  # turn id -> files its tools wrote

    def register(self) -> None:
        kinds = [types.CodeActionKind.QuickFix, types.CodeActionKind.Empty]

        # functions, not bound methods: pygls marks what it registers with attributes of its own
        @self.server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=kinds))
        def code_actions(params: types.CodeActionParams) -> list[types.CodeAction]:
            return self.code_actions(params)

        @self.server.command(ASK_COMMAND)
        async def ask(*arguments: Any) -> dict[str, str]:
            return await self.ask(*arguments)

    # Documents

    def open_buffer(self, real: str) -> OpenBuffer | None:
        """The text of `real` (a real path) as this editor holds it open, if it does."""
        if self.server.protocol._workspace is None:  # not initialized yet
            return None
        for uri, document in list(self.server.workspace.text_documents.items()):
            path = to_fs_path(uri)
            if path is not None and os.path.realpath(path) == real:
                editor = self.connection.client.name or self.editor_name or "the editor"
                return OpenBuffer(text=document.source, editor=editor, version=document.version)
        return None

    # Asking

    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        only = params.context.only
        wanted = [ASK, EXPLAIN] + ([FIX] if params.context.diagnostics else [])
        actions = []
        for action in wanted:
            kind = types.CodeActionKind.QuickFix if action == FIX else types.CodeActionKind.Empty
            if only and not any(kind == given or kind.startswith(f"{given}.") for given in only):
                continue
            argument: dict[str, Any] = {
                "action": action,
                "uri": params.text_document.uri,
                "range": _range_json(params.range),
            }
            diagnostics = params.context.diagnostics if action == FIX else []
            if diagnostics:
                argument["diagnostics"] = [_diagnostic_text(d) for d in diagnostics]
            actions.append(
                types.CodeAction(
                    title=TITLES[action],
                    kind=kind,
                    diagnostics=list(diagnostics) or None,
                    command=types.Command(title=TITLES[action], command=ASK_COMMAND, arguments=[argument]),
                )
            )
        return actions

    async def ask(self, *arguments: Any) -> dict[str, str]:
        """`openvaala.ask`: a prompt (a string), or a code action's argument; a turn starts with it.
        Answers {conversationId, itemId} once the input is saved."""
        prompt = self._prompt(arguments)
        runtime = await self.connection.runtime()
        try:
            conversation_id = await self._conversation(runtime)
            params = api.SubmitInputParams(conversation_id=conversation_id, content=[Content(type="text", text=prompt)])
            assert self.client is not None
            submitted = await runtime.submit_input(self.client, params)
        except RuntimeApiError as exc:
            raise runtime_error(exc) from None
        return {"conversationId": conversation_id, "itemId": submitted.item_id}

    def _prompt(self, arguments: tuple[Any, ...]) -> str:
        if not arguments:
            raise runtime_error(_bad("openvaala.ask takes a prompt, or a code action's argument"))
        first = arguments[0]
        if isinstance(first, str) and first.strip():
            return first.strip()
        if not isinstance(first, dict) or first.get("action") not in TITLES or not isinstance(first.get("uri"), str):
            raise runtime_error(_bad("openvaala.ask takes a prompt (a string), or {action, uri, range}"))
        return self._context_prompt(first)

    def _context_prompt(self, argument: dict[str, Any]) -> str:
        uri = argument["uri"]
        path = to_fs_path(uri) or uri
        shown = self._relative(path)
        first_line, last_line, text = self._selection(uri, argument.get("range"))
        where = f"{shown}, lines {first_line + 1}-{last_line + 1}"
        action = argument["action"]
        if action == EXPLAIN:
            head = f"Explain what this code in {where} does, and why; change nothing."
        elif action == FIX:
            problems = [str(p) for p in argument.get("diagnostics") or []]
            head = f"Fix these problems in {where}:\n" + "\n".join(f"- {p}" for p in problems or ["(none named)"])
        else:
            head = (
                f"The user selected this in {where} and asks you about it: if it holds a question or an "
                "instruction (a comment, say), answer it or carry it out; else say what it does and what "
                "you would improve."
            )
        return f"{head}\n\n```\n{text}\n```"

    def _selection(self, uri: str, given: Any) -> tuple[int, int, str]:
        """The lines a range covers (the cursor's line for an empty one), from the editor's buffer."""
        document = self.server.workspace.get_text_document(uri)
        lines = document.lines
        start = end = 0
        if isinstance(given, dict):
            start = _line(given.get("start"))
            end = _line(given.get("end"))
            if end > start and isinstance(given.get("end"), dict) and given["end"].get("character") == 0:
                end -= 1  # a selection up to a line's start holds no text of that line
        start = max(0, min(start, len(lines) - 1)) if lines else 0
        end = max(start, min(end, len(lines) - 1, start + MAX_SELECTION_LINES - 1)) if lines else 0
        return start, end, "".join(lines[start : end + 1]).rstrip("\n")

    def _relative(self, path: str) -> str:
        """`path` from the workspace folder it lies in (the model works there)."""
        workspace = self.server.workspace
        roots = [to_fs_path(folder.uri) for folder in workspace.folders.values()] + [workspace.root_path]
        for root in roots:
            if root and (path == root or path.startswith(root.rstrip("/") + "/")):
                return os.path.relpath(path, root)
        return path

    # The project's conversation

    async def _conversation(self, runtime: Runtime) -> str:
        client = self._client(runtime)
        if self.conversation_id is not None:
            try:
                record = await runtime.get_conversation(
                    client, api.GetConversationParams(conversation_id=self.conversation_id)
                )
                if not record.archived:
                    return self.conversation_id
            except ConversationNotFound:
                pass
        root = (await self.connection.workspace_folders())[0].path
        found = await self._project_conversation(runtime, client, root)
        if found is None:
            settings = ExecutorSettings(directory=root)
            created = await runtime.create_conversation(
                client, api.CreateConversationParams(executor_settings=settings)
            )
            found = created.id
        await runtime.open_conversation(client, api.OpenConversationParams(conversation_id=found))
        sessions = await runtime.list_sessions(client, api.ListSessionsParams(conversation_id=found, limit=1))
        subscribed = await runtime.subscribe_session(
            client, api.SubscribeSessionParams(conversation_id=found, session_id=sessions.items[0].id)
        )
        if self.subscription is not None:
            await runtime.unsubscribe(client, api.UnsubscribeParams(subscription_id=self.subscription))
        self.conversation_id, self.subscription = found, subscribed.subscription_id
        return found

    async def _project_conversation(self, runtime: Runtime, client: Client, root: str) -> str | None:
        """The newest conversation working in `root` that is not archived."""
        cursor: str | None = None
        seen = 0
        while seen < CONVERSATIONS_SEARCHED:
            page = await runtime.list_conversations(
                client, api.ListConversationsParams(cursor=cursor, limit=100, archived=False)
            )
            for entry in page.items:
                if entry.conversation.executor_settings.directory == root:
                    return entry.conversation.id
            seen += len(page.items)
            cursor = page.next_cursor
            if cursor is None:
                return None
        return None

    def _client(self, runtime: Runtime) -> Client:
        if self.client is None:
            own = self.connection.client
            self.client = Client(
                client_id=new_id("client"),
                name=own.name,
                approvals=True,  # answered with window/showMessageRequest
                environment=own.environment,
                workspace_folders=self.connection.workspace_folders,
                attach=self._attach,
            )
        runtime.connect(self.client)
        return self.client

    def close(self, runtime: Runtime | None) -> None:
        for task in list(self._watching):
            task.cancel()
        if runtime is not None and self.client is not None:
            runtime.disconnect(self.client)

    # The turns, as the editor shows them

    def _attach(self, sub: Subscription) -> None:
        task = asyncio.get_running_loop().create_task(self._watch(sub))
        self._watching.add(task)
        task.add_done_callback(self._watching.discard)

    async def _watch(self, sub: Subscription) -> None:
        while batch := await sub.next_batch(512):
            for event in batch:
                try:
                    await self._on(event)
                except Exception:  # one event the editor could not be told of stops no other
                    logger.exception("the editor could not be told of %s", type(event).__name__)

    async def _on(self, event: Any) -> None:
        if isinstance(event, events.TurnStarted):
            self._answers[event.turn.id] = ""
            self._written[event.turn.id] = []
            await self._begin(event.turn.id)
        elif isinstance(event, events.ItemCompleted):
            self._item(event)
        elif isinstance(event, events.ApprovalRequested):
            self.connection.spawn(self._approve(event))
        elif isinstance(event, events.TurnCompleted):
            self._finish(event.turn)

    def _item(self, event: events.ItemCompleted) -> None:
        """A tool call whose arguments are whole (it runs next), or an answer."""
        item = event.item
        turn_id = item.turn_id or ""
        if item.type == ItemType.TOOL_CALL and item.tool_call is not None:
            call = item.tool_call
            arguments = _arguments(call.arguments)
            self._report(turn_id, f"{call.name} {_summary(arguments)}".strip())
            if call.name in FILE_TOOLS and isinstance(path := arguments.get("path"), str):
                self._written.setdefault(turn_id, []).append(path)
        elif item.type == ItemType.ASSISTANT_MESSAGE:
            text = "".join(part.text or "" for part in item.content or [] if part.type == "text")
            if text.strip():
                self._answers[turn_id] = text.strip()

    async def _begin(self, turn_id: str) -> None:
        """Work-done progress; an editor without it (eglot 1.9) is told the steps in messages."""
        window = self.server.client_capabilities.window
        self._progress[turn_id] = None
        if not (window and window.work_done_progress):
            self._report(turn_id, "working")
            return
        token = f"openvaala-{turn_id}"
        progress = self.server.work_done_progress
        try:
            await progress.create_async(token)
        except Exception as exc:  # the editor refused it
            logger.info("no work-done progress: %s", exc)
            self._report(turn_id, "working")
            return
        self._progress[turn_id] = token
        progress.begin(token, types.WorkDoneProgressBegin(title="openvaala", message="working", cancellable=True))
        progress.tokens[token].add_done_callback(lambda done: self._cancelled(turn_id, done))

    def _cancelled(self, turn_id: str, done: Any) -> None:
        if done.cancelled() and turn_id in self._progress and self.conversation_id is not None:
            self.connection.spawn(self._interrupt(self.conversation_id))

    async def _interrupt(self, conversation_id: str) -> None:
        runtime = await self.connection.runtime()
        assert self.client is not None
        try:
            await runtime.interrupt_turn(self.client, api.InterruptTurnParams(conversation_id=conversation_id))
        except RuntimeApiError as exc:  # it ended meanwhile
            logger.info("no turn to interrupt: %s", exc)

    def _report(self, turn_id: str, message: str) -> None:
        if turn_id not in self._progress:
            return
        token = self._progress[turn_id]
        if token is not None:
            self.server.work_done_progress.report(token, types.WorkDoneProgressReport(message=message[:200]))
        else:  # a log-type message: the answer that ends the turn is info
            told = types.ShowMessageParams(type=types.MessageType.Log, message=f"openvaala: {message[:200]}")
            self.server.window_show_message(told)

    def _finish(self, turn: Any) -> None:
        answer = self._answers.pop(turn.id, "")
        written = self._written.pop(turn.id, [])
        token = self._progress.pop(turn.id, None)
        if turn.status == TurnStatus.COMPLETED:
            said, kind = answer or "done (no answer)", types.MessageType.Info
        elif turn.status == TurnStatus.INTERRUPTED:
            said, kind = "interrupted", types.MessageType.Info
        else:
            said = f"failed: {turn.error.message if turn.error else 'unknown error'}"
            kind = types.MessageType.Error
        if token is not None:
            progress = self.server.work_done_progress
            progress.end(token, types.WorkDoneProgressEnd(message=said.splitlines()[0][:200]))
            progress.tokens.pop(token, None)
        shown = said if len(said) <= MAX_SHOWN_ANSWER else said[: MAX_SHOWN_ANSWER - 1] + "…"
        self.server.window_log_message(types.LogMessageParams(type=kind, message=f"openvaala: {said}"))
        self.server.window_show_message(types.ShowMessageParams(type=kind, message=f"openvaala: {shown}"))
        if self.open_changed_files and written:
            self.connection.spawn(self._show(written))

    async def _show(self, written: list[str]) -> None:
        window = self.server.client_capabilities.window
        if not (window and window.show_document and window.show_document.support):
            return
        root = self.server.workspace.root_path or self.connection.cwd
        for path in list(dict.fromkeys(written))[:MAX_OPENED_FILES]:
            uri = from_fs_path(_absolute(path, root))
            if uri is not None:
                await self.server.window_show_document_async(types.ShowDocumentParams(uri=uri, take_focus=False))

    async def _approve(self, event: events.ApprovalRequested) -> None:
        approval = event.approval
        what = approval.command or _summary(approval.arguments)
        reason = f" ({approval.reason})" if approval.reason else ""
        asked = types.ShowMessageRequestParams(
            type=types.MessageType.Warning,
            message=f"openvaala asks to run {approval.tool}: {what}{reason}",
            actions=[types.MessageActionItem(title=title) for title in DECISIONS],
        )
        try:
            chosen = await self.server.window_show_message_request_async(asked)
        except Exception as exc:  # the editor cannot ask: the call is denied, not left waiting
            logger.info("could not ask the editor: %s", exc)
            chosen = None
        decision = DECISIONS.get(chosen.title if chosen is not None else DENY, api.ApprovalDecision.DENY)
        if self.conversation_id is None or self.client is None:
            return
        runtime = await self.connection.runtime()
        params = api.AnswerApprovalParams(
            conversation_id=self.conversation_id, item_id=event.item_id, decision=decision
        )
        try:
            await runtime.answer_approval(self.client, params)
        except RuntimeApiError as exc:  # answered meanwhile, in another editor
            logger.info("approval already answered: %s", exc)


def _bad(message: str) -> RuntimeApiError:
    return InvalidParams(message)


def _absolute(path: str, root: str) -> str:
    """A path a tool was given, as written (absolute, or relative to the workspace)."""
    return os.path.normpath(path if os.path.isabs(path) else os.path.join(root, path))


def _line(position: Any) -> int:
    line = position.get("line") if isinstance(position, dict) else None
    return line if isinstance(line, int) and not isinstance(line, bool) and line >= 0 else 0


def _range_json(given: types.Range) -> dict[str, Any]:
    return {
        "start": {"line": given.start.line, "character": given.start.character},
        "end": {"line": given.end.line, "character": given.end.character},
    }


def _diagnostic_text(diagnostic: types.Diagnostic) -> str:
    source = f" ({diagnostic.source})" if diagnostic.source else ""
    severity = types.DiagnosticSeverity(diagnostic.severity).name.lower() if diagnostic.severity else "problem"
    return f"line {diagnostic.range.start.line + 1}: {severity}: {diagnostic.message}{source}"


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _summary(arguments: dict[str, Any]) -> str:
    """A tool call's arguments in a few words: its command, path or pattern."""
    for key in ("command", "path", "pattern", "query"):
        if isinstance(value := arguments.get(key), str):
            return value.splitlines()[0][:120] if value else ""
    return ""
