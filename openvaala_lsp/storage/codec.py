"""Model <-> row codecs: the column lists of every table and the item payload format, in one place.

Records are flattened into typed columns (so users can query them with SQL); an item is kept whole as
JSON (its shape varies by type) next to the few columns the store filters on.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import Any

import attrs
from cattrs.preconf.json import make_converter

from openvaala_lsp.model import (
    AlwaysAllowed,
    Conversation,
    ConversationListEntry,
    ErrorInfo,
    ExecutorSettings,
    ForkedFrom,
    Item,
    LoggedItem,
    ModelCall,
    ModelCallPurpose,
    ModelPrice,
    ModelRef,
    ModelSelection,
    Ordinal,
    PendingInput,
    Session,
    SessionInputMode,
    TokenUsage,
    Turn,
    TurnReason,
    TurnStatus,
    encoded_size,
)
from openvaala_lsp.storage import blobs

Row = tuple[Any, ...]


def as_utc(value: dt.datetime) -> dt.datetime:
    """Every stored time is aware UTC; a naive time is taken as UTC, never as local time."""
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)


def _opt_utc(value: dt.datetime | None) -> dt.datetime | None:
    return None if value is None else as_utc(value)


# The storage format of an item: attribute names as-is, defaults omitted, times as ISO 8601 UTC.
_payload = make_converter(omit_if_default=True)
_payload.register_unstructure_hook(dt.datetime, lambda value: as_utc(value).isoformat())
_payload.register_structure_hook(dt.datetime, lambda value, _: as_utc(dt.datetime.fromisoformat(value)))


def item_to_json(item: Item) -> str:
    return _payload.dumps(item)


def item_from_json(text: str) -> Item:
    return _payload.loads(text, Item)


# Big strings in files (`blobs.py`): every image, and then the longest strings of an item (a text
# part, a tool call's arguments, the provider's data, a file change's diff) until its row is at most
# `ROW_BYTES`. In the payload such a string's place holds `{"blob": "<sha256>", "bytes": N}`, e.g. an
# image part is `{"type": "image", "mime_type": "image/png", "data": {"blob": "…", "bytes": 6990508}}`.
#
# Why rows stay small: reading items, DuckDB holds the strings of thousands of neighbouring rows at
# once, whatever the LIMIT (measured: 4,096 rows of 30 KB need more than a 64 MB memory_limit, 10,000
# rows of 16 KB fit under 64 MB, 10,000 of 64 KB need more than 128 MB).
ROW_BYTES = 16 * 1024
SMALLEST = 1024  # a string shorter than this stays in the row, whatever the row's size
Blob = tuple[str, bytes]  # (sha256, data)
Loader = Callable[[str], str | None]  # the data of a blob, None when its file is gone
_REFERENCE = '{"blob": "'


def needs_files(item: Item) -> bool:
    """Whether the item has an image or may be past `ROW_BYTES` as a row: `seal` has work to do."""
    return any(part.type == "image" and part.data for part in item.content or ()) or encoded_size(item) > ROW_BYTES


def unstructured(item: Item) -> dict[str, Any]:
    """The item as plain values, taken now (strings are immutable: `seal` may run in another thread)."""
    value: dict[str, Any] = _payload.unstructure(item)
    return value


def _slots(value: dict[str, Any]) -> list[tuple[Any, Any, bool]]:
    """Where a big string may stand: (container, key, whether it is an image's data)."""
    slots: list[tuple[Any, Any, bool]] = []
    for part in value.get("content") or ():
        for key in ("data", "text"):
            if isinstance(part.get(key), str):
                slots.append((part, key, key == "data" and part.get("type") == "image"))
    call = value.get("tool_call")
    if call is not None and isinstance(call.get("arguments"), str):
        slots.append((call, "arguments", False))
    if value.get("provider_data"):
        slots.append((value, "provider_data", False))
    for change in _file_changes(value):
        if isinstance(change.get("diff"), str):
            slots.append((change, "diff", False))
    return slots


def _file_changes(value: dict[str, Any]) -> list[dict[str, Any]]:
    """The file changes of an unstructured tool result (their diffs may be big strings)."""
    result = value.get("tool_result")
    changes: list[dict[str, Any]] = (result or {}).get("file_changes") or []
    return changes


def seal(value: dict[str, Any]) -> tuple[str, list[Blob]]:
    """The payload JSON of an unstructured item with its images, and its longest strings while the
    row is past `ROW_BYTES`, replaced by references; and their data by address. Hashes what it moves
    out (~4 ms a screenshot)."""
    found: list[Blob] = []

    def move(container: Any, key: Any) -> None:
        data = container[key]
        encoded = data.encode() if isinstance(data, str) else json.dumps(data).encode()
        sha256 = blobs.address(encoded)
        container[key] = {"blob": sha256, "bytes": len(encoded)}
        found.append((sha256, encoded))

    rest = []
    for container, key, image in _slots(value):
        if image:
            move(container, key)
        else:
            rest.append((len(json.dumps(container[key])), container, key))
    text = json.dumps(value)
    if len(text) > ROW_BYTES:
        size = len(text)
        for length, container, key in sorted(rest, key=lambda slot: -slot[0]):
            if size <= ROW_BYTES or length < SMALLEST:
                break
            move(container, key)
            size -= length - len(json.dumps(container[key]))
        text = json.dumps(value)
    return text, found


def unseal(text: str, load: Loader) -> Item:
    """The item of a payload, its references replaced by their data (an image or text whose file is
    gone becomes a text saying so)."""
    if _REFERENCE not in text:
        return item_from_json(text)
    value = json.loads(text)
    for part in value.get("content") or ():
        for key in ("data", "text"):
            if isinstance(reference := part.get(key), dict):
                data = load(reference["blob"])
                if data is None:
                    missing = f"[{part.get('type', 'content')} unavailable: its file {reference['blob']} is missing]"
                    part.clear()
                    part.update(type="text", text=missing)
                    break
                part[key] = data
    call = value.get("tool_call")
    if call is not None and isinstance(reference := call.get("arguments"), dict):
        call["arguments"] = load(reference["blob"]) or "{}"  # kept verbatim, and JSON even when lost
    if isinstance(reference := value.get("provider_data"), dict):
        data = load(reference["blob"])
        value["provider_data"] = json.loads(data) if data is not None else None
    for change in _file_changes(value):
        if isinstance(reference := change.get("diff"), dict):
            data = load(reference["blob"])
            change["diff"] = (
                data if data is not None else f"[diff unavailable: its file {reference['blob']} is missing]"
            )
    item: Item = _payload.structure(value, Item)
    return item


def blob_ref_rows(item: Item, found: list[Blob]) -> list[Row]:
    return [(item.conversation_id, item.id, sha256, len(data)) for sha256, data in found]


USAGE_COLUMNS = (
    "input_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "output_tokens",
    "reasoning_tokens",
    "total_tokens",
)


def _usage_values(usage: TokenUsage) -> Row:
    return (
        usage.input_tokens,
        usage.cached_input_tokens,
        usage.cache_write_tokens,
        usage.output_tokens,
        usage.reasoning_tokens,
        usage.total_tokens,
    )


def _usage_from(values: Row) -> TokenUsage:
    return TokenUsage(**dict(zip(USAGE_COLUMNS, values, strict=True)))


# Conversations. `last_activity_at` is not part of `Conversation`: it is written only by touches, so an
# upsert of this column list never resets it.
CONVERSATION_COLUMNS = (
    "id",
    "title",
    "agent_name",
    "archived",
    "ephemeral",
    "created_at",
    "updated_at",
    "executor_id",
    "directory",
    "has_model",
    "model_provider",
    "model_name",
    "reasoning_effort",
    "forked_from_conversation_id",
    "forked_from_turn_id",
    "always_allowed",
)
CONVERSATION_SELECT = ", ".join((*CONVERSATION_COLUMNS, "last_activity_at"))


def conversation_row(c: Conversation) -> Row:
    model = c.model.model if c.model is not None else None
    forked = c.forked_from
    return (
        c.id,
        c.title,
        c.agent_name,
        c.archived,
        c.ephemeral,
        as_utc(c.created_at),
        as_utc(c.updated_at),
        c.executor_settings.executor_id,
        c.executor_settings.directory,
        c.model is not None,  # tells `model=None` from an empty ModelSelection()
        model.provider if model else None,
        model.name if model else None,
        c.model.reasoning_effort if c.model is not None else None,
        forked.conversation_id if forked else None,
        forked.turn_id if forked else None,
        _payload.dumps(c.always_allowed),
    )


def _model_ref(provider: str | None, name: str | None) -> ModelRef | None:
    return None if provider is None or name is None else ModelRef(provider=provider, name=name)


def conversation_entry_from_row(row: Row) -> ConversationListEntry:
    """A row selected with CONVERSATION_SELECT."""
    (cid, title, agent, archived, ephemeral, created, updated, executor_id, directory, has_model) = row[:10]
    (provider, name, effort, forked_conversation, forked_turn, always_allowed, last_activity) = row[10:]
    conversation = Conversation(
        id=cid,
        title=title,
        agent_name=agent,
        archived=archived,
        ephemeral=ephemeral,
        created_at=as_utc(created),
        updated_at=as_utc(updated),
        executor_settings=ExecutorSettings(executor_id=executor_id, directory=directory),
        model=ModelSelection(model=_model_ref(provider, name), reasoning_effort=effort) if has_model else None,
        forked_from=(
            ForkedFrom(conversation_id=forked_conversation, turn_id=forked_turn)
            if forked_conversation is not None
            else None
        ),
        always_allowed=_payload.loads(always_allowed, list[AlwaysAllowed]) if always_allowed else [],
    )
    return ConversationListEntry(conversation=conversation, last_activity_at=_opt_utc(last_activity))


# Sessions
SESSION_COLUMNS = (
    "id",
    "conversation_id",
    "agent_name",
    "model_provider",
    "model_name",
    "reasoning_effort",
    "created_at",
    "parent_session_id",
)
SESSION_SELECT = ", ".join(SESSION_COLUMNS)


def session_row(s: Session) -> Row:
    model = s.model.model
    return (
        s.id,
        s.conversation_id,
        s.agent_name,
        model.provider if model else None,
        model.name if model else None,
        s.model.reasoning_effort,
        as_utc(s.created_at),
        s.parent_session_id,
    )


def session_from_row(row: Row) -> Session:
    sid, cid, agent, provider, name, effort, created, parent = row
    return Session(
        id=sid,
        conversation_id=cid,
        agent_name=agent,
        model=ModelSelection(model=_model_ref(provider, name), reasoning_effort=effort),
        created_at=as_utc(created),
        parent_session_id=parent,
    )


# Turns
TURN_COLUMNS = (
    "id",
    "conversation_id",
    "session_id",
    "status",
    "started_at",
    "ended_at",
    "model_provider",
    "model_name",
    *USAGE_COLUMNS,
    "error_kind",
    "error_message",
    "reason",
    "reverted_by",
)
TURN_SELECT = ", ".join(TURN_COLUMNS)
_USAGE_AT = TURN_COLUMNS.index(USAGE_COLUMNS[0])


def turn_row(t: Turn) -> Row:
    return (
        t.id,
        t.conversation_id,
        t.session_id,
        t.status.value,
        as_utc(t.started_at),
        _opt_utc(t.ended_at),
        t.model.provider if t.model else None,
        t.model.name if t.model else None,
        *_usage_values(t.usage),
        t.error.kind if t.error else None,
        t.error.message if t.error else None,
        t.reason.value if t.reason else None,
        t.reverted_by,
    )


# what a turn's life changes after its row is saved: an UPDATE of these costs ~0.6 of the delete and
# insert that replace a whole row (measured on DuckDB 2.0 with 200k turns). `reverted_by` is set by a
# revert alone (`mark_reverted`): the runtime's own saves of a turn leave it as it is.
_TURN_FIXED = {"conversation_id", "session_id", "started_at", "reverted_by"}
TURN_CHANGING_COLUMNS = tuple(column for column in TURN_COLUMNS if column not in _TURN_FIXED)


def turn_changes_row(t: Turn) -> Row:
    return tuple(value for column, value in zip(TURN_COLUMNS, turn_row(t), strict=True) if column not in _TURN_FIXED)


def turn_from_row(row: Row) -> Turn:
    tid, cid, sid, status, started, ended, provider, name = row[:_USAGE_AT]
    error_kind, error_message, reason, reverted_by = row[_USAGE_AT + len(USAGE_COLUMNS) :]
    return Turn(
        id=tid,
        conversation_id=cid,
        session_id=sid,
        status=TurnStatus(status),
        reason=TurnReason(reason) if reason is not None else None,
        started_at=as_utc(started),
        ended_at=_opt_utc(ended),
        model=_model_ref(provider, name),
        usage=_usage_from(row[_USAGE_AT : _USAGE_AT + len(USAGE_COLUMNS)]),
        error=ErrorInfo(kind=error_kind, message=error_message) if error_kind is not None else None,
        reverted_by=reverted_by,
    )


# Pending inputs. `seq` (submission order) comes from a sequence DEFAULT at first insert; an upsert of
# this column list keeps it, so replacing a pending input does not move it in the queue.
PENDING_COLUMNS = ("item_id", "conversation_id", "mode", "input_id", "turn_id", "payload")
PENDING_SELECT = "mode, input_id, turn_id, payload"


def pending_row(p: PendingInput, payload: str | None = None) -> Row:
    """`payload`: the item's sealed JSON, when it has big parts."""
    json_text = item_to_json(p.item) if payload is None else payload
    return (p.item.id, p.item.conversation_id, p.mode.value, p.input_id, p.turn_id, json_text)


def pending_from_row(row: Row, load: Loader) -> PendingInput:
    mode, input_id, turn_id, payload = row
    return PendingInput(item=unseal(payload, load), mode=SessionInputMode(mode), input_id=input_id, turn_id=turn_id)


# Items: the append-only log. `payload` is the whole item; the other columns serve filters and SQL.
ITEM_COLUMNS = (
    "conversation_id",
    "ordinal",
    "item_id",
    "session_id",
    "turn_id",
    "type",
    "status",
    "created_at",
    "input_id",
    "payload",
)
ITEM_SELECT = "ordinal, payload"


def item_row(item: Item, ordinal: Ordinal, input_id: str | None, payload: str | None = None) -> Row:
    """`payload`: the item's sealed JSON, when it has big parts."""
    return (
        item.conversation_id,
        ordinal,
        item.id,
        item.session_id,
        item.turn_id,
        item.type.value,
        item.status.value,
        as_utc(item.created_at),
        input_id,
        item_to_json(item) if payload is None else payload,
    )


def logged_item_from_row(row: Row, load: Loader) -> LoggedItem:
    ordinal, payload = row
    return LoggedItem(ordinal=ordinal, item=unseal(payload, load))


# File changes: one row per FileChange a tool result reports (`file_changes`), appended with the item;
# the diff stays in the item's payload. `seq` (append order) comes from a sequence DEFAULT.
FILE_CHANGE_COLUMNS = (
    "conversation_id",
    "turn_id",
    "item_id",
    "tool",
    "path",
    "kind",
    "moved_from",
    "additions",
    "deletions",
    "is_binary",
    "changed_at",
)


def file_change_rows(item: Item) -> list[Row]:
    result = item.tool_result
    if result is None or not result.file_changes:
        return []
    at = as_utc(item.created_at)
    return [
        (
            item.conversation_id,
            item.turn_id,
            item.id,
            result.name,
            change.path,
            change.kind.value,
            change.moved_from,
            change.additions,
            change.deletions,
            bool(change.binary),
            at,
        )
        for change in result.file_changes
    ]


# Items of running turns as they stream (`streaming_items`): replaced at each save, deleted once the item
# is in the log. The payload is whole (no files): a few rows, each replaced while it grows.
STREAMING_COLUMNS = ("item_id", "conversation_id", "turn_id", "saved_at", "payload")


def streaming_row(item: Item, saved_at: dt.datetime) -> Row:
    return (item.id, item.conversation_id, item.turn_id, as_utc(saved_at), item_to_json(item))


# Model calls: typed columns only, one per field of ModelCall and TokenUsage. `seq` (append order)
# comes from a sequence DEFAULT. A price is its five per-million prices (defaults resolved) and currency.
PRICE_COLUMNS = (
    "price_currency",
    "price_input",
    "price_cached_input",
    "price_cache_write",
    "price_output",
    "price_reasoning",
)
MODEL_CALL_COLUMNS = (
    "id",
    "conversation_id",
    "session_id",
    "turn_id",
    "provider",
    "model",
    "started_at",
    "latency_ms",
    "first_token_ms",
    *USAGE_COLUMNS,
    "usage_estimated",
    "workspace",
    "error",
    "purpose",
    "context_window",
    "context_tokens",
    *PRICE_COLUMNS,
)
MODEL_CALL_SELECT = ", ".join(MODEL_CALL_COLUMNS)


def _price_values(price: ModelPrice | None) -> Row:
    if price is None:
        return (None,) * len(PRICE_COLUMNS)
    p = price.resolved()
    return (p.currency, p.input, p.cached_input, p.cache_write, p.output, p.reasoning)


def _price_from(values: Row) -> ModelPrice | None:
    currency, input_, cached, cache_write, output, reasoning = values
    if currency is None:
        return None
    return ModelPrice(
        currency=currency,
        input=input_,
        cached_input=cached,
        cache_write=cache_write,
        output=output,
        reasoning=reasoning,
    )


def model_call_row(m: ModelCall) -> Row:
    return (
        m.id,
        m.conversation_id,
        m.session_id,
        m.turn_id,
        m.provider,
        m.model,
        as_utc(m.started_at),
        m.latency_ms,
        m.first_token_ms,
        *_usage_values(m.usage),
        m.usage_estimated,
        m.workspace,
        m.error,
        m.purpose.value,
        m.context_window,
        m.context_tokens,
        *_price_values(m.price),
    )


def model_call_from_row(row: Row) -> ModelCall:
    mid, cid, sid, tid, provider, model, started, latency, first_token = row[:9]
    usage_end = 9 + len(USAGE_COLUMNS)
    estimated, workspace, error, purpose, window, tokens = row[usage_end : usage_end + 6]
    return ModelCall(
        id=mid,
        conversation_id=cid,
        session_id=sid,
        turn_id=tid,
        provider=provider,
        model=model,
        started_at=as_utc(started),
        latency_ms=latency,
        first_token_ms=first_token,
        usage=_usage_from(row[9:usage_end]),
        usage_estimated=estimated,
        workspace=workspace,
        error=error,
        purpose=ModelCallPurpose(purpose),
        context_window=window,
        context_tokens=tokens,
        price=_price_from(row[usage_end + 6 :]),
    )


@attrs.frozen
class Table:
    """A records table: upserted by `key`, with the columns a full row carries (in row order);
    `whole`: a row carries every column of the table (it may be replaced by a delete and an insert)."""

    name: str
    key: str
    columns: tuple[str, ...]
    whole: bool = False


CONVERSATIONS = Table("conversations", "id", CONVERSATION_COLUMNS)  # last_activity_at is set apart
SESSIONS = Table("sessions", "id", SESSION_COLUMNS, whole=True)
TURNS = Table("turns", "id", TURN_COLUMNS, whole=True)
PENDING_INPUTS = Table("pending_inputs", "item_id", PENDING_COLUMNS)
STREAMING_ITEMS = Table("streaming_items", "item_id", STREAMING_COLUMNS, whole=True)
ACTIVITY_COLUMNS = ("id", "last_activity_at")
BLOB_REF_COLUMNS = ("conversation_id", "item_id", "sha256", "bytes")
