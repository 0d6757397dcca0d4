"""`openvaala`: the user's command line.

- `openvaala` alone: in a terminal with no model configured, walks through setting up a model
  provider; otherwise shows what is configured and the commands.
- `openvaala setup [--provider ... --yes]`: adds a model to the user config, after a real check.
- `openvaala doctor [--offline]`: what is configured, whether keys are set and models answer.
- `openvaala demo [--directory DIR] [PROMPT]`: drives `openvaala-lsp` over stdio exactly as an editor does: a real
  conversation with the embedded local model, streamed, then its token usage read back with SQL
  while the editor session is still open.
- `openvaala sql "SELECT ..." [--limit N] [--timeout SECONDS] [--format table|csv|json]`, `openvaala sql
  --schema`: queries the history database (conversations, sessions, turns, items, model_calls and the
  analytic views), through the runtime host, started when none runs.
- `openvaala usage [day|model|project|conversation|agent]`: token and cost reports, with bars or a plot.
- `openvaala export --parquet DIR`: the analytic views as Parquet, only what is new since the last time.
- `openvaala acp [--standalone]`: `openvaala-lsp --acp`, for editors configured with one command name.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from openvaala_lsp import __version__, paths
from openvaala_lsp.cli import demo as demo_cli, export as export_cli, sql as sql_cli, usage as usage_cli
from openvaala_lsp.cli.args import BadArgument, CliParser, existing_directory, fail, whole_number
from openvaala_lsp.config import trust
from openvaala_lsp.protocol import api
from openvaala_lsp.setup import commands as setup_commands

RAW = argparse.RawDescriptionHelpFormatter  # descriptions keep their paragraphs
DEBUG_ENV = "OPENVAALA_DEBUG"
DESCRIPTION = """\
openvaala's command line: set up a model and check it, try openvaala, and read what your agents did
and cost. Alone, it walks you through setting up a model in a terminal (or shows what is set up)."""
COMMANDS = {
    "setup": "set up a model provider (interactive, or flags with --yes)",
    "doctor": "check what is configured and whether it works",
    "demo": "drive openvaala-lsp like an editor does",
    "sql": "query the history database",
    "usage": "token usage and cost reports: by day, model, project, conversation or agent",
    "export": "write what your agents cost and did as Parquet files, to pool with your team's",
    "trust": "let a project's .openvaala/config.toml run hooks and MCP servers and use API keys",
    "acp": "serve an ACP editor (Zed, JetBrains, CodeCompanion) on stdin/stdout: openvaala-lsp --acp",
}


def build_parser() -> CliParser:
    """The whole command line; its mistakes end in one line and exit code 2 (`cli/args.py`)."""
    parser = CliParser(prog="openvaala", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"openvaala {__version__}")
    commands = parser.add_subparsers(dest="command")
    setup_parser = commands.add_parser(
        "setup",
        help=COMMANDS["setup"],
        epilog=setup_commands.SETUP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    setup_commands.add_setup_arguments(setup_parser)
    doctor_parser = commands.add_parser("doctor", help=COMMANDS["doctor"])
    setup_commands.add_doctor_arguments(doctor_parser)
    demo_parser = commands.add_parser("demo", help=COMMANDS["demo"])
    demo_parser.add_argument("--directory", type=existing_directory, help="the workspace folder (default: cwd)")
    demo_parser.add_argument("prompt", nargs="?", default=demo_cli.PROMPT, help="what to ask the model")
    sql_parser = commands.add_parser("sql", help=COMMANDS["sql"])
    sql_parser.add_argument("query", nargs="?", help="one read-only statement: SELECT, WITH, FROM, DESCRIBE, SHOW, ...")
    sql_parser.add_argument(
        "--limit", type=whole_number(1, api.MAX_QUERY_LIMIT), help=f"rows to show (default {api.DEFAULT_QUERY_LIMIT})"
    )
    sql_parser.add_argument("--format", choices=sql_cli.FORMATS, default="table", help="table (default), csv or json")
    sql_parser.add_argument("--schema", action="store_true", help="list the tables and views, and what columns mean")
    sql_parser.add_argument("--timeout", type=sql_cli.query_timeout, metavar="SECONDS", help=sql_cli.TIMEOUT_HELP)
    usage_parser = commands.add_parser(
        "usage", help=COMMANDS["usage"], description=usage_cli.DESCRIPTION, formatter_class=RAW
    )
    usage_cli.add_arguments(usage_parser)
    export_parser = commands.add_parser(
        "export", help=COMMANDS["export"], description=export_cli.DESCRIPTION, formatter_class=RAW
    )
    export_cli.add_arguments(export_parser)
    trust_parser = commands.add_parser("trust", help=COMMANDS["trust"])
    trust_parser.add_argument("directory", nargs="?", type=existing_directory, help="the project folder (default: cwd)")
    acp_parser = commands.add_parser("acp", help=COMMANDS["acp"])
    acp_parser.add_argument("--standalone", action="store_true", help="the runtime in this process, not the host")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    prog = f"{parser.prog} {args.command}" if args.command else parser.prog
    try:
        return _run(parser, args)
    except KeyboardInterrupt:
        print(f"\n{prog}: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:  # a home, config or output folder that cannot be made or written
        where = f"cannot use {exc.filename}: " if exc.filename else ""
        print(f"{prog}: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # a bug: one line for the user, the traceback for whoever debugs it
        if os.environ.get(DEBUG_ENV):
            raise
        print(f"{prog}: unexpected error: {type(exc).__name__}: {exc} ({DEBUG_ENV}=1 shows where)", file=sys.stderr)
        return 1


def _run(parser: CliParser, args: argparse.Namespace) -> int:
    if args.command is None:
        return setup_commands.run_bare(list(COMMANDS.items()))
    if args.command == "setup":
        return setup_commands.run_setup(args)
    if args.command == "doctor":
        return setup_commands.run_doctor(args)
    if args.command == "demo":
        return demo_cli.run(args.directory or Path.cwd(), args.prompt)
    if args.command == "trust":
        return trust_folder(args.directory or Path.cwd())
    if args.command == "usage":
        try:
            return usage_cli.main(args)
        except BadArgument as exc:
            fail(f"{parser.prog} usage", str(exc))
    if args.command == "export":
        return export_cli.main(args)
    if args.command == "acp":
        from openvaala_lsp.cli import lsp

        return lsp.main(["--acp", *(["--standalone"] if args.standalone else [])])
    if (args.query is None) == (not args.schema):
        fail(f"{parser.prog} sql", "give one statement, or --schema")
    return sql_cli.main(args.query, args.limit, args.format, args.schema, args.timeout)


def trust_folder(directory: Path) -> int:
    added = trust.trust(directory, paths.config_dir())
    state = "now trusted" if added else "already trusted"
    print(f"{directory.resolve()} is {state}: its .openvaala/config.toml may define hooks, MCP servers,")
    print("executors and models that use your API keys. Running editors pick this up within seconds.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
