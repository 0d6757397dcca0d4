"""`openvaala`: the user's command line.

- `openvaala` alone: in a terminal with no model configured, walks through setting up a model
  provider; otherwise shows what is configured and the commands.
- `openvaala setup [--provider ... --yes]`: adds a model to the user config, after a real check.
- `openvaala doctor [--offline]`: what is configured, whether keys are set and models answer.
- `openvaala demo [PROMPT]`: drives `openvaala-lsp` over stdio exactly as an editor does: a real
  conversation with the embedded local model, streamed, then its token usage read back with SQL
  while the editor session is still open.
- `openvaala sql "SELECT ..." [--limit N] [--timeout SECONDS] [--format table|csv|json]`, `openvaala sql
  --schema`: queries the history database (conversations, sessions, turns, items, model_calls and the
  analytic views), through the runtime host, started when none runs.
- `openvaala usage [day|model|project|conversation|agent]`: token and cost reports, with bars or a plot.
- `openvaala export --parquet DIR`: the analytic views as Parquet, only what is new since the last time.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from openvaala_lsp import __version__, paths
from openvaala_lsp.cli import export as export_cli, sql as sql_cli, usage as usage_cli
from openvaala_lsp.config import trust
from openvaala_lsp.definitions import embedded_model
from openvaala_lsp.protocol import api
from openvaala_lsp.protocol.converter import unstructure
from openvaala_lsp.setup import commands as setup_commands
from openvaala_lsp.wire.client import LspClient

DEMO_AGENT = {
    "name": "assistant",
    "description": "answers briefly, without tools",
    "instructions": "You are a helpful assistant. Answer in a few sentences.",
    "tools": [],
}
DEMO_PROMPT = "In two sentences: why keep an agent's history in SQL?"


USAGE_SQL = (
    "SELECT day, provider, model, calls, input_tokens, output_tokens, estimated_calls"
    " FROM usage_by_model_day ORDER BY day DESC, model LIMIT 10"
)


async def demo(directory: Path, prompt: str) -> int:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "openvaala_lsp", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert process.stdout is not None and process.stdin is not None
    peer = LspClient(process.stdout, process.stdin)
    folder = {"uri": directory.as_uri(), "name": directory.name}  # directory is absolute
    init = await peer.initialize({"workspaceFolders": [folder]})
    info = init["capabilities"]["experimental"]["openvaala"]
    version, protocol, count = info["serverVersion"], info["protocolVersion"], len(info["methods"])
    print(f"openvaala-lsp {version} speaks protocol {protocol}: {count} methods")
    model = unstructure(embedded_model())
    await peer.request("openvaala/setDefinitions", {"models": [model], "agents": [DEMO_AGENT]})
    print(f"model: {model['displayName']} (starts on first use)")
    conversation = await peer.request("openvaala/createConversation", {"agentName": "assistant"})
    cid = conversation["id"]
    await peer.request("openvaala/setConversationTitle", {"conversationId": cid, "title": "openvaala demo"})
    session = (await peer.request("openvaala/listSessions", {"conversationId": cid}))["items"][0]
    await peer.request("openvaala/subscribeSession", {"conversationId": cid, "sessionId": session["id"]})
    await peer.request("openvaala/submitInput", {"conversationId": cid, "content": [{"type": "text", "text": prompt}]})
    print(f"\nyou: {prompt}\nassistant: ", end="", flush=True)
    turn = await _stream_turn(peer)
    print()
    usage = turn["usage"]
    print(f"\nturn {turn['status']}: {usage['inputTokens']} input + {usage['outputTokens']} output tokens")
    if turn.get("error"):
        print(f"error: {turn['error']['message']}")
    # while this editor session is open, as `openvaala sql` does: through the runtime host holding the file
    print(f"\nhistory database: {paths.database_path()}; token usage by model and day (openvaala sql):")
    try:
        print(sql_cli.render_table(await sql_cli.fetch(USAGE_SQL)))
        queried = True
    except sql_cli.QueryFailed as exc:
        print(exc, file=sys.stderr)
        queried = False
    await peer.shutdown()
    code = await process.wait()
    await peer.close()
    return code if turn["status"] == "completed" and queried else 1


async def _stream_turn(peer: LspClient) -> dict[str, Any]:
    streaming: set[str] = set()
    async for message in peer.incoming():
        if message["method"] != "openvaala/sessionEvent":
            continue
        for event in message["params"]["events"]:
            if event["type"] == "itemStarted" and event["item"]["type"] == "assistantMessage":
                streaming.add(event["item"]["id"])
            elif event["type"] == "itemDelta" and event["itemId"] in streaming:
                print(event["delta"], end="", flush=True)
            elif event["type"] == "turnCompleted":
                turn: dict[str, Any] = event["turn"]
                return turn
    raise ConnectionError("openvaala-lsp went away")  # `incoming` ends only by raising


COMMANDS = {
    "setup": "set up a model provider (interactive, or flags with --yes)",
    "doctor": "check what is configured and whether it works",
    "demo": "drive openvaala-lsp like an editor does",
    "sql": "query the history database",
    "usage": "token usage and cost reports: by day, model, project, conversation or agent",
    "export": "write the usage views as Parquet (incremental), to pool with other people's",
    "trust": "let a project's .openvaala/config.toml run hooks and MCP servers and use API keys",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="openvaala", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
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
    demo_parser.add_argument("--directory", type=Path, default=Path.cwd(), help="the workspace folder (default: cwd)")
    demo_parser.add_argument("prompt", nargs="?", default=DEMO_PROMPT)
    sql_parser = commands.add_parser("sql", help=COMMANDS["sql"])
    sql_parser.add_argument("query", nargs="?", help="one read-only statement: SELECT, WITH, FROM, DESCRIBE, SHOW, ...")
    sql_parser.add_argument("--limit", type=_query_limit, help=f"rows to show (default {api.DEFAULT_QUERY_LIMIT})")
    sql_parser.add_argument("--format", choices=sql_cli.FORMATS, default="table", help="table (default), csv or json")
    sql_parser.add_argument("--schema", action="store_true", help="list the tables and views, and what columns mean")
    sql_parser.add_argument("--timeout", type=sql_cli.query_timeout, metavar="SECONDS", help=sql_cli.TIMEOUT_HELP)
    usage_parser = commands.add_parser("usage", help=COMMANDS["usage"], description=usage_cli.__doc__)
    usage_cli.add_arguments(usage_parser)
    export_parser = commands.add_parser("export", help=COMMANDS["export"], description=export_cli.__doc__)
    export_cli.add_arguments(export_parser)
    trust_parser = commands.add_parser("trust", help=COMMANDS["trust"])
    trust_parser.add_argument("directory", nargs="?", type=Path, default=Path.cwd(), help="default: cwd")
    args = parser.parse_args(argv)
    if args.command is None:
        return setup_commands.run_bare(list(COMMANDS.items()))
    if args.command == "setup":
        return setup_commands.run_setup(args)
    if args.command == "doctor":
        return setup_commands.run_doctor(args)
    if args.command == "demo":
        return asyncio.run(demo(args.directory.resolve(), args.prompt))
    if args.command == "trust":
        return trust_folder(args.directory)
    if args.command == "usage":
        return usage_cli.main(args)
    if args.command == "export":
        return export_cli.main(args)
    if (args.query is None) == (not args.schema):
        sql_parser.error("give one statement, or --schema")
    return sql_cli.main(args.query, args.limit, args.format, args.schema, args.timeout)


def _query_limit(text: str) -> int:
    value = int(text)
    if not 1 <= value <= api.MAX_QUERY_LIMIT:
        raise argparse.ArgumentTypeError(f"must be between 1 and {api.MAX_QUERY_LIMIT}")
    return value


def trust_folder(directory: Path) -> int:
    if not directory.is_dir():
        print(f"not a directory: {directory}", file=sys.stderr)
        return 1
    added = trust.trust(directory, paths.config_dir())
    state = "now trusted" if added else "already trusted"
    print(f"{directory.resolve()} is {state}: its .openvaala/config.toml may define hooks, MCP servers,")
    print("executors and models that use your API keys. Running editors pick this up within seconds.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
