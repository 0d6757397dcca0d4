"""The committed JSON Schemas match the generator, the spec's method table and the converter."""

from __future__ import annotations

import datetime as dt
import functools
import json
import re
from pathlib import Path
from typing import Any, get_args

import pytest
from jsonschema import Draft202012Validator, FormatChecker

from openvaala_lsp import model
from openvaala_lsp.protocol import api, converter, events, methods, schema
from openvaala_lsp.protocol.codes import CODES

REPO = Path(__file__).resolve().parents[1]
T0 = dt.datetime(2025, 3, 1, 12, 30, 5, 123456, tzinfo=dt.UTC)
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")

FORMATS = FormatChecker()


@FORMATS.checks("date-time")
def _is_date_time(value: object) -> bool:
    # jsonschema checks date-time only with rfc3339-validator installed; check it here regardless
    return not isinstance(value, str) or bool(RFC3339.match(value))


@functools.cache
def _files() -> dict[str, Any]:
    return {path: json.loads(text) for path, text in schema.generate().items()}


def validator(path: str, definition: str | None = None) -> Draft202012Validator:
    doc = _files()[path]
    if definition is not None:
        doc = {"$ref": f"#/$defs/{definition}", "$defs": doc["$defs"]}
    Draft202012Validator.check_schema(doc)
    return Draft202012Validator(doc, format_checker=FORMATS)


def assert_valid(path: str, instance: Any, definition: str | None = None) -> None:
    problems = [f"{e.message} @ {e.json_path}" for e in validator(path, definition).iter_errors(instance)]
    assert not problems, problems


# Files


def test_committed_schemas_are_up_to_date() -> None:
    problems = schema.diff(REPO / "schemas")
    assert not problems, f"{problems}: run `python -m openvaala_lsp.protocol.schema --write`"


def test_every_generated_file_is_a_valid_schema() -> None:
    for path, doc in _files().items():
        if path != "methods.json":
            Draft202012Validator.check_schema(doc)


def test_check_reports_stale_missing_and_extra_files_and_write_keeps_readme(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("hand-written\n")
    assert schema.main(["--write", "--dir", str(tmp_path)]) == 0
    assert schema.main(["--check", "--dir", str(tmp_path)]) == 0
    (tmp_path / "errors.json").write_text("{}\n")
    (tmp_path / "requests" / "isIdle.result.json").unlink()
    (tmp_path / "requests" / "gone.params.json").write_text("{}\n")
    assert schema.diff(tmp_path) == [
        "stale: errors.json",
        "missing: requests/isIdle.result.json",
        "extra: requests/gone.params.json",
    ]
    assert schema.main(["--check", "--dir", str(tmp_path)]) == 1
    schema.write(tmp_path)
    assert schema.diff(tmp_path) == []
    assert (tmp_path / "README.md").read_text() == "hand-written\n"


def test_methods_table_covers_the_registry() -> None:
    table = _files()["methods.json"]
    assert table["protocolVersion"] == "0.3"
    rows = {row["method"]: row for row in table["methods"]}
    assert rows.keys() == {*methods.REQUESTS, *methods.NOTIFICATIONS, *methods.SERVER_REQUESTS}
    assert rows["openvaala/callClientTool"]["direction"] == "serverToClient"
    assert rows["openvaala/sessionEvent"]["kind"] == "notification"
    assert rows["openvaala/listItems"]["resultType"] == "LoggedItemPage"
    for row in rows.values():
        for part in ("params", "result"):
            if part in row:
                assert row[part]["$ref"] in _files()
                assert _files()["openvaala.schema.json"]["x-methods"][row["method"]][part].endswith(row[part + "Type"])


def test_errors_schema_ties_each_kind_to_its_code() -> None:
    assert _files()["errors.json"]["x-codes"] == CODES
    assert {"parseError", "invalidRequest", "methodNotFound", "requestCancelled", "messageTooLarge"} <= CODES.keys()
    check = validator("errors.json")
    errors = ["expected string, got integer @ $.conversationId"]
    assert check.is_valid({"code": -32602, "message": "bad", "data": {"kind": "invalidParams", "errors": errors}})
    assert check.is_valid({"code": -32011, "message": "not open", "data": {"kind": "conversationNotOpen"}})
    assert check.is_valid({"code": -32603, "message": "internal error in x", "data": {"kind": "internal"}})
    assert not check.is_valid({"code": -32011, "message": "x", "data": {"kind": "conversationNotFound"}})
    assert not check.is_valid({"code": -32602, "message": "bad", "data": {"kind": "invalidParams"}})


# Output: what the converter produces validates


def conversation(**extra: Any) -> model.Conversation:
    return model.Conversation(id="conv_1", created_at=T0, updated_at=T0, **extra)


def turn() -> model.Turn:
    return model.Turn(
        id="turn_1",
        conversation_id="conv_1",
        session_id="sess_1",
        status=model.TurnStatus.FAILED,
        started_at=T0,
        ended_at=T0,
        model=model.ModelRef(provider="ollama", name="qwen3"),
        error=model.ErrorInfo(kind="providerError", message="boom"),
    )


def item(**extra: Any) -> model.Item:
    return model.Item(
        id="item_1",
        conversation_id="conv_1",
        session_id="sess_1",
        type=model.ItemType.USER_MESSAGE,
        created_at=T0,
        **extra,
    )


SESSION = model.Session(id="sess_1", conversation_id="conv_1", created_at=T0)
INFO = model.SessionRuntimeInfo(session=SESSION, last_turn_status=model.TurnStatus.COMPLETED)
FULL_ITEM = item(
    turn_id="turn_1",
    content=[model.Content(type="text", text="hi"), model.Content(type="image", mime_type="image/png", data="AA==")],
    from_=model.Address(kind=model.AddressKind.SESSION, session_id="sess_2", name="helper"),
    tool_call=model.ToolCall(call_id="call_1", name="read_file", arguments='{"path": "a'),
    tool_result=model.ToolResult(call_id="call_1", is_error=True),
)


def test_conversation_and_pages_validate() -> None:
    full = conversation(
        model=model.ModelSelection(reasoning_effort="high"), forked_from=model.ForkedFrom(conversation_id="conv_0")
    )
    for value in (conversation(), full):
        wire = converter.unstructure(value)
        assert_valid("requests/getConversation.result.json", wire)
        assert wire["createdAt"] == "2025-03-01T12:30:05.123Z"
    page = model.Page(
        items=[model.ConversationListEntry(conversation=full, last_activity_at=T0, running=True)], next_cursor="c2"
    )
    assert_valid("requests/listConversations.result.json", converter.unstructure(page))
    items = model.Page(items=[model.LoggedItem(ordinal=7, item=FULL_ITEM)], next_cursor=7)
    assert_valid("requests/listItems.result.json", converter.unstructure(items))
    assert_valid("requests/listTurns.result.json", converter.unstructure(model.Page[model.Turn, str](items=[turn()])))


def test_output_fields_are_required_unless_their_default_is_none() -> None:
    check = validator("openvaala.schema.json", "Conversation")
    wire = converter.unstructure(conversation())
    assert "model" not in wire and wire["title"] == ""
    del wire["title"]
    assert not check.is_valid(wire)
    assert not check.is_valid(converter.unstructure(conversation()) | {"model": None})


def test_turn_and_item_validate() -> None:
    assert_valid("openvaala.schema.json", converter.unstructure(turn()), "Turn")
    wire = converter.unstructure(FULL_ITEM)
    assert wire["from"]["sessionId"] == "sess_2"
    assert_valid("openvaala.schema.json", wire, "Item")
    assert_valid("openvaala.schema.json", converter.unstructure(item()), "Item")
    assert not validator("openvaala.schema.json", "Item").is_valid(wire | {"type": "shout"})


CONVERSATION_EVENTS: list[Any] = [
    events.TitleChanged(title="t"),
    events.SessionAdded(session=SESSION),
    events.SessionUpdated(info=INFO),
    events.ConversationUpdated(conversation=conversation()),
]
SESSION_EVENTS: list[Any] = [
    events.ItemStarted(item_index=0, item=item(status=model.ItemStatus.STREAMING)),
    events.ItemDelta(item_index=0, item_id="item_1", delta="hel"),
    events.ItemCompleted(ordinal=3, item=FULL_ITEM),
    events.PendingInputAdded(item=item(status=model.ItemStatus.PENDING)),
    events.PendingInputRemoved(item_id="item_1", reason="withdrawn"),
    events.TurnStarted(turn=turn()),
    events.TurnCompleted(turn=turn()),
    events.StateChanged(state=model.SessionState.COMPACTING),
    events.ContextUsageUpdated(context=model.ContextUsage(source=model.ContextUsageSource.ACTUAL, tokens=5, window=9)),
    events.UsageUpdated(usage=model.TokenUsage(input_tokens=3, total_tokens=3)),
    events.ErrorEvent(error=model.ErrorInfo(kind="providerError", message="rate limited")),
    events.CompactionStarted(turn_id="turn_1"),
    events.CompactionCompleted(
        turn_id="turn_1",
        before=model.ContextUsage(source=model.ContextUsageSource.ACTUAL, tokens=90, window=100),
        after=model.ContextUsage(source=model.ContextUsageSource.ESTIMATED, tokens=20, window=100),
    ),
    events.ApprovalRequested(
        item_id="item_2",
        session_id="sess_1",
        approval=api.ApprovalRequest(
            tool="shell",
            arguments={"command": "curl -s example.org", "outside_sandbox": True},
            reason="runs outside the sandbox: needs the network",
            command="curl -s example.org",
        ),
    ),
    events.ApprovalResolved(
        item_id="item_2",
        session_id="sess_1",
        decision=api.ApprovalDecision.ALLOW_ONCE,
        by=model.Address(kind=model.AddressKind.CLIENT, name="vscode"),
    ),
    events.TurnDiffUpdated(
        turn_id="turn_1",
        files=[
            events.FileChangeSummary(path="/w/a.py", kind=model.FileChangeKind.UPDATE, additions=2, deletions=1),
            events.FileChangeSummary(path="/w/b.py", kind=model.FileChangeKind.MOVE, moved_from="/w/old.py"),
        ],
    ),
]


def test_every_event_type_validates() -> None:
    assert {type(e) for e in SESSION_EVENTS} == set(get_args(events.SessionEvent))
    assert {type(e) for e in CONVERSATION_EVENTS} == set(get_args(events.ConversationEvent))
    for event in CONVERSATION_EVENTS:
        params = methods.ConversationEventParams(subscription_id="sub_1", seq=1, event=event)
        assert_valid("notifications/conversationEvent.json", converter.unstructure(params))
    batch = methods.SessionEventParams(subscription_id="sub_1", seq=2, events=SESSION_EVENTS)
    wire = converter.unstructure(batch)
    assert_valid("notifications/sessionEvent.json", wire)
    wire["events"][1]["type"] = "itemDeltas"
    assert not validator("notifications/sessionEvent.json").is_valid(wire)


def test_server_messages_validate() -> None:
    closed = methods.SubscriptionClosedParams(
        subscription_id="sub_1", reason=model.ErrorInfo(kind="subscriberTooSlow", message="too slow")
    )
    assert_valid("notifications/subscriptionClosed.json", converter.unstructure(closed))
    running = methods.RunningConversationsParams(subscription_id="sub_2", seq=1, conversation_ids=["conv_1"])
    assert_valid("notifications/runningConversations.json", converter.unstructure(running))
    call = methods.CallClientToolParams(
        client_id="vscode", conversation_id="conv_1", server="files", tool="open", arguments={"path": "a.py"}
    )
    assert_valid("serverRequests/callClientTool.params.json", converter.unstructure(call))
    details = api.SessionDetails(
        session=SESSION,
        info=INFO,
        turn_count=1,
        item_count=2,
        usage=model.TokenUsage(),
        pending_inputs=[api.PendingInputInfo(item=item(), mode=model.SessionInputMode.STEER, turn_id="turn_1")],
    )
    assert_valid("requests/getSessionDetails.result.json", converter.unstructure(details))
    rows: list[list[Any]] = [[1, "2025-03-01T12:00:00.000000Z", None, {"a": [1, None]}, "1.50"]]
    result = api.QueryResult(columns=[api.QueryColumn(name="n", type="BIGINT")], rows=rows, truncated=True)
    assert converter.unstructure(result)["rows"] is rows  # JSON already: sent without a walk through it
    assert_valid("requests/query.result.json", converter.unstructure(result))


# Input: the schema accepts exactly what the converter structures

GOOD_PARAMS: list[tuple[str, dict[str, Any]]] = [
    ("submitInput", {"conversationId": "c", "content": [{"type": "text", "text": "hi"}]}),
    (
        "submitInput",
        {
            "conversationId": "c",
            "content": [{"type": "image", "mimeType": "image/png", "data": "AA=="}],
            "inputId": "in_1",
            "from": {"kind": "client", "name": "vscode"},
            "mode": "steer",
            "futureField": {"ignored": True},
        },
    ),
    ("listConversations", {}),
    ("listConversations", {"limit": 500, "order": "asc", "archived": False, "query": "bug", "cursor": None}),
    ("listItems", {"conversationId": "c", "cursor": 41, "limit": 1}),
    ("createConversation", {"environment": ["A=1", "B="], "executorSettings": {"directory": "/w"}, "model": {}}),
    (
        "forkConversation",
        {"conversationId": "c", "beforeTurnId": "t", "model": {"model": {"provider": "p", "name": "n"}}},
    ),
    ("openConversation", {"conversationId": "c", "environment": None}),
    ("query", {"sql": "SELECT 1"}),
    ("query", {"sql": "SELECT ?, ?", "parameters": [1, "x", None, {"a": [1.5]}], "limit": 100000}),
    ("query", {"sql": "SELECT 1", "parameters": None, "limit": None}),
    ("subscribeRunningConversations", {}),
    (
        "setClientMcpServers",
        {"conversationId": "c", "clientId": "x", "servers": [{"name": "s", "tools": [{"name": "t"}]}]},
    ),
    (
        "setDefinitions",
        {
            "models": [{"ref": {"provider": "ollama", "name": "qwen3"}, "api": "ollama"}],
            "mcpServers": [{"name": "m", "transport": "stdio", "env": {"K": "v"}}],
            "hooks": [{"name": "h", "event": "preToolUse", "command": "true", "timeoutMs": 100}],
        },
    ),
]

BAD_PARAMS: list[tuple[str, dict[str, Any]]] = [
    ("submitInput", {"content": [{"type": "text", "text": "hi"}]}),  # conversationId missing
    ("submitInput", {"conversationId": "c", "content": [{"text": "hi"}]}),  # content[0].type missing
    ("submitInput", {"conversationId": "c", "content": "hi"}),
    ("submitInput", {"conversationId": "c", "content": [], "mode": "shout"}),
    ("submitInput", {"conversationId": "c", "content": [], "mode": None}),
    ("getConversation", {}),
    ("getConversation", {"conversationId": 7}),
    ("listConversations", {"limit": 0}),
    ("listConversations", {"limit": 501}),
    ("listConversations", {"limit": True}),
    ("listItems", {"conversationId": "c", "cursor": "41"}),
    ("createConversation", {"agentName": None}),
    ("createConversation", {"environment": ["NOVALUE"]}),
    ("setDefinitions", {"models": [{"api": "ollama"}]}),
    ("query", {"parameters": []}),
    ("query", {"sql": 1}),
    ("query", {"sql": "SELECT 1", "limit": 0}),
    ("query", {"sql": "SELECT 1", "limit": 100001}),
    ("query", {"sql": "SELECT ?", "parameters": "x"}),
]


@pytest.mark.parametrize(("method", "params"), GOOD_PARAMS)
def test_valid_params_validate_and_structure(method: str, params: dict[str, Any]) -> None:
    assert_valid(f"requests/{method}.params.json", params)
    converter.structure(params, methods.REQUESTS[methods.PREFIX + method].params)


@pytest.mark.parametrize(("method", "params"), BAD_PARAMS)
def test_invalid_params_fail_schema_and_structuring(method: str, params: dict[str, Any]) -> None:
    assert not validator(f"requests/{method}.params.json").is_valid(params)
    with pytest.raises(converter.ParamsError):
        converter.structure(params, methods.REQUESTS[methods.PREFIX + method].params)


def test_client_tool_result_validates_and_structures() -> None:
    result = {"content": [{"type": "text", "text": "done"}]}
    assert_valid("serverRequests/callClientTool.result.json", result)
    assert converter.structure(result, methods.CallClientToolResult).is_error is False
    assert not validator("serverRequests/callClientTool.result.json").is_valid({"isError": True})
