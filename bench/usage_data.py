"""A history database with many model calls, made with DuckDB SQL (`range()`), for the usage reports'
tests and benchmarks: `python bench/usage_data.py FILE [--calls N]`.

The file has openvaala's real schema (the migrations run first) and rows shaped like the runtime's:
20k conversations per 1M calls over 90 days, sub-agent sessions, turns, compaction items, four
models (three priced in USD, a local one without a price), failed, interrupted and estimated calls.
Every value is a function of the row number, so two files made alike are equal. `add_calls` appends
more (newer) calls, turns and compactions, as a runtime would.
"""

from __future__ import annotations

import argparse
import datetime as dt
import time

import duckdb

from openvaala_lsp.storage.migrations import migrate

START = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
DAYS = 90
CALLS_PER_CONVERSATION = 50
CALLS_PER_TURN = 5  # divides CALLS_PER_CONVERSATION and 40 (where sub-agents start)
COMPACTION_EVERY = 200  # calls
# provider, model, window, currency, input, cached input, cache write, output, reasoning (per million)
MODELS = [
    ("openai", "gpt-5", 400_000, "USD", 1.25, 0.125, 1.25, 10.0, 10.0),
    ("openai", "gpt-5-mini", 400_000, "USD", 0.25, 0.025, 0.25, 2.0, 2.0),
    ("anthropic", "claude-sonnet-4", 200_000, "USD", 3.0, 0.3, 3.75, 15.0, 15.0),
    ("local", "gemma3-270m", 4_096, None, None, None, None, None, None),
]
AGENTS = ["lead", "reviewer", "assistant"]


def _models_sql() -> str:
    def value(v: object) -> str:
        return "NULL" if v is None else f"'{v}'" if isinstance(v, str) else str(v)

    rows = ", ".join(f"({k}, {', '.join(value(v) for v in m)})" for k, m in enumerate(MODELS))
    names = "k, provider, model, ctx_window, currency, p_in, p_cached, p_cw, p_out, p_r"
    return f"SELECT * FROM (VALUES {rows}) AS m({names})"


def generate(path: str, calls: int = 1_000_000) -> None:
    """A new file at `path` with `calls` model calls (and what they belong to)."""
    con = duckdb.connect(path)
    try:
        con.execute("SET GLOBAL TimeZone = 'UTC'")
        migrate(con, path)
        _fill(con, 0, calls, calls)
        con.execute("CHECKPOINT")
    finally:
        con.close()


def add_calls(path: str, first: int, count: int, spread_over: int) -> None:
    """Appends calls `first` .. `first + count - 1` (with their conversations, sessions, turns and
    compactions), timed as if the file held `spread_over` calls over DAYS days."""
    con = duckdb.connect(path)
    try:
        con.execute("SET GLOBAL TimeZone = 'UTC'")
        _fill(con, first, first + count, spread_over)
    finally:
        con.close()


def _fill(con: duckdb.DuckDBPyConnection, first: int, end: int, spread_over: int) -> None:
    step_us = DAYS * 86_400 * 1_000_000 // spread_over  # microseconds between calls
    start = f"TIMESTAMPTZ '{START.isoformat()}'"
    at = f"{start} + to_microseconds(i * {step_us})"
    conv_first = first // CALLS_PER_CONVERSATION
    conv_end = (end + CALLS_PER_CONVERSATION - 1) // CALLS_PER_CONVERSATION
    if first % CALLS_PER_CONVERSATION:
        conv_first += 1  # that conversation exists already
    con.execute("BEGIN")
    con.execute(
        f"""
        INSERT INTO conversations (id, title, agent_name, archived, ephemeral, created_at, updated_at,
          directory, has_model)
        SELECT 'conv_' || c, 'Conversation ' || c, 'lead', false, false, t, t, '/home/dev/project' || (c % 7), false
        FROM (SELECT range AS c, {start} + to_microseconds(range * {CALLS_PER_CONVERSATION} * {step_us}) AS t
              FROM range({conv_first}, {conv_end}))
        """
    )
    # every conversation has a main session; every fifth one a sub-agent (the reviewer) too
    con.execute(
        f"""
        INSERT INTO sessions (id, conversation_id, agent_name, created_at, parent_session_id)
        SELECT 'sess_' || c, 'conv_' || c, CASE WHEN c % 3 = 0 THEN 'assistant' ELSE 'lead' END, t, NULL
        FROM (SELECT range AS c, {start} + to_microseconds(range * {CALLS_PER_CONVERSATION} * {step_us}) AS t
              FROM range({conv_first}, {conv_end}))
        UNION ALL
        SELECT 'sub_' || c, 'conv_' || c, 'reviewer', t, 'sess_' || c
        FROM (SELECT range AS c, {start} + to_microseconds(range * {CALLS_PER_CONVERSATION} * {step_us}) AS t
              FROM range({conv_first}, {conv_end}))
        WHERE c % 5 = 0
        """
    )
    con.execute(
        f"""
        CREATE TEMP TABLE gen AS
        SELECT i, c, m.*,
          CASE WHEN c % 5 = 0 AND i % {CALLS_PER_CONVERSATION} >= 40 THEN 'sub_' ELSE 'sess_' END || c AS session_id,
          'turn_' || c || '_' || (i % {CALLS_PER_CONVERSATION}) // {CALLS_PER_TURN} AS turn_id,
          {at} AS started_at,
          h
        FROM (SELECT range AS i, range // {CALLS_PER_CONVERSATION} AS c, hash(range) AS h FROM range({first}, {end}))
        JOIN ({_models_sql()}) m ON m.k = (c * 7 + i // 1000) % {len(MODELS)}
        """
    )
    con.execute(
        f"""
        INSERT INTO model_calls (id, conversation_id, session_id, turn_id, provider, model, started_at,
          latency_ms, first_token_ms, input_tokens, cached_input_tokens, cache_write_tokens, output_tokens,
          reasoning_tokens, total_tokens, usage_estimated, workspace, error, purpose, context_window,
          context_tokens, price_currency, price_input, price_cached_input, price_cache_write, price_output,
          price_reasoning)
        SELECT 'call_' || i, 'conv_' || c, session_id, turn_id, provider, model, started_at,
          200 + h % 20000, CASE WHEN h % 100 = 0 THEN NULL ELSE 50 + h % 2000 END,
          input, cached, cache_write, output, reasoning, input + output,
          provider = 'local', '/home/dev/project' || (c % 7),
          CASE WHEN h % 100 = 0 THEN 'ProviderError: overloaded' WHEN h % 200 = 1 THEN 'interrupted' END,
          CASE WHEN i % {CALLS_PER_CONVERSATION} = 3 THEN 'title'
               WHEN i % {COMPACTION_EVERY} = 199 THEN 'compaction' ELSE 'turn' END,
          ctx_window, least(input + h % 500, ctx_window),
          currency, p_in, p_cached, p_cw, p_out, p_r
        FROM (SELECT *,
            least(1000 + (h >> 8) % 60000, ctx_window) AS input,
            least(1000 + (h >> 8) % 60000, ctx_window) * ((h >> 24) % 90) // 100 AS cached,
            -- input includes cache reads and writes (the runtime's normalised usage)
            CASE WHEN provider = 'anthropic' THEN least((h >> 32) % 2000, least(1000 + (h >> 8) % 60000, ctx_window)
              - least(1000 + (h >> 8) % 60000, ctx_window) * ((h >> 24) % 90) // 100) ELSE 0 END AS cache_write,
            20 + (h >> 40) % 4000 AS output,
            CASE WHEN provider = 'openai' THEN ((h >> 40) % 4000) // 3 ELSE 0 END AS reasoning
          FROM gen)
        ORDER BY i
        """
    )
    con.execute(
        """
        INSERT INTO turns (id, conversation_id, session_id, status, started_at, ended_at, model_provider,
          model_name, input_tokens, cached_input_tokens, cache_write_tokens, output_tokens, reasoning_tokens,
          total_tokens, error_kind, error_message)
        SELECT turn_id, 'conv_' || any_value(c), any_value(session_id),
          CASE WHEN bool_or(h % 100 = 0) THEN 'failed' WHEN bool_or(h % 200 = 1) THEN 'interrupted'
               ELSE 'completed' END,
          min(started_at), max(started_at) + INTERVAL 20 SECOND, any_value(provider), any_value(model),
          0, 0, 0, 0, 0, 0,
          CASE WHEN bool_or(h % 100 = 0) THEN 'overloaded' END,
          CASE WHEN bool_or(h % 100 = 0) THEN 'the provider is overloaded' END
        FROM gen GROUP BY turn_id
        """
    )
    con.execute(
        f"""
        INSERT INTO items (conversation_id, ordinal, item_id, session_id, turn_id, type, status, created_at, payload)
        SELECT 'conv_' || c, 1000 + i, 'item_compaction_' || i, session_id, turn_id, 'compaction', 'completed',
          started_at + INTERVAL 1 SECOND,
          json_object('id', 'item_compaction_' || i, 'type', 'compaction', 'compaction', json_object(
            'trigger', CASE WHEN i % 3 = 0 THEN 'manual' ELSE 'auto' END, 'summarized', i % 2 = 0,
            'pruned_item_ids', CASE WHEN i % 2 = 0 THEN json_array() ELSE json_array('a', 'b', 'c') END,
            'tokens_before', least(ctx_window, 150000), 'tokens_after', least(ctx_window, 150000) // 5))
        FROM gen WHERE i % {COMPACTION_EVERY} = 199
        """
    )
    con.execute("DROP TABLE gen")
    con.execute("COMMIT")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    parser.add_argument("--calls", type=int, default=1_000_000)
    args = parser.parse_args()
    started = time.monotonic()
    generate(args.path, args.calls)
    print(f"{args.calls} calls in {args.path}: {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
