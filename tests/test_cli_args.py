"""The command line's mistakes and words, in-process: every wrong argument list ends in one line on
stderr naming what was wrong and exit code 2 (fuzzed with hypothesis over each command's own options),
counts read "1 call", and `export --help` speaks the user's words. tests/e2e/test_cli_mistakes.py
runs the same mistakes through the real commands."""

from __future__ import annotations

import argparse
import datetime as dt

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from openvaala_lsp.cli import demo, export, lsp, main as user_cli, sql as sql_cli, usage
from openvaala_lsp.cli.args import CliParser, plural
from openvaala_lsp.storage.reports import REPORTS, Filters

COMMANDS = ["setup", "doctor", "demo", "sql", "usage", "export", "trust"]
# argparse's own exits that are not mistakes: they print help or the version and exit 0
NOT_MISTAKES = {"-h", "--help", "--version"}


def parse(parser: argparse.ArgumentParser, argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """(exit code, stderr) of parsing `argv`; exit code 0 when it parsed."""
    try:
        parser.parse_args(argv)
    except SystemExit as exited:
        return int(exited.code or 0), capsys.readouterr().err
    return 0, capsys.readouterr().err


MISTAKES = [
    # (argv, what the one line must name)
    (["usage", "--sinse", "7d"], "unknown option --sinse (did you mean --since?)"),
    (["usage", "--since", "yesterday"], "--since: not a day, a time or an age (7d, 12h, 2w): 'yesterday'"),
    (["usage", "--limit", "x"], "--limit: not a whole number: 'x'"),
    (["usage", "--limit", "0"], "--limit: must be between 1 and 100,000, not 0"),
    (["usage", "weekly"], "unknown report 'weekly' (choose from day, model, project, conversation, agent)"),
    (["usage", "--format", "xml"], "--format cannot be 'xml' (choose from table, csv, json)"),
    (["usage", "--plot", "chart.gif"], "--plot: makes a .png or an .svg file, not 'chart.gif'"),
    (["usage", "--bar", "money"], "--bar cannot be 'money'"),
    (["sql", "--limt", "3", "SELECT 1"], "unknown option --limt (did you mean --limit?)"),
    (["sql", "--timeout", "soon", "SELECT 1"], "--timeout: not a number of seconds: 'soon'"),
    (["sql", "SELECT 1", "SELECT 2"], "unexpected argument: 'SELECT 2'"),
    (["export"], "the following arguments are required: --parquet"),
    (["export", "--parquet", "out", "--redcat"], "unknown option --redcat (did you mean --redact?)"),
    (["demo", "--directory", "/no/such/dir"], "--directory: no such directory: /no/such/dir"),
    (["demo", "--dir=/tmp", "--verbose"], "unknown option --verbose"),
    (["trust", "/no/such/dir"], "no such directory: /no/such/dir"),
    (["setup", "--provider", "openia"], "--provider cannot be 'openia'"),
    (["setup", "--context-window", "-5"], "--context-window: a positive whole number of tokens"),
    (["setup", "--base-url", "localhost:8000"], "--base-url: 'localhost:8000' is not an http:// or https:// URL"),
    (["doctor", "--ofline"], "unknown option --ofline (did you mean --offline?)"),
    (["doctor", "now", "please"], "unexpected arguments: now please"),
    (["sqll"], "unknown command 'sqll'"),
    (["--verbose", "usage"], "unknown option --verbose"),
    (["trust", "~nosuchuser0/x"], "no such user's home: ~nosuchuser0"),  # found by the fuzzing below
    (["usage", "--project", "~nosuchuser0"], "--project: no such user's home: ~nosuchuser0"),
    (["export", "--parquet", "~nosuchuser0/pool"], "--parquet: no such user's home: ~nosuchuser0"),
    (["trust", "/no/such\n\x1b[2Jdir"], "no such directory: /no/such\\n\\x1b[2Jdir"),  # escaped: still one line
]


@pytest.mark.parametrize(("argv", "named"), MISTAKES, ids=[" ".join(argv) for argv, _ in MISTAKES])
def test_each_mistake_is_one_line_naming_it(
    argv: list[str], named: str, capsys: pytest.CaptureFixture[str], tmp_path: pytest.TempPathFactory
) -> None:
    code, err = parse(user_cli.build_parser(), argv, capsys)
    assert code == 2
    assert err.count("\n") == 1 and named in err, err
    command = argv[0] if argv[0] in COMMANDS else None
    assert err.startswith(f"openvaala {command}: " if command else "openvaala: ")


def test_a_contradiction_only_the_command_sees_is_one_line_too(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        user_cli.main(["usage", "--since", "2025-03-02", "--until", "2025-03-01"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == "openvaala usage: --until is not after --since (see openvaala usage --help)\n"
    with pytest.raises(SystemExit) as exited:
        user_cli.main(["sql"])
    assert exited.value.code == 2 and "openvaala sql: give one statement, or --schema" in capsys.readouterr().err


LSP_MISTAKES = [
    (["--stdio"], "unknown option --stdio"),
    (["--log-levl", "DEBUG"], "unknown option --log-levl (did you mean --log-level?)"),
    (["--log-level", "loud"], "--log-level cannot be 'LOUD' (choose from DEBUG, INFO, WARNING, ERROR)"),
    (["serve"], "unexpected argument: serve"),
]


@pytest.mark.parametrize(("argv", "named"), LSP_MISTAKES, ids=[" ".join(argv) for argv, _ in LSP_MISTAKES])
def test_openvaala_lsp_mistakes_are_one_line(argv: list[str], named: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = parse(lsp._parser(), argv, capsys)
    assert code == 2 and err.count("\n") == 1 and err.startswith("openvaala-lsp: ") and named in err, err


def test_what_parses_still_parses(capsys: pytest.CaptureFixture[str]) -> None:
    parser = user_cli.build_parser()
    args = parser.parse_args(["usage", "model", "--sin", "7d", "--limit=5", "--plot", "x.SVG"])
    assert args.report == "model" and args.limit == 5 and isinstance(args.since, dt.datetime)
    args = parser.parse_args(["sql", "-- a comment\nSELECT 1", "--format", "csv"])
    assert args.query.startswith("-- a comment")
    assert parser.parse_args(["sql", "SELECT -1", "--limit", "3"]).limit == 3
    assert lsp._parser().parse_args(["--log-level", "debug"]).log_level == "DEBUG"


def _options(parser: CliParser) -> dict[str, list[str]]:
    """Each command's option names, from the parser itself."""
    commands = parser._subcommands()
    return {name: sub._option_names() for name, sub in commands.items()}


OPTIONS = _options(user_cli.build_parser())


def _misspell(option: str, data: st.DataObject) -> str:
    """`option` with one letter dropped, doubled or swapped: never a name (or unique prefix) argparse takes."""
    body = option.lstrip("-")
    at = data.draw(st.integers(0, len(body) - 1))
    kind = data.draw(st.sampled_from(["drop", "double", "swap", "append"]))
    if kind == "drop":
        body = body[:at] + body[at + 1 :]
    elif kind == "double":
        body = body[:at] + body[at] + body[at:]
    elif kind == "swap" and at + 1 < len(body):
        body = body[:at] + body[at + 1] + body[at] + body[at + 2 :]
    else:
        body += "x"
    return "--" + body


VALUES = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=12)


# derandomized, as the wire fuzzing: the same examples on every run, so CI never meets a new one by chance
FUZZ = settings(
    derandomize=True, database=None, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@settings(FUZZ, max_examples=1000)
@given(data=st.data())
def test_fuzzed_argument_lists_parse_or_fail_in_one_line(
    capsys: pytest.CaptureFixture[str], data: st.DataObject
) -> None:
    """Any list of a command's options and odd values either parses or is one line and exit 2; a
    misspelled option anywhere in it is what the line names."""
    command = data.draw(st.sampled_from(COMMANDS))
    options = [name for name in OPTIONS[command] if name not in NOT_MISTAKES]
    odd = st.sampled_from(["7d", "-1", "--", "-", "table", "day", "--x", "-q", "~nosuchuser0", "~"])
    token = st.one_of(st.sampled_from(options), VALUES, odd) if options else st.one_of(VALUES, odd)
    argv = [command, *data.draw(st.lists(token, max_size=6))]
    if data.draw(st.booleans()) and options:
        wrong = _misspell(data.draw(st.sampled_from([o for o in options if o.startswith("--")])), data)
        parser = user_cli.build_parser()._subcommands()[command]
        if not parser._known(wrong):
            # among known options and plain values (not `--`, after which everything is a value)
            argv = [t for t in argv if t in options or t in COMMANDS or not t.startswith("-")]
            argv.insert(data.draw(st.integers(1, len(argv))), wrong)
            code, err = parse(user_cli.build_parser(), argv, capsys)
            assert code == 2 and err.count("\n") == 1 and f"unknown option {wrong}" in err, (argv, err)
            return
    code, err = parse(user_cli.build_parser(), argv, capsys)
    assert code in (0, 2), (argv, err)
    assert err.count("\n") == (1 if code else 0) and "Traceback" not in err, (argv, err)


def test_counts_read_one_call_one_file() -> None:
    assert [plural(1, "call"), plural(2, "call"), plural(1000, "file"), plural(0, "file")] == [
        "1 call",
        "2 calls",
        "1,000 files",
        "0 files",
    ]
    row = {
        "day": "2025-03-01",
        "calls": 1,
        "input_tokens": 10,
        "cached_input_tokens": 0,
        "output_tokens": 2,
        "reasoning_tokens": 0,
        "total_tokens": 12,
        "lines_added": 0,
        "lines_deleted": 0,
        "cost": None,
        "currency": None,
        "unpriced_calls": 1,
        "estimated_calls": 1,
    }
    result = {"columns": [{"name": name} for name in row], "rows": [list(row.values())], "truncated": False}
    text = usage.render_report(REPORTS["day"], result, "tokens", Filters())
    assert "1 call has no price" in text and "1 call reported no usage: its tokens are an estimate" in text
    assert "(the first row; more exist" in sql_cli.truncation_note({"rows": [[1]]}, 1)
    tables = [{"name": "model_calls", "rows": 1, "files": 1}, {"name": "turns", "rows": 2, "files": 2}]
    result = {"number": 1, "directory": "/d", "user": "u", "machine": "m", "redacted": False, "tables": tables}
    assert export.summary(result) == "export 1 to /d as u@m: 1 model_calls (1 file), 2 turns (2 files)"
    turn = {"status": "completed", "usage": {"inputTokens": 1, "outputTokens": 1}}
    assert demo.turn_summary(turn) == "turn completed: 1 input token and 1 output token"


INTERNAL = ("storage/", ".py", "openvaala/query", "exportUsage", "watermark", "snapshot", "model_calls_v", "`")


@pytest.mark.parametrize("command", [None, "usage", "export"])
def test_help_speaks_the_users_words(command: str | None) -> None:
    parser = user_cli.build_parser()
    text = (parser._subcommands()[command] if command else parser).format_help()
    for internal in INTERNAL:
        assert internal not in text, internal
    if command == "export":
        assert "Parquet" in text and "--redact" in text and "cron" in text
        assert "\n\nNo prompts, answers" in text  # its paragraphs kept


@settings(FUZZ, max_examples=300)
@given(argv=st.lists(st.one_of(st.sampled_from(["--standalone", "--log-level", "--log-file", "debug", "-"]), VALUES)))
def test_fuzzed_openvaala_lsp_arguments_parse_or_fail_in_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, err = parse(lsp._parser(), argv, capsys)
    assert code in (0, 2) and err.count("\n") == (1 if code else 0), (argv, err)
    assert "Traceback" not in err and (not code or err.startswith("openvaala-lsp: "))
