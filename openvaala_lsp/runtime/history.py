"""Reading what happened: sessions, turns, items, a session's details and context usage, SQL on the
history, and its export as Parquet. Nothing here changes state (an export records only how far it got)."""

from __future__ import annotations

import asyncio
from typing import Any

from openvaala_lsp.definitions import ModelDefinition
from openvaala_lsp.model import ContextUsage, Item, LoggedItem, ModelRef, Order, Page, Session, TokenUsage, Turn
from openvaala_lsp.protocol import api
from openvaala_lsp.protocol.errors import (
    InvalidParams,
    NoModelConfigured,
    NotFound,
    Overloaded,
    RuntimeApiError,
    RuntimeStopped,
    SessionNotFound,
)
from openvaala_lsp.runtime import compaction, context, usage_export
from openvaala_lsp.runtime.client import Client
from openvaala_lsp.runtime.model_clients import resolve_model
from openvaala_lsp.runtime.session import agent_instructions
from openvaala_lsp.runtime.state import RuntimeState
from openvaala_lsp.storage.errors import QueryError, StorageClosedError, StorageOutOfMemory
from openvaala_lsp.storage.interfaces import MAX_RESULT_BYTES, context_items
from openvaala_lsp.tools.registry import local_tools

# queries one client runs at once: the storage's pool has more threads, so another client finds one
QUERIES_PER_CLIENT = 2


class History:
    def __init__(self, state: RuntimeState) -> None:
        self.state = state
        self._queries: dict[Client, set[asyncio.Task[Any]]] = {}  # each client's running queries

    async def list_sessions(self, client: Client, params: api.ListSessionsParams) -> Page[Session, str]:
        state = self.state
        await state.conversation(params.conversation_id)
        limit = params.limit or api.DEFAULT_LIMIT
        return await state.page(
            state.storage.list_sessions(params.conversation_id, cursor=params.cursor, limit=limit, order=Order.ASC)
        )

    async def get_session_by_id(self, client: Client, params: api.GetSessionByIdParams) -> Session:
        session = await self.state.storage.get_session(params.session_id)
        if session is None:
            raise SessionNotFound(f"session not found: {params.session_id}")
        return session

    async def get_session_details(self, client: Client, params: api.GetSessionDetailsParams) -> api.SessionDetails:
        state = self.state
        session = await state.session(params.conversation_id, params.session_id)
        calls = await state.storage.list_model_calls(params.conversation_id, session.id)
        info = state.runtime_info(session)
        runner = state.runner(session)
        return api.SessionDetails(
            session=session,
            info=info,
            turn_count=await state.storage.count_turns(params.conversation_id, session.id),
            item_count=await state.storage.count_items(params.conversation_id, session.id),
            usage=sum((call.usage for call in calls), start=TokenUsage()) if calls else info.usage,
            pending_inputs=runner.pending_infos() if runner else [],
        )

    async def list_turns(self, client: Client, params: api.ListTurnsParams) -> Page[Turn, str]:
        state = self.state
        await state.check_scope(params.conversation_id, params.session_id)
        return await state.page(
            state.storage.list_turns(
                params.conversation_id,
                session_id=params.session_id,
                cursor=params.cursor,
                limit=params.limit or api.DEFAULT_LIMIT,
                order=params.order,
            )
        )

    async def get_turns(self, client: Client, params: api.GetTurnsParams) -> api.GetTurnsResult:
        await self.state.check_scope(params.conversation_id, params.session_id)
        turns = await self.state.storage.get_turns(params.conversation_id, params.turn_ids)
        found = {turn.id for turn in turns}
        missing = [turn_id for turn_id in params.turn_ids if turn_id not in found]
        if missing:
            raise NotFound(f"turn not found: {', '.join(missing)}")
        if params.session_id is not None:
            turns = [turn for turn in turns if turn.session_id == params.session_id]
        return api.GetTurnsResult(turns=turns)

    async def list_items(self, client: Client, params: api.ListItemsParams) -> Page[LoggedItem, int]:
        await self.state.check_scope(params.conversation_id, params.session_id)
        if params.cursor is not None and params.cursor < 0:
            raise InvalidParams("must not be negative @ $.cursor")
        return await self.state.storage.list_items(
            params.conversation_id,
            session_id=params.session_id,
            cursor=params.cursor,
            limit=params.limit or api.DEFAULT_LIMIT,
            order=params.order,
            max_bytes=self.state.answer_bytes(),  # a page of screenshots ends early: one message
        )

    async def get_session_context_usage(
        self, client: Client, params: api.GetSessionContextUsageParams
    ) -> api.SessionContextUsage:
        state = self.state
        session = await state.session(params.conversation_id, params.session_id)
        opened = state.open.get(params.conversation_id)
        runner = state.runner(session)
        history = runner.loaded_history if runner else None
        if history is None:
            history = await context_items(state.storage, session.conversation_id, session.id)
        items = context.model_items(history)  # what the model sees, after any compaction
        definitions = await state.definitions_of(client, params.conversation_id)
        try:
            model: ModelDefinition | None = resolve_model(definitions, session.model, session.agent_name)
        except NoModelConfigured:
            model = None
        window = model.context_window if model else 0
        tools = opened.tools(definitions, session) if opened else local_tools()
        if runner is not None:
            instructions = runner.instructions(definitions)
        else:  # not loaded: what its next turn would send
            conversation = await state.conversation(params.conversation_id)
            directory = conversation.executor_settings.directory or (opened.directory() if opened else "/")
            instructions = agent_instructions(definitions, session.agent_name, directory)
        last = runner.last_call if runner else None
        return api.SessionContextUsage(
            items=[_item_tokens(item, context.estimate_item(item)) for item in items],
            next_request=runner.next_request_usage(window) if runner else ContextUsage(window=window),
            system_tokens=context.estimate_text(instructions),
            threshold_tokens=compaction.threshold(model),
            tool_tokens=context.estimate_tools(context.tool_specs(tools)),
            window=window,
            last_request=(
                api.LastRequestUsage(
                    estimated_tokens=last.usage.input_tokens if last.usage_estimated else 0,
                    model=ModelRef(provider=last.provider, name=last.model),
                    model_call_id=last.id,
                    usage=last.usage,
                )
                if last
                else None
            ),
        )

    async def query(self, client: Client, params: api.QueryParams) -> api.QueryResult:
        """SQL on the history; cancelling the call, or the client going, interrupts the query."""
        running = self._queries.setdefault(client, set())
        if len(running) >= QUERIES_PER_CLIENT:
            raise Overloaded(f"{QUERIES_PER_CLIENT} queries of this connection are running: wait for one, or cancel it")
        task = asyncio.current_task()
        assert task is not None
        running.add(task)
        timeout_ms = params.timeout_ms or api.DEFAULT_QUERY_TIMEOUT_MS
        try:
            async with asyncio.timeout(timeout_ms / 1000):  # cancels the call, which interrupts the query
                result = await self.state.storage.query(
                    params.sql,
                    params.parameters or [],
                    params.limit or api.DEFAULT_QUERY_LIMIT,
                    max_bytes=min(MAX_RESULT_BYTES, self.state.answer_bytes()),
                )
        except QueryError as exc:
            raise InvalidParams(f"{exc.message} @ $.{exc.field}") from None
        except TimeoutError:
            raise RuntimeApiError(  # kind `internal`: no kind of protocol 0.4 says "took too long"
                f"the query ran past its time limit of {timeout_ms} ms and was stopped: narrow it, or give it"
                f" more time with timeoutMs (at most {api.MAX_QUERY_TIMEOUT_MS})"
            ) from None
        except StorageOutOfMemory as exc:  # what the query asked of DuckDB, not a fault of the runtime's
            raise RuntimeApiError(f"{exc}; narrow the query: fewer or shorter rows, less to sort or group") from None
        except StorageClosedError:
            raise RuntimeStopped() from None
        finally:
            running.discard(task)
            if not running and self._queries.get(client) is running:
                del self._queries[client]
        return api.QueryResult(
            columns=[api.QueryColumn(name=c.name, type=c.type) for c in result.columns],
            rows=result.rows,
            truncated=result.truncated,
        )

    def disconnect(self, client: Client) -> None:
        """The client went away: its queries stop, also where the transport did not cancel them."""
        for task in self._queries.pop(client, ()):
            if not task.cancelling():  # a second cancel would cut short the interrupting of the first
                task.cancel()

    async def export_usage(self, client: Client, params: api.ExportUsageParams) -> api.ExportUsageResult:
        """The analytic views' new rows as Parquet, written on a thread of the storage's own."""
        try:
            return await usage_export.export_usage(self.state.storage, params)
        except OSError as exc:  # the directory: not writable, a file in the way, the disk full
            raise InvalidParams(f"cannot write there: {exc.strerror or exc} @ $.directory") from None
        except StorageClosedError:
            raise RuntimeStopped() from None


def _item_tokens(item: Item, tokens: int) -> api.ItemTokens:
    """An item's share of the context (`tokens`, as the context's own estimate counts it)."""
    tool = item.tool_call.name if item.tool_call else item.tool_result.name if item.tool_result else None
    return api.ItemTokens(item_id=item.id, tokens=tokens, type=item.type, tool_name=tool or None)
