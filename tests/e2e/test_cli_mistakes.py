"""The real commands fed a user's mistakes, and run on a fresh home: each mistake is one line on
stderr naming what was wrong, exit code 2, never a traceback; an empty history is an empty report
with exit code 0 (usage, sql, export). tests/test_cli_args.py fuzzes the parser in-process."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
from processes import openvaala

WAIT = 60.0

MISTAKES = {
    # each command with a misspelled option, a bad value, a missing directory or an unknown word
    "openvaala": (["--verbose"], "openvaala: unknown option --verbose"),
    "openvaala command": (["stats"], "openvaala: unknown command 'stats'"),
    "setup": (["setup", "--provider", "openia", "--yes"], "openvaala setup: --provider cannot be 'openia'"),
    "setup misspelled": (["setup", "--no-chek"], "unknown option --no-chek (did you mean --no-check?)"),
    "trust": (["trust", "/no/such/dir"], "openvaala trust: no such directory: /no/such/dir"),
    "doctor": (["doctor", "--ofline"], "openvaala doctor: unknown option --ofline (did you mean --offline?)"),
    "demo": (["demo", "--directory", "/no/such/dir"], "openvaala demo: --directory: no such directory: /no/such/dir"),
    "sql": (["sql", "--limit", "lots", "SELECT 1"], "openvaala sql: --limit: not a whole number: 'lots'"),
    "sql nothing": (["sql"], "openvaala sql: give one statement, or --schema"),
    "usage": (["usage", "--sinse", "7d"], "openvaala usage: unknown option --sinse (did you mean --since?)"),
    "usage value": (["usage", "--since", "last week"], "--since: not a day, a time or an age"),
    "usage plot": (["usage", "--plot", "chart.gif"], "--plot: makes a .png or an .svg file, not 'chart.gif'"),
    "usage order": (["usage", "--since", "2025-03-02", "--until", "2025-03-01"], "--until is not after --since"),
    "export": (["export", "--parquet"], "openvaala export: --parquet: expected one argument"),
    "export file": (["export", "--parquet", "/etc/hostname"], "openvaala export: --parquet: not a folder"),
}


@pytest.mark.parametrize("case", list(MISTAKES))
async def test_each_command_names_the_mistake_in_one_line(case: str, home: Path) -> None:
    argv, named = MISTAKES[case]
    code, out, err = await openvaala(home, *argv, wait=WAIT)
    assert (code, out) == (2, ""), err
    assert err.count("\n") == 1 and named in err and "Traceback" not in err, err
    assert not (home / "openvaala.duckdb").exists()  # a mistake starts nothing


LSP_MISTAKES = [
    (["--stdio"], "openvaala-lsp: unknown option --stdio"),
    (["--log-level", "loud"], "openvaala-lsp: --log-level cannot be 'LOUD'"),
    (["--standalone", "--log-file", "/no/such/dir/lsp.log"], "--log-file: cannot write /no/such/dir/lsp.log"),
]


@pytest.mark.parametrize(("argv", "named"), LSP_MISTAKES)
async def test_openvaala_lsp_names_the_mistake_in_one_line(argv: list[str], named: str, home: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "openvaala_lsp",
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "OPENVAALA_HOME": str(home)},
    )
    out, err = await asyncio.wait_for(process.communicate(), WAIT)
    text = err.decode()
    assert (process.returncode, out) == (2, b""), text
    assert text.count("\n") == 1 and named in text and "Traceback" not in text, text


async def test_an_empty_history_is_an_empty_report(home: Path, tmp_path: Path) -> None:
    """A fresh home: no database yet, no host running. Each report is empty, and says so, with exit 0."""
    code, out, err = await openvaala(home, "usage", wait=WAIT)
    assert (code, out, err) == (0, "no model calls\n", "")
    code, out, err = await openvaala(home, "usage", "model", "--format", "json", wait=WAIT)
    assert (code, json.loads(out), err) == (0, [], "")
    code, out, err = await openvaala(home, "usage", "agent", "--format", "csv", wait=WAIT)
    assert code == 0 and out.splitlines()[0].startswith("agent,") and len(out.splitlines()) == 1
    code, out, err = await openvaala(home, "usage", "--plot", str(tmp_path / "empty.svg"), wait=WAIT)
    assert code == 0 and (tmp_path / "empty.svg").read_text().startswith("<?xml"), err
    code, out, err = await openvaala(
        home, "sql", "SELECT count(*) AS calls FROM model_calls", "--format", "json", wait=WAIT
    )
    assert (code, json.loads(out), err) == (0, [{"calls": 0}], "")
    code, out, err = await openvaala(home, "export", "--parquet", str(tmp_path / "pool"), wait=WAIT)
    assert code == 0 and err == "" and ": 0 model_calls (0 files), 0 turns (0 files)" in out, out


@pytest.mark.parametrize("argv", [["trust", "."], ["setup", "--provider", "ollama", "--no-check", "--yes"], ["usage"]])
async def test_a_home_that_cannot_be_made_is_one_line(argv: list[str], tmp_path: Path) -> None:
    """OPENVAALA_HOME naming a file: the command says which path it could not use, no traceback."""
    home = tmp_path / "not-a-folder"
    home.write_text("")
    code, _, err = await openvaala(home, *argv, wait=WAIT)
    assert code == 1 and err.count("\n") == 1 and str(home) in err and "Traceback" not in err, err
