"""The schema, as an ordered list of migrations applied at open.

Never edit a released migration: append a new one. `schema_version` records every version applied.
"""

from __future__ import annotations

import duckdb

from openvaala_lsp.storage.errors import StorageError

_USAGE = """
  input_tokens BIGINT NOT NULL,
  cached_input_tokens BIGINT NOT NULL,
  cache_write_tokens BIGINT NOT NULL,
  output_tokens BIGINT NOT NULL,
  reasoning_tokens BIGINT NOT NULL,
  total_tokens BIGINT NOT NULL"""

_USAGE_SUMS = """
  count(*) AS calls,
  sum(input_tokens)::BIGINT AS input_tokens,
  sum(cached_input_tokens)::BIGINT AS cached_input_tokens,
  sum(cache_write_tokens)::BIGINT AS cache_write_tokens,
  sum(output_tokens)::BIGINT AS output_tokens,
  sum(reasoning_tokens)::BIGINT AS reasoning_tokens,
  sum(total_tokens)::BIGINT AS total_tokens,
  count(*) FILTER (WHERE usage_estimated) AS estimated_calls,
  count(*) FILTER (WHERE error IS NOT NULL) AS failed_calls,
  sum(latency_ms)::BIGINT AS latency_ms"""

# Records have a primary key (they are upserted). The logs have no key or index: DuckDB's ART is used
# for point lookups only, so an index on items(conversation_id, ordinal) left the page queries as fast
# as before (measured at 100k items) while it slows every append; zone maps do the pruning.
V1 = f"""
CREATE TABLE conversations (
  id VARCHAR PRIMARY KEY,
  title VARCHAR NOT NULL,
  agent_name VARCHAR NOT NULL,
  archived BOOLEAN NOT NULL,
  ephemeral BOOLEAN NOT NULL,
  created_at TIMESTAMPTZ NOT NULL,
  updated_at TIMESTAMPTZ NOT NULL,
  last_activity_at TIMESTAMPTZ,
  executor_id VARCHAR,
  directory VARCHAR,
  has_model BOOLEAN NOT NULL,
  model_provider VARCHAR,
  model_name VARCHAR,
  reasoning_effort VARCHAR,
  forked_from_conversation_id VARCHAR,
  forked_from_turn_id VARCHAR
);
CREATE TABLE sessions (
  id VARCHAR PRIMARY KEY,
  conversation_id VARCHAR NOT NULL,
  agent_name VARCHAR NOT NULL,
  model_provider VARCHAR,
  model_name VARCHAR,
  reasoning_effort VARCHAR,
  created_at TIMESTAMPTZ NOT NULL,
  parent_session_id VARCHAR
);
CREATE TABLE turns (
  id VARCHAR PRIMARY KEY,
  conversation_id VARCHAR NOT NULL,
  session_id VARCHAR NOT NULL,
  status VARCHAR NOT NULL,
  started_at TIMESTAMPTZ NOT NULL,
  ended_at TIMESTAMPTZ,
  model_provider VARCHAR,
  model_name VARCHAR,{_USAGE},
  error_kind VARCHAR,
  error_message VARCHAR
);
CREATE SEQUENCE pending_input_seq;
CREATE TABLE pending_inputs (
  item_id VARCHAR PRIMARY KEY,
  conversation_id VARCHAR NOT NULL,
  seq BIGINT NOT NULL DEFAULT nextval('pending_input_seq'),
  mode VARCHAR NOT NULL,
  input_id VARCHAR,
  turn_id VARCHAR,
  payload JSON NOT NULL
);
CREATE TABLE items (
  conversation_id VARCHAR NOT NULL,
  ordinal BIGINT NOT NULL,
  item_id VARCHAR NOT NULL,
  session_id VARCHAR NOT NULL,
  turn_id VARCHAR,
  type VARCHAR NOT NULL,
  status VARCHAR NOT NULL,
  created_at TIMESTAMPTZ NOT NULL,
  input_id VARCHAR,
  payload JSON NOT NULL
);
CREATE SEQUENCE model_call_seq;
CREATE TABLE model_calls (
  seq BIGINT NOT NULL DEFAULT nextval('model_call_seq'),
  id VARCHAR NOT NULL,
  conversation_id VARCHAR NOT NULL,
  session_id VARCHAR NOT NULL,
  turn_id VARCHAR NOT NULL,
  provider VARCHAR NOT NULL,
  model VARCHAR NOT NULL,
  started_at TIMESTAMPTZ NOT NULL,
  latency_ms BIGINT NOT NULL,
  first_token_ms BIGINT,{_USAGE},
  usage_estimated BOOLEAN NOT NULL,
  workspace VARCHAR,
  error VARCHAR
);
-- `day` is the UTC date, whatever the TimeZone of the session that queries the view.
CREATE VIEW usage_by_model_day AS
SELECT CAST(timezone('UTC', started_at) AS DATE) AS day, provider, model,{_USAGE_SUMS}
FROM model_calls GROUP BY ALL;
CREATE VIEW usage_by_workspace AS
SELECT workspace, provider, model,{_USAGE_SUMS},
  min(started_at) AS first_call_at,
  max(started_at) AS last_call_at
FROM model_calls GROUP BY ALL;
"""

# Why a model call was made: a turn's own call, a compaction's summary, a title.
V2 = """
ALTER TABLE model_calls ADD COLUMN purpose VARCHAR NOT NULL DEFAULT 'turn';
"""

# A session with its sub-agents, their sub-agents and so on: what the session cost in all.
V3 = f"""
CREATE VIEW sessions_tree AS
WITH RECURSIVE tree(session_id, member_id) AS (
  SELECT id, id FROM sessions
  UNION ALL
  SELECT tree.session_id, child.id FROM tree JOIN sessions child ON child.parent_session_id = tree.member_id
)
SELECT s.conversation_id, tree.session_id, s.agent_name, s.parent_session_id,
  count(DISTINCT tree.member_id) AS sessions,
  count(m.id) AS calls,
  {
    ", ".join(
        f"coalesce(sum(m.{c}), 0)::BIGINT AS {c}"
        for c in (
            "input_tokens",
            "cached_input_tokens",
            "cache_write_tokens",
            "output_tokens",
            "reasoning_tokens",
            "total_tokens",
        )
    )
}
FROM tree JOIN sessions s ON s.id = tree.session_id LEFT JOIN model_calls m ON m.session_id = tree.member_id
GROUP BY ALL;
"""

# What the user allowed for the rest of a conversation (answerApproval allowAlways).
V4 = """
ALTER TABLE conversations ADD COLUMN always_allowed JSON;
"""

# The analytic schema (schemas/README.md, "Usage analytics"): what a call cost and how full the window
# was, recorded with the call; views that stay stable for users' SQL; the export watermarks.
_TOKENS = (
    "input_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "output_tokens",
    "reasoning_tokens",
    "total_tokens",
)
_PRICE_COLUMNS = ("input", "cached_input", "cache_write", "output", "reasoning")
# a group's cost is the sum of its priced calls when they share one currency; mixed currencies do not add.
# (cheap forms: a call has a currency iff it has a price, and an error iff its status is not ok)
_COST_SUMS = """
  CASE WHEN min(currency) = max(currency) THEN sum(cost) END AS cost,
  CASE WHEN min(currency) = max(currency) THEN min(currency) END AS currency,
  count(*) - count(currency) AS unpriced_calls"""
_CALL_SUMS = f"""
  count(*) AS calls,
  {", ".join(f"coalesce(sum({c}), 0)::BIGINT AS {c}" for c in _TOKENS)},
  count_if(usage_estimated) AS estimated_calls,
  count(error) AS failed_calls,{_COST_SUMS}"""


# the UTC date of a TIMESTAMPTZ, whatever the session's TimeZone: from the epoch, 12x faster than timezone()
def _utc_day(column: str) -> str:
    return f"DATE '1970-01-01' + CAST(epoch_us({column}) // 86400000000 AS INTEGER)"


def _turns_v(*added: str) -> str:
    """turns_v's query; `added`: columns a later version appends (a view's columns are append-only)."""
    more = "".join(f",\n  {column}" for column in added)
    return f"""WITH calls AS (
  SELECT turn_id, any_value(workspace) AS workspace,{_CALL_SUMS}
  FROM model_calls_v GROUP BY turn_id
)
SELECT
  t.id AS turn_id,
  t.started_at,
  {_utc_day("t.started_at")} AS day,
  t.ended_at,
  datediff('millisecond', t.started_at, t.ended_at) AS duration_ms,
  c.workspace,
  t.conversation_id,
  t.session_id,
  s.parent_session_id,
  s.agent_name AS agent,
  t.model_provider AS provider,
  t.model_name AS model,
  t.status,
  t.error_kind,
  t.error_message AS error,
  coalesce(c.calls, 0) AS calls,
  {", ".join(f"coalesce(c.{c}, 0)::BIGINT AS {c}" for c in _TOKENS)},
  coalesce(c.estimated_calls, 0) AS estimated_calls,
  coalesce(c.failed_calls, 0) AS failed_calls,
  c.cost,
  c.currency,
  coalesce(c.unpriced_calls, 0) AS unpriced_calls{more}
FROM turns t LEFT JOIN sessions s ON s.id = t.session_id LEFT JOIN calls c ON c.turn_id = t.id;
"""


V5 = f"""
ALTER TABLE model_calls ADD COLUMN context_window BIGINT;
ALTER TABLE model_calls ADD COLUMN context_tokens BIGINT;
ALTER TABLE model_calls ADD COLUMN price_currency VARCHAR;
{"".join(f"ALTER TABLE model_calls ADD COLUMN price_{c} DOUBLE;{chr(10)}" for c in _PRICE_COLUMNS)}
CREATE TABLE exports (
  destination VARCHAR NOT NULL,
  number BIGINT NOT NULL,
  exported_at TIMESTAMPTZ NOT NULL,
  machine VARCHAR NOT NULL,
  user_name VARCHAR NOT NULL,
  redacted BOOLEAN NOT NULL,
  calls_through_seq BIGINT NOT NULL,
  model_calls BIGINT NOT NULL,
  turns BIGINT NOT NULL,
  compactions BIGINT NOT NULL
);
-- turns (which change until they end) and compactions exported to a destination, by id
CREATE TABLE exported_rows (
  destination VARCHAR NOT NULL,
  number BIGINT NOT NULL,  -- counts once `exports` has this export's row
  kind VARCHAR NOT NULL,
  id VARCHAR NOT NULL
);
CREATE VIEW model_calls_v AS
SELECT
  m.id AS call_id,
  m.seq,
  m.started_at,
  {_utc_day("m.started_at")} AS day,
  m.workspace,
  m.conversation_id,
  m.session_id,
  s.parent_session_id,
  m.turn_id,
  s.agent_name AS agent,
  m.provider,
  m.model,
  m.purpose,
  {", ".join(f"m.{c}" for c in _TOKENS)},
  m.latency_ms,
  m.first_token_ms,
  CASE WHEN m.error IS NULL THEN 'ok' WHEN m.error = 'interrupted' THEN 'interrupted' ELSE 'failed' END AS status,
  m.error,
  m.usage_estimated,
  m.context_window,
  m.context_tokens,
  m.price_currency AS currency,
  (greatest(m.input_tokens - m.cached_input_tokens - m.cache_write_tokens, 0) * m.price_input
    + m.cached_input_tokens * m.price_cached_input
    + m.cache_write_tokens * m.price_cache_write
    + greatest(m.output_tokens - m.reasoning_tokens, 0) * m.price_output
    + m.reasoning_tokens * m.price_reasoning) / 1000000.0 AS cost
FROM model_calls m LEFT JOIN sessions s ON s.id = m.session_id;

CREATE VIEW turns_v AS
{_turns_v()}
CREATE VIEW usage_daily AS
SELECT day, workspace, agent, provider, model,{_CALL_SUMS},
  sum(latency_ms)::BIGINT AS latency_ms
FROM model_calls_v GROUP BY ALL;

CREATE VIEW compactions_v AS
SELECT
  i.item_id,
  i.created_at,
  {_utc_day("i.created_at")} AS day,
  i.conversation_id,
  i.session_id,
  s.parent_session_id,
  i.turn_id,
  s.agent_name AS agent,
  i.payload->>'$.compaction.trigger' AS trigger,
  coalesce(CAST(i.payload->'$.compaction.summarized' AS BOOLEAN), false) AS summarized,
  coalesce(json_array_length(i.payload->'$.compaction.pruned_item_ids'), 0)::BIGINT AS pruned_items,
  coalesce(CAST(i.payload->'$.compaction.tokens_before' AS BIGINT), 0) AS tokens_before,
  coalesce(CAST(i.payload->'$.compaction.tokens_after' AS BIGINT), 0) AS tokens_after,
  greatest(coalesce(CAST(i.payload->'$.compaction.tokens_before' AS BIGINT), 0)
    - coalesce(CAST(i.payload->'$.compaction.tokens_after' AS BIGINT), 0), 0) AS freed
FROM items i LEFT JOIN sessions s ON s.id = i.session_id
WHERE i.type = 'compaction';

CREATE VIEW context_usage AS
WITH events AS (
  SELECT conversation_id, session_id, started_at AS occurred_at, 'call' AS event, call_id, NULL::VARCHAR AS item_id,
    provider, model, context_window, input_tokens AS tokens, context_tokens AS estimated_tokens,
    input_tokens + output_tokens AS tokens_after, NULL::BIGINT AS freed, usage_estimated,
    NULL::VARCHAR AS trigger, NULL::BOOLEAN AS summarized
  FROM model_calls_v WHERE purpose = 'turn' AND status <> 'failed'
  UNION ALL
  SELECT conversation_id, session_id, created_at, 'compaction', NULL, item_id, NULL, NULL, NULL, tokens_before,
    tokens_before, tokens_after, freed, true, trigger, summarized
  FROM compactions_v
)
SELECT conversation_id, session_id, occurred_at, event, call_id, item_id, provider, model,
  coalesce(context_window, last_value(context_window IGNORE NULLS) OVER (
    PARTITION BY session_id ORDER BY occurred_at ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)) AS context_window,
  tokens, estimated_tokens, tokens_after, freed, usage_estimated, trigger, summarized
FROM events;

CREATE OR REPLACE VIEW sessions_tree AS
WITH RECURSIVE tree(session_id, member_id) AS (
  SELECT id, id FROM sessions
  UNION ALL
  SELECT tree.session_id, child.id FROM tree JOIN sessions child ON child.parent_session_id = tree.member_id
)
SELECT s.conversation_id, tree.session_id, s.agent_name, s.parent_session_id,
  count(DISTINCT tree.member_id) AS sessions,
  count(m.call_id) AS calls,
  {", ".join(f"coalesce(sum(m.{c}), 0)::BIGINT AS {c}" for c in _TOKENS)},
  count_if(m.usage_estimated) AS estimated_calls,
  count(m.error) AS failed_calls,
  CASE WHEN min(m.currency) = max(m.currency) THEN sum(m.cost) END AS cost,
  CASE WHEN min(m.currency) = max(m.currency) THEN min(m.currency) END AS currency,
  count(m.call_id) - count(m.currency) AS unpriced_calls
FROM tree JOIN sessions s ON s.id = tree.session_id LEFT JOIN model_calls_v m ON m.session_id = tree.member_id
GROUP BY ALL;
"""

_TOKEN_DOCS = {
    "input_tokens": "tokens sent, cached and cache writes included",
    "cached_input_tokens": "input tokens read from the provider's prompt cache",
    "cache_write_tokens": "input tokens written to the provider's prompt cache",
    "output_tokens": "tokens generated, reasoning included",
    "reasoning_tokens": "output tokens spent on reasoning",
    "total_tokens": "input_tokens + output_tokens",
}
_GROUP_DOCS = {
    "calls": "model calls",
    **{c: f"sum of {c}: {doc}" for c, doc in _TOKEN_DOCS.items()},
    "estimated_calls": "calls whose usage the runtime estimated (the provider reported none)",
    "failed_calls": "calls that failed or were interrupted",
    "cost": "sum of the priced calls' cost; NULL when none is priced or their currencies differ",
    "currency": "the currency of cost; NULL when the calls' currencies differ or none is priced",
    "unpriced_calls": "calls without a price (not in cost)",
}
# `COMMENT ON` the analytic views: `openvaala sql --schema` prints them, `duckdb_columns()` has them
DOCS: dict[str, tuple[str, dict[str, str]]] = {
    "model_calls_v": (
        "One row per model provider call, with its session's agent and parent, status and cost.",
        {
            "call_id": "the call's id",
            "seq": "append order of the call in this database (increases, never repeats)",
            "started_at": "when the request was sent",
            "day": "UTC date of started_at",
            "workspace": "the workspace folder (project) of the conversation",
            "conversation_id": "the conversation",
            "session_id": "the session (a sub-agent's session is one of its own)",
            "parent_session_id": "the session that started this sub-agent session; NULL for a main session",
            "turn_id": "the turn the call served",
            "agent": "the session's agent",
            "provider": "the model's provider",
            "model": "the model's name",
            "purpose": "turn (the agent's own call), compaction (a hand-off) or title",
            **_TOKEN_DOCS,
            "latency_ms": "from the request to the end of the answer",
            "first_token_ms": "from the request to the first streamed event; NULL without one",
            "status": "ok, failed or interrupted",
            "error": "what failed; NULL when ok",
            "usage_estimated": "true: the provider reported no usage and the tokens are the runtime's estimate",
            "context_window": "the model's context window when called; NULL for calls before schema 5",
            "context_tokens": "the runtime's estimate of the request's size (instructions, tools, history)",
            "currency": "the price's currency (ISO 4217); NULL when the model had no price",
            "cost": "what the call cost at the model's price when it was made; NULL when it had none",
        },
    ),
    "turns_v": (
        "One row per turn, with the usage and cost of its own calls (a sub-agent's turns are rows of their own).",
        {
            "turn_id": "the turn's id",
            "started_at": "when the turn started",
            "day": "UTC date of started_at",
            "ended_at": "when it ended; NULL while running",
            "duration_ms": "ended_at - started_at",
            "workspace": "the workspace folder of its calls",
            "conversation_id": "the conversation",
            "session_id": "the session",
            "parent_session_id": "the parent session of a sub-agent; NULL for a main session",
            "agent": "the session's agent",
            "provider": "the turn's model's provider",
            "model": "the turn's model",
            "status": "running, completed, interrupted or failed",
            "error_kind": "the error kind of a failed turn",
            "error": "the error message of a failed turn",
            **_GROUP_DOCS,
        },
    ),
    "usage_daily": (
        "Model calls summed per UTC day, workspace, agent, provider and model.",
        {
            "day": "UTC date",
            "workspace": "the workspace folder",
            "agent": "the agent",
            "provider": "the provider",
            "model": "the model",
            **_GROUP_DOCS,
            "latency_ms": "sum of the calls' latency",
        },
    ),
    "compactions_v": (
        "One row per compaction of a session's context: what triggered it and how many tokens it freed.",
        {
            "item_id": "the compaction item",
            "created_at": "when it was made",
            "day": "UTC date of created_at",
            "conversation_id": "the conversation",
            "session_id": "the session",
            "parent_session_id": "the parent session of a sub-agent; NULL for a main session",
            "turn_id": "the turn that compacted",
            "agent": "the session's agent",
            "trigger": "manual (compactContext), auto (the threshold) or overflow (the provider's error)",
            "summarized": "true: a hand-off replaced the earlier context; false: only old tool outputs were cleared",
            "pruned_items": "tool outputs cleared from the context",
            "tokens_before": "the context's estimated size before",
            "tokens_after": "the context's estimated size after",
            "freed": "tokens_before - tokens_after",
        },
    ),
    "context_usage": (
        "How full each session's context window was: one row per call of the session's own (event 'call') "
        "and per compaction (event 'compaction').",
        {
            "conversation_id": "the conversation",
            "session_id": "the session",
            "occurred_at": "when the call was sent or the compaction made",
            "event": "call or compaction",
            "call_id": "the call (event call)",
            "item_id": "the compaction item (event compaction)",
            "provider": "the call's provider",
            "model": "the call's model",
            "context_window": "the model's window (for a compaction, that of the session's last call before it)",
            "tokens": "the context's size: the call's input tokens, or the size before a compaction",
            "estimated_tokens": "the runtime's estimate of the same",
            "tokens_after": "the context after: input + output of a call, the estimate after a compaction",
            "freed": "tokens a compaction freed",
            "usage_estimated": "true when tokens is an estimate",
            "trigger": "a compaction's trigger",
            "summarized": "whether a compaction summarized (else it cleared tool outputs)",
        },
    ),
    "sessions_tree": (
        "Each session with all its sub-agents (and theirs): sessions, calls, tokens and cost in all.",
        {
            "conversation_id": "the conversation",
            "session_id": "the session at the top of the tree",
            "agent_name": "its agent",
            "parent_session_id": "its own parent; NULL for a main session",
            "sessions": "sessions in the tree, itself included",
            **_GROUP_DOCS,
        },
    ),
}


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _comments(view: str) -> str:
    about, columns = DOCS[view]
    return f"COMMENT ON VIEW {view} IS {_quote(about)};\n" + "".join(
        f"COMMENT ON COLUMN {view}.{column} IS {_quote(doc)};\n" for column, doc in columns.items()
    )


V5 += "".join(_comments(view) for view in DOCS)

# The journal's record number DuckDB has (`journal.py`); `id` names the file, so a journal left beside
# another file is not replayed.
V6 = """
CREATE TABLE storage_journal (id VARCHAR NOT NULL, seq BIGINT NOT NULL);
INSERT INTO storage_journal VALUES (gen_random_uuid()::VARCHAR, 0);
"""

# Images and long texts in files beside the database (`blobs.py`): which conversation, and which of
# its items (or pending inputs), references which file; a file goes with the last row naming it.
V7 = f"""
CREATE TABLE blob_refs (
  conversation_id VARCHAR NOT NULL,
  item_id VARCHAR NOT NULL,
  sha256 VARCHAR NOT NULL,
  bytes BIGINT NOT NULL
);
COMMENT ON TABLE blob_refs IS {
    _quote(
        "the images and long texts kept in files beside the database, in the directory <database>.blobs "
        "(e.g. ~/.local/share/openvaala/openvaala.duckdb.blobs/), each named by the sha256 of its data; "
        "one row per conversation, item and file"
    )
};
COMMENT ON COLUMN blob_refs.item_id IS 'the item (or pending input) whose payload names the file';
COMMENT ON COLUMN blob_refs.sha256 IS 'the name of the file: the sha256 of its data';
COMMENT ON COLUMN blob_refs.bytes IS 'the size of the data: an image''s base64 text, or a text''s UTF-8';
COMMENT ON COLUMN items.payload IS {
    _quote(
        "the whole item as JSON; an image (and a long text, or a tool call's long arguments) stands as "
        '{"blob": <sha256>, "bytes": <size>} where the string was, e.g. content[0].data of an image, '
        "its data in the file <database>.blobs/<sha256> (see blob_refs)"
    )
};
COMMENT ON COLUMN pending_inputs.payload IS 'the input as an item, as in items.payload';
"""

# How each turn ended (`model.TurnReason`) and which revert took it out, in turns and turns_v (comments
# go with a replaced view: all of turns_v's are set again); turns that ended before it get the reason
# their status and error kind tell, an interrupted one none (the user's or the runtime's stop was not
# recorded). And the items of running turns as they stream (`streaming.py`), so a runtime killed
# mid-answer keeps it.
DOCS["turns_v"][1]["reason"] = (
    "how it ended: completed, userInterrupt, runtimeStopped, modelError, maxTokens, limitReached or "
    "cancelledByHook; NULL while running, and for a turn interrupted before schema 8"
)
DOCS["turns_v"][1]["reverted_by"] = "the turn whose revertTurn took this one out of the context; NULL if none"
V8 = f"""
ALTER TABLE turns ADD COLUMN reason VARCHAR;
ALTER TABLE turns ADD COLUMN reverted_by VARCHAR;
UPDATE turns SET reason = CASE
  WHEN status = 'completed' THEN 'completed'
  WHEN status <> 'failed' THEN NULL
  WHEN error_kind = 'hookBlocked' THEN 'cancelledByHook'
  WHEN error_kind = 'internal' THEN 'runtimeStopped'
  ELSE 'modelError' END;
CREATE OR REPLACE VIEW turns_v AS
{_turns_v("t.reason", "t.reverted_by")}
{_comments("turns_v")}
CREATE TABLE streaming_items (
  item_id VARCHAR PRIMARY KEY,
  conversation_id VARCHAR NOT NULL,
  turn_id VARCHAR,
  saved_at TIMESTAMPTZ NOT NULL,
  payload JSON NOT NULL
);
COMMENT ON TABLE streaming_items IS {
    _quote(
        "the items of running turns as they stream (an answer, its reasoning, a tool call's arguments), "
        "saved every second or 4 KiB while they grow; a row goes when its item is logged in items, and the "
        "rows a killed runtime left are logged there, interrupted, when it starts again"
    )
};
COMMENT ON COLUMN streaming_items.saved_at IS 'when the row was saved: the item as it was then';
COMMENT ON COLUMN streaming_items.payload IS 'the whole item as JSON, as in items.payload (never in files)';
"""

# What the agent changed in files: one row per file a tool's result reports changed (`FileChange`),
# written in the commit that logs the result, so SQL sees the lines changed by day, project and model.
# A fork's copied items add none: the change was made once.
_CHANGE_DOCS = {
    "path": "the file's absolute path (after a move, the new one)",
    "kind": "add, update, delete or move",
    "moved_from": "a moved file's old path; NULL otherwise",
    "additions": "lines added (0 for a binary file)",
    "deletions": "lines deleted (0 for a binary file)",
    "is_binary": "true: a binary file, named but not diffed",
}
DOCS["file_changes_v"] = (
    "One row per file a tool call changed (write_file, edit, ...), with its turn's workspace, agent and model.",
    {
        "seq": "append order of the row in this database (increases, never repeats)",
        "changed_at": "when the tool's result was made",
        "day": "UTC date of changed_at",
        "workspace": "the workspace folder (project) of the turn's calls",
        "conversation_id": "the conversation",
        "session_id": "the session",
        "parent_session_id": "the parent session of a sub-agent; NULL for a main session",
        "turn_id": "the turn",
        "item_id": "the toolResult item that reports the change (items.item_id)",
        "tool": "the tool that made it",
        "agent": "the session's agent",
        "provider": "the turn's model's provider",
        "model": "the turn's model",
        **_CHANGE_DOCS,
    },
)
DOCS["lines_changed_daily"] = (
    "Lines the agent's tool calls changed, summed per UTC day, workspace, agent, provider and model.",
    {
        "day": "UTC date",
        "workspace": "the workspace folder",
        "agent": "the agent",
        "provider": "the provider",
        "model": "the model",
        "files": "distinct files changed",
        "changes": "file changes (a file changed by three calls counts three)",
        "additions": "lines added",
        "deletions": "lines deleted",
    },
)
V9 = f"""
CREATE SEQUENCE file_change_seq;
CREATE TABLE file_changes (
  seq BIGINT NOT NULL DEFAULT nextval('file_change_seq'),
  conversation_id VARCHAR NOT NULL,
  turn_id VARCHAR,
  item_id VARCHAR NOT NULL,
  tool VARCHAR NOT NULL,
  path VARCHAR NOT NULL,
  kind VARCHAR NOT NULL,
  moved_from VARCHAR,
  additions BIGINT NOT NULL,
  deletions BIGINT NOT NULL,
  is_binary BOOLEAN NOT NULL,
  changed_at TIMESTAMPTZ NOT NULL
);
COMMENT ON TABLE file_changes IS {
    _quote(
        "one row per file a tool call changed, as its toolResult item reports it (items.payload has the "
        "diff: tool_result.file_changes); file_changes_v adds the turn's workspace, agent and model"
    )
};
{"".join(f"COMMENT ON COLUMN file_changes.{column} IS {_quote(doc)};{chr(10)}" for column, doc in _CHANGE_DOCS.items())}
CREATE VIEW file_changes_v AS
WITH calls AS (
  SELECT turn_id, any_value(workspace) AS workspace FROM model_calls
  WHERE turn_id IN (SELECT turn_id FROM file_changes) GROUP BY turn_id
)
SELECT
  f.seq,
  f.changed_at,
  {_utc_day("f.changed_at")} AS day,
  c.workspace,
  f.conversation_id,
  t.session_id,
  s.parent_session_id,
  f.turn_id,
  f.item_id,
  f.tool,
  s.agent_name AS agent,
  t.model_provider AS provider,
  t.model_name AS model,
  f.path,
  f.kind,
  f.moved_from,
  f.additions,
  f.deletions,
  f.is_binary
FROM file_changes f LEFT JOIN turns t ON t.id = f.turn_id LEFT JOIN sessions s ON s.id = t.session_id
  LEFT JOIN calls c ON c.turn_id = f.turn_id;

CREATE VIEW lines_changed_daily AS
SELECT day, workspace, agent, provider, model,
  count(DISTINCT path) AS files,
  count(*) AS changes,
  sum(additions)::BIGINT AS additions,
  sum(deletions)::BIGINT AS deletions
FROM file_changes_v GROUP BY ALL;
{_comments("file_changes_v")}{_comments("lines_changed_daily")}"""

MIGRATIONS: tuple[tuple[int, str], ...] = (
    (1, V1),
    (2, V2),
    (3, V3),
    (4, V4),
    (5, V5),
    (6, V6),
    (7, V7),
    (8, V8),
    (9, V9),
)
LATEST_VERSION = MIGRATIONS[-1][0]


def current_version(cur: duckdb.DuckDBPyConnection) -> int:
    rows = cur.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchall()
    return int(rows[0][0])


def migrate(cur: duckdb.DuckDBPyConnection, path: str) -> int:
    """Brings the file to LATEST_VERSION in one transaction; a no-op on an up-to-date file."""
    cur.execute("BEGIN")
    try:
        cur.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ)")
        version = current_version(cur)
        if version > LATEST_VERSION:
            raise StorageError(
                f"storage file {path} has schema version {version}; this openvaala knows up to {LATEST_VERSION}"
            )
        for target, sql in MIGRATIONS:
            if target > version:
                cur.execute(sql)
                cur.execute("INSERT INTO schema_version VALUES (?, now())", [target])
        cur.execute("COMMIT")
    except BaseException:
        cur.execute("ROLLBACK")
        raise
    return LATEST_VERSION
