"""The team's usage on Spark: three users export their histories with `openvaala export --parquet`
into their own folders of one shared "bucket"; PySpark (local mode, a real JVM) reads them all
together and gets, per UTC day and per model, the totals of each user's `openvaala usage` summed.
Two histories are generated (bench/usage_data.py), one is made by the runtime itself (real turns
against the scripted model). README's PySpark lines ("The team's usage on Spark and Trino") read the bucket."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bench_usage import usage_data
from fake_provider import ChatStream, FakeProviderServer
from processes import openvaala
from pyspark.sql import SparkSession
from turn_helpers import USAGE, Session, start

WAIT = 60.0
SUMMED = ("calls", "input_tokens", "cached_input_tokens", "output_tokens", "reasoning_tokens", "total_tokens")

# README: per day, and per model, over every user's export in the bucket
SPARK_PER_DAY = """
SELECT day, count(*) AS calls, sum(input_tokens) AS input_tokens,
  sum(cached_input_tokens) AS cached_input_tokens, sum(output_tokens) AS output_tokens,
  sum(reasoning_tokens) AS reasoning_tokens, sum(total_tokens) AS total_tokens, sum(cost) AS cost
FROM model_calls GROUP BY day"""
SPARK_PER_MODEL = """
SELECT provider, model, count(*) AS calls, sum(input_tokens) AS input_tokens,
  sum(cached_input_tokens) AS cached_input_tokens, sum(output_tokens) AS output_tokens,
  sum(reasoning_tokens) AS reasoning_tokens, sum(total_tokens) AS total_tokens, sum(cost) AS cost
FROM model_calls GROUP BY provider, model"""


def readme_spark_lines() -> str:
    """The PySpark lines of README's "The team's usage on Spark and Trino"."""
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.DOTALL)
    (lines,) = [block for block in blocks if "recursiveFileLookup" in block]
    return str(lines)


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    if shutil.which("java") is None:
        pytest.fail("PySpark needs Java 17 or later on PATH (Debian: apt-get install openjdk-17-jre-headless)")
    scratch = tmp_path_factory.mktemp("spark")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # a driver on loopback, not the machine's address
    session = (
        SparkSession.builder.master("local[1]")
        .appName("openvaala team usage")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "512m")
        .config("spark.local.dir", str(scratch))
        .config("spark.sql.warehouse.dir", str(scratch / "warehouse"))
        .getOrCreate()
    )
    try:
        yield session
    finally:
        session.stop()


async def _runtime_history(home: Path, workspace: Path, provider: FakeProviderServer) -> None:
    """Two real turns, one with a tool call: three model calls the runtime recorded itself."""
    lsp = await start(home, workspace, provider)
    try:
        (workspace / "a.txt").write_text("A\n")
        provider.enqueue(
            "openai-chat",
            ChatStream().tool_call("c1", "read_file", ['{"path": "a.txt"}']).finish(usage=USAGE).response(),
            ChatStream().text("It says A.").finish(usage=USAGE).response(),
            ChatStream().text("Done.").finish(usage=USAGE).response(),
        )
        session = await Session.open(lsp)
        await session.submit("read a.txt")
        assert (await session.turn_completed())["status"] == "completed"
        await session.submit("thanks")
        assert (await session.turn_completed(2))["status"] == "completed"
    finally:
        await lsp.shutdown()


async def _cli(home: Path, *args: str) -> str:
    code, out, err = await openvaala(home, *args, wait=WAIT)
    assert code == 0, err
    return out


def _add(totals: dict[Any, dict[str, float]], key: Any, row: dict[str, Any]) -> None:
    for column in (*SUMMED, "cost"):
        totals[key][column] += row[column] or 0


async def test_spark_over_a_bucket_of_exports_gets_the_usage_totals(
    tmp_path: Path, workspace: Path, provider: FakeProviderServer, spark: SparkSession
) -> None:
    bucket = tmp_path / "bucket"
    per_day: dict[Any, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    per_model: dict[Any, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for user, calls in (("alice", 3_000), ("bob", 1_200), ("carol", 0)):
        home = tmp_path / user
        home.mkdir()
        if calls:
            usage_data.generate(str(home / "openvaala.duckdb"), calls)
        else:
            await _runtime_history(home, workspace, provider)
        out = await _cli(home, "export", "--parquet", str(bucket / user), "--user", user, "--machine", "laptop")
        # the runtime's history: its turns' three calls, and the conversation's title if it was made by then
        counted = f"{calls:,} model_calls" if calls else ""
        assert out.startswith(f"export 1 to {bucket / user} as {user}@laptop: {counted}")
        for row in json.loads(await _cli(home, "usage", "day", "--format", "json")):
            _add(per_day, row["day"], row)
        for row in json.loads(await _cli(home, "usage", "model", "--format", "json")):
            _add(per_model, (row["provider"], row["model"]), row)
    assert ("fake", "fake-model") in per_model and ("openai", "gpt-5") in per_model

    # what a team lead runs, README's lines: every user's export in the bucket, read as one table
    # (the view `model_calls`), then the spend per person and model of the last 30 days shown
    exec(readme_spark_lines().replace("s3a://team-bucket/openvaala", str(bucket)), {"spark": spark})
    users = {row["user"] for row in spark.sql("SELECT DISTINCT user FROM model_calls").collect()}
    assert users == {"alice", "bob", "carol"}
    spark_day = {str(row["day"]): row.asDict() for row in spark.sql(SPARK_PER_DAY).collect()}
    spark_model = {(row["provider"], row["model"]): row.asDict() for row in spark.sql(SPARK_PER_MODEL).collect()}
    assert spark_day.keys() == per_day.keys() and spark_model.keys() == per_model.keys()
    for spark_rows, usage_rows in ((spark_day, per_day), (spark_model, per_model)):
        for key, usage in usage_rows.items():
            row = spark_rows[key]
            assert {c: row[c] for c in SUMMED} == {c: usage[c] for c in SUMMED}, key
            assert math.isclose(row["cost"] or 0, usage["cost"], rel_tol=1e-9, abs_tol=1e-9), key
