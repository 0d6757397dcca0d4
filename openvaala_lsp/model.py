"""Domain types of the runtime (the Go package `defs` of the seed).

Plain attrs data: no JSON-RPC, no storage. The protocol layer puts these on the wire through its one
converter (lowerCamelCase, `None` fields omitted); storage persists them.
"""

from __future__ import annotations

import datetime as dt
import enum
import json
import secrets
import time
from typing import Any, Generic, TypeVar

import attrs

T = TypeVar("T")
C = TypeVar("C")

ConversationId = str
SessionId = str
TurnId = str
ItemId = str
ModelCallId = str
Ordinal = int


def new_id(prefix: str) -> str:
    """Time-ordered opaque id: `prefix_` + 12 hex digits of ms clock + 8 random hex digits.

    Time order keeps ids sortable, which is what makes keyset pagination by (created_at, id) stable.
    """
    return f"{prefix}_{int(time.time() * 1000):012x}{secrets.token_hex(4)}"


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class TurnStatus(enum.StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"
    INTERRUPTED = "interrupted"
    FAILED = "failed"


class TurnReason(enum.StrEnum):
    """How a turn ended (`schemas/README.md`, "How a turn ends", maps each of the runtime's endings)."""

    COMPLETED = "completed"
    USER_INTERRUPT = "userInterrupt"
    RUNTIME_STOPPED = "runtimeStopped"  # the runtime died, stopped, or could not go on (an internal error)
    MODEL_ERROR = "modelError"  # `Turn.error.kind` is the provider's error kind
    TOOL_ERROR = "toolError"  # never given by this build: a tool's failure is its result, for the model
    MAX_TOKENS = "maxTokens"  # the model's last answer stopped at its output limit
    LIMIT_REACHED = "limitReached"
    CANCELLED_BY_HOOK = "cancelledByHook"


class ItemType(enum.StrEnum):
    USER_MESSAGE = "userMessage"
    ASSISTANT_MESSAGE = "assistantMessage"
    REASONING = "reasoning"
    TOOL_CALL = "toolCall"
    TOOL_RESULT = "toolResult"
    COMPACTION = "compaction"
    ERROR = "error"


class ItemStatus(enum.StrEnum):
    PENDING = "pending"
    STREAMING = "streaming"
    AWAITING_APPROVAL = "awaitingApproval"  # a tool call waiting for answerApproval
    COMPLETED = "completed"
    WITHDRAWN = "withdrawn"
    INTERRUPTED = "interrupted"


class SessionState(enum.StrEnum):
    IDLE = "idle"
    RUNNING = "running"
    COMPACTING = "compacting"
    CLOSED = "closed"


class ContextUsageSource(enum.StrEnum):
    ACTUAL = "actual"
    ESTIMATED = "estimated"
    UNKNOWN = "unknown"


class CompactionTrigger(enum.StrEnum):
    MANUAL = "manual"  # compactContext
    AUTO = "auto"  # the next request would pass the threshold
    OVERFLOW = "overflow"  # the provider said the context was too long


class ModelCallPurpose(enum.StrEnum):
    TURN = "turn"
    COMPACTION = "compaction"
    TITLE = "title"


class SessionInputMode(enum.StrEnum):
    QUEUE = "queue"
    STEER = "steer"
    INTERRUPT = "interrupt"


class Order(enum.StrEnum):
    ASC = "asc"
    DESC = "desc"


class AddressKind(enum.StrEnum):
    USER = "user"
    SESSION = "session"
    CLIENT = "client"
    HOOK = "hook"


@attrs.define(kw_only=True)
class ModelRef:
    provider: str
    name: str


@attrs.define(kw_only=True)
class ModelSelection:
    model: ModelRef | None = None
    reasoning_effort: str | None = None


class FieldError(ValueError):
    """Raised by validators: a value of the right type that is out of range or malformed. The
    protocol layer reports it as invalid params at the field's path."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def check_path(instance: Any, attribute: attrs.Attribute[Any], value: str | None) -> None:
    """A path the OS can take: JSON allows a NUL character, file system calls do not."""
    if value is not None and "\0" in value:
        raise FieldError(attribute.name, "a path cannot hold a NUL character")


@attrs.define(kw_only=True)
class ExecutorSettings:
    executor_id: str | None = None
    directory: str | None = attrs.field(default=None, validator=check_path)


@attrs.define(kw_only=True)
class ForkedFrom:
    conversation_id: ConversationId
    turn_id: TurnId | None = None


@attrs.define(kw_only=True)
class AlwaysAllowed:
    """A tool the user allowed for the rest of the conversation (`allowAlways`); for the shell, the
    command approved, `commandPrefix`: that command line, or a prefix of a few that are safe to extend
    (`git status`, `git diff`, `git log`, `git show`, `ls`, `pwd`) with more plain arguments."""

    tool: str
    command_prefix: str | None = None
    outside_sandbox: bool = False  # remembered for a command run outside the sandbox


@attrs.define(kw_only=True)
class Conversation:
    id: ConversationId
    title: str = ""
    agent_name: str = ""
    archived: bool = False
    ephemeral: bool = False
    created_at: dt.datetime
    updated_at: dt.datetime
    executor_settings: ExecutorSettings = attrs.Factory(ExecutorSettings)
    model: ModelSelection | None = None
    forked_from: ForkedFrom | None = None
    always_allowed: list[AlwaysAllowed] = attrs.Factory(list)


@attrs.define(kw_only=True)
class ConversationListEntry:
    conversation: Conversation
    last_activity_at: dt.datetime | None = None
    running: bool = False


@attrs.define(kw_only=True)
class Session:
    id: SessionId
    conversation_id: ConversationId
    agent_name: str = ""
    model: ModelSelection = attrs.Factory(ModelSelection)
    created_at: dt.datetime
    parent_session_id: SessionId | None = None


@attrs.define(kw_only=True)
class TokenUsage:
    input_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(**{f: getattr(self, f) + getattr(other, f) for f in attrs.fields_dict(TokenUsage)})


@attrs.define(kw_only=True)
class ErrorInfo:
    """A failure carried as data (turn errors, `error` events, subscription close reasons)."""

    kind: str
    message: str


@attrs.define(kw_only=True)
class Turn:
    id: TurnId
    conversation_id: ConversationId
    session_id: SessionId
    status: TurnStatus = TurnStatus.RUNNING
    reason: TurnReason | None = None  # how it ended; None while it runs
    started_at: dt.datetime
    ended_at: dt.datetime | None = None
    model: ModelRef | None = None
    usage: TokenUsage = attrs.Factory(TokenUsage)
    error: ErrorInfo | None = None
    reverted_by: TurnId | None = None  # the turn whose revert took this one out (`storage.mark_reverted`)


@attrs.define(kw_only=True)
class Content:
    """`{type: "text", text}` or `{type: "image", mimeType, data}` (data is base64)."""

    type: str
    text: str | None = None
    mime_type: str | None = None
    data: str | None = None


@attrs.define(kw_only=True)
class Address:
    kind: AddressKind
    session_id: SessionId | None = None
    name: str | None = None
    client_id: str | None = None  # kind client: the connection's clientId (name is its clientName)


@attrs.define(kw_only=True)
class ToolCall:
    call_id: str
    name: str
    arguments: str = "{}"  # the model's JSON text, kept verbatim (it may be invalid JSON)


class FileChangeKind(enum.StrEnum):
    ADD = "add"
    UPDATE = "update"
    DELETE = "delete"
    MOVE = "move"


@attrs.define(kw_only=True)
class SkippedFile:
    """A file a checkpoint or a diff left out, and why (too large, too many files, unreadable)."""

    path: str
    why: str


@attrs.define(kw_only=True)
class FileChange:
    """One file's change (PROTOCOL.md `FileChange`): what a tool did to it, or a whole turn.
    `path` (and `moved_from`) are absolute; `diff` is unified with context, capped with a marker,
    None for a binary file; `skipped` lists what a turn's diff could not see."""

    path: str
    kind: FileChangeKind
    moved_from: str | None = None
    diff: str | None = None
    additions: int = 0
    deletions: int = 0
    binary: bool | None = None
    skipped: list[SkippedFile] | None = None


@attrs.define(kw_only=True)
class ToolResult:
    call_id: str
    name: str = ""
    is_error: bool = False
    file_changes: list[FileChange] | None = None  # what the tool changed on disk, when it changed files


@attrs.define(kw_only=True)
class Compaction:
    """What a `compaction` item did to the model's context (the log keeps everything for people).
    `summarized`: the items before it left the context, and its text (a hand-off summary and the recent
    user messages verbatim) stands in for them. `prunedItemIds`: tool results whose output left the
    context (their calls stay). Tokens are the context's estimate before and after."""

    trigger: CompactionTrigger
    summarized: bool
    pruned_item_ids: list[ItemId] = attrs.Factory(list)
    tokens_before: int = 0
    tokens_after: int = 0


@attrs.define(kw_only=True)
class Item:
    id: ItemId
    conversation_id: ConversationId
    session_id: SessionId
    turn_id: TurnId | None = None
    type: ItemType
    status: ItemStatus = ItemStatus.COMPLETED
    created_at: dt.datetime
    content: list[Content] | None = None
    from_: Address | None = None
    tool_call: ToolCall | None = None
    tool_result: ToolResult | None = None
    # opaque data a provider needs back in the next request (signed thinking, encrypted reasoning)
    provider_data: list[dict[str, Any]] | None = None
    compaction: Compaction | None = None  # on `compaction` items


ITEM_ALLOWANCE = 2048  # ids, times, kinds and the keys around them, with room to spare


def encoded_size(item: Item) -> int:
    """At least the bytes of `item` as JSON (on the wire or in a row): its long strings measured as
    JSON escapes them, the rest an allowance. What keeps a page or a snapshot under the message limit."""
    size = ITEM_ALLOWANCE
    for part in item.content or ():
        # base64 is ASCII without a character JSON escapes: its length (`isascii` costs nothing)
        data = len(part.data) + 2 if part.data and part.data.isascii() else _json_size(part.data)
        size += 64 + _json_size(part.text) + data
    if (call := item.tool_call) is not None:
        size += _json_size(call.arguments) + _json_size(call.name) + _json_size(call.call_id)
    if item.provider_data:
        size += len(json.dumps(item.provider_data, default=str))
    if item.compaction is not None:
        size += sum(_json_size(pruned) + 1 for pruned in item.compaction.pruned_item_ids)
    if item.tool_result is not None:
        size += sum(file_change_size(change) for change in item.tool_result.file_changes or ())
    return size


FILE_CHANGE_ALLOWANCE = 128  # its keys, kind, counts and flags


def file_change_size(change: FileChange) -> int:
    """At least the bytes of `change` as JSON: its diff (up to 64 KiB) is most of an edit's result."""
    skipped = sum(32 + _json_size(entry.path) + _json_size(entry.why) for entry in change.skipped or ())
    return (
        FILE_CHANGE_ALLOWANCE
        + _json_size(change.path)
        + _json_size(change.moved_from)
        + _json_size(change.diff)
        + skipped
    )


def _json_size(text: str | None) -> int:
    return 0 if text is None else len(json.dumps(text))


@attrs.define(kw_only=True)
class LoggedItem:
    ordinal: Ordinal
    item: Item


def _non_negative(instance: Any, attribute: attrs.Attribute[Any], value: float | None) -> None:
    if value is not None and not value >= 0:  # NaN too
        raise FieldError(attribute.name, "must be a number of at least 0")


def _currency(instance: Any, attribute: attrs.Attribute[Any], value: str) -> None:
    if len(value) != 3 or not value.isascii() or not value.isalpha() or not value.isupper():
        raise FieldError(attribute.name, f"expected a currency code of three capital letters (ISO 4217), got {value!r}")


@attrs.define(kw_only=True)
class ModelPrice:
    """What a model costs, per million tokens of each kind, in `currency`. A cache kind without a price
    of its own costs `input`, reasoning costs `output` (providers bill reasoning as output)."""

    currency: str = attrs.field(default="USD", validator=_currency)
    input: float = attrs.field(validator=_non_negative)
    cached_input: float | None = attrs.field(default=None, validator=_non_negative)
    cache_write: float | None = attrs.field(default=None, validator=_non_negative)
    output: float = attrs.field(validator=_non_negative)
    reasoning: float | None = attrs.field(default=None, validator=_non_negative)

    def resolved(self) -> ModelPrice:
        """Every kind priced: the defaults above made explicit (what a model call records)."""
        return attrs.evolve(
            self,
            cached_input=self.input if self.cached_input is None else self.cached_input,
            cache_write=self.input if self.cache_write is None else self.cache_write,
            reasoning=self.output if self.reasoning is None else self.reasoning,
        )


@attrs.define(kw_only=True)
class ModelCall:
    """One request to a model provider: the row a user's token-usage SQL reads. `price` is the model's
    price when the call was made (None: unknown); `context_window` and `context_tokens` (the runtime's
    estimate of the request) say how full the window was, for the session's own calls."""

    id: ModelCallId
    conversation_id: ConversationId
    session_id: SessionId
    turn_id: TurnId
    provider: str
    model: str
    started_at: dt.datetime
    latency_ms: int = 0
    first_token_ms: int | None = None
    usage: TokenUsage = attrs.Factory(TokenUsage)
    usage_estimated: bool = False
    workspace: str | None = None
    error: str | None = None
    purpose: ModelCallPurpose = ModelCallPurpose.TURN
    price: ModelPrice | None = None
    context_window: int | None = None
    context_tokens: int | None = None


@attrs.define(kw_only=True)
class ContextUsage:
    source: ContextUsageSource = ContextUsageSource.UNKNOWN
    tokens: int = 0
    window: int = 0


@attrs.define(kw_only=True)
class SessionRuntimeInfo:
    session: Session
    state: SessionState = SessionState.IDLE
    active_turn_id: TurnId | None = None
    active_turn_model: ModelSelection | None = None
    last_turn_id: TurnId | None = None
    last_turn_status: TurnStatus | None = None
    last_turn_reason: TurnReason | None = None
    context: ContextUsage = attrs.Factory(ContextUsage)
    usage: TokenUsage = attrs.Factory(TokenUsage)


@attrs.define(kw_only=True)
class WorkspaceFolder:
    name: str
    path: str


@attrs.define(kw_only=True)
class Page(Generic[T, C]):
    """One page of a list; `nextCursor` is absent on the last page. Items use the ordinal as cursor,
    records an opaque string."""

    items: list[T]
    next_cursor: C | None = None


@attrs.define(kw_only=True)
class PendingInput:
    """An input accepted but not yet taken into a turn (queue or steer), kept across restarts."""

    item: Item
    mode: SessionInputMode = SessionInputMode.QUEUE
    input_id: str | None = None
    turn_id: TurnId | None = None  # the turn a steer targets
