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

MIGRATIONS: tuple[tuple[int, str], ...] = ((1, V1), (2, V2), (3, V3), (4, V4))
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
