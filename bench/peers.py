"""openvaala beside Codex's app-server, in one run, on the same machine and the same fake model.

    bash ../shared/bench-peers/setup_peers.sh      # once: Codex from npm into /tmp/peers
    .venv/bin/python bench/peers.py [--rounds 3] [--turns 8] [--out results.json]

Each round runs the shared drivers back to back (`drive_codex.py`, then `drive_openvaala.py` with
titles off, see `drive_openvaala_bench.py`), then two probes of this file for both peers: the
first-ever start to a first real answer (a fresh home: `initialize`, then the conversation list:
`thread/list` for Codex, `openvaala/listConversations` for openvaala) and the idle memory of ten
editors on one project (ten app-servers; ten `openvaala-lsp` fronts sharing one runtime host).
Prints every figure as the median over rounds of each run's median, with openvaala's ratio to Codex.
Not a test: nothing here asserts, and the numbers move with the machine's load.

A start is timed as a user's would run: Python's bytecode already written (the first run of an
install writes it). Where `PYTHONDONTWRITEBYTECODE` is set it is not, so write it first:

    .venv/bin/python -m compileall -q openvaala_lsp
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PEERS = Path(os.environ.get("OPENVAALA_PEERS_DIR", ROOT.parent / "shared" / "bench-peers"))
sys.path.insert(0, str(PEERS))

from harness import StdioRpc, isolated_env, prepare_workspace, process_tree  # noqa: E402

CODEX = os.environ.get(
    "CODEX_BIN", "/tmp/peers/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
)
SERVER = str(ROOT / ".venv" / "bin" / "openvaala-lsp")
EDITORS = 10

# (label, unit, where in a driver's result) — the figures of the performance issue, in its order
Getter = Callable[[dict[str, Any]], float | None]


def later(key: str) -> Getter:
    return lambda r: (r["turn_summary"]["later_turns"].get(key) or {}).get("median")


ROWS: list[tuple[str, str, Getter, Getter]] = [
    (
        "spawn -> initialize, host warm",
        "ms",
        lambda r: r["cold_summary"]["init_s"]["median"],
        lambda r: r["cold_summary"]["init_s"]["median"],
    ),
    (
        "spawn -> initialize, first ever",
        "ms",
        lambda r: r["cold_summary"]["first_ever_init_s"],
        lambda r: r["cold_summary"]["first_ever_init_s"],
    ),
    ("first ever: initialize + list conversations", "ms", lambda r: r["first_answer_s"], lambda r: r["first_answer_s"]),
    (
        "idle RSS, one editor",
        "MiB",
        lambda r: r["cold_summary"]["idle_tree_rss_kb"]["median"] / 1024,
        lambda r: r["cold_summary"]["idle_rss_kb"]["median"] / 1024,
    ),
    ("idle PSS, one editor", "MiB", lambda r: r["editor_pss_kb"] / 1024, lambda r: r["editor_pss_kb"] / 1024),
    (
        f"idle PSS per editor, {EDITORS} editors",
        "MiB",
        lambda r: r["editors_pss_kb"] / EDITORS / 1024,
        lambda r: r["editors_pss_kb"] / EDITORS / 1024,
    ),
    (
        f"idle RSS per editor, {EDITORS} editors",
        "MiB",
        lambda r: r["editors_rss_kb"] / EDITORS / 1024,
        lambda r: r["editors_rss_kb"] / EDITORS / 1024,
    ),
    ("submit -> model request received", "ms", later("submit_to_model_request_s"), later("submit_to_model_request_s")),
    ("submit -> first delta at the client", "ms", later("first_delta_s"), later("first_delta_s")),
    (
        "model's first byte -> client's first delta",
        "ms",
        later("server_first_write_to_client_first_delta_s"),
        later("server_first_write_to_client_first_delta_s"),
    ),
    ("2000-delta turn, submit -> turnCompleted", "ms", later("completed_s"), later("completed_s")),
    (
        "model's last byte -> turnCompleted",
        "ms",
        later("server_done_to_turn_completed_s"),
        later("server_done_to_turn_completed_s"),
    ),
    (
        "tool gap (model stream end -> next request)",
        "ms",
        lambda r: r["tool_summary"]["tool_gap_s"]["median"],
        lambda r: r["tool_summary"]["tool_gap_s"]["median"],
    ),
    ("CPU per turn", "s", later("cpu_s"), later("cpu_s")),
]
SECONDS_AS_MS = {"ms"}


def run_driver(argv: list[str], out: Path) -> dict[str, Any]:
    subprocess.run([*argv, "--out", str(out)], check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    result: dict[str, Any] = json.loads(out.read_text())
    return result


async def first_answer(peer: str, root: Path, server: str = SERVER) -> float:
    """Seconds from spawning into a fresh home to the answer of the first conversation list."""
    home = root / f"first-{peer}-{time.monotonic_ns()}"
    workspace = root / "workspace"
    if peer == "codex":
        codex_home = home / "codex"
        codex_home.mkdir(parents=True)
        env = isolated_env(home, None, {"CODEX_HOME": str(codex_home)})
        rpc = StdioRpc([CODEX, "app-server"], env=env, cwd=str(workspace), framing="ndjson", send_jsonrpc_field=False)
        await rpc.start()
        await rpc.request("initialize", {"clientInfo": {"name": "bench", "version": "0"}, "capabilities": {}})
        await rpc.notify("initialized")
        _, _, answered = await rpc.request("thread/list", {})
    else:
        env = isolated_env(home, None, {"OPENVAALA_HOME": str(home / "ov"), "OPENVAALA_HOST_IDLE_SECONDS": "1"})
        rpc = StdioRpc([server], env=env, cwd=str(workspace), framing="lsp")
        await rpc.start()
        folder = {"uri": workspace.as_uri(), "name": workspace.name}
        await rpc.request("initialize", {"processId": os.getpid(), "capabilities": {}, "workspaceFolders": [folder]})
        await rpc.notify("initialized", {})
        _, _, answered = await rpc.request("openvaala/listConversations", {})
    elapsed: float = answered - rpc.t_spawn
    await rpc.close()
    return elapsed


async def editors_memory(peer: str, root: Path, count: int, server: str = SERVER) -> tuple[int, int]:
    """(RSS, PSS) in KiB of `count` idle editors open on one project, every process counted once. PSS
    shares a page between the processes that map it: the fair sum where a front and a host share
    the interpreter's pages (and nothing extra for a single process like Codex's)."""
    home = root / f"editors-{peer}-{count}"
    workspace = root / "workspace"
    rpcs = []
    for _ in range(count):
        if peer == "codex":
            (home / "codex").mkdir(parents=True, exist_ok=True)
            env = isolated_env(home, None, {"CODEX_HOME": str(home / "codex")})
            rpc = StdioRpc(
                [CODEX, "app-server"], env=env, cwd=str(workspace), framing="ndjson", send_jsonrpc_field=False
            )
            await rpc.start()
            await rpc.request("initialize", {"clientInfo": {"name": "bench", "version": "0"}, "capabilities": {}})
        else:
            env = isolated_env(home, None, {"OPENVAALA_HOME": str(home / "ov"), "OPENVAALA_HOST_IDLE_SECONDS": "1"})
            rpc = StdioRpc([server], env=env, cwd=str(workspace), framing="lsp")
            await rpc.start()
            folder = {"uri": workspace.as_uri(), "name": workspace.name}
            await rpc.request(
                "initialize", {"processId": os.getpid(), "capabilities": {}, "workspaceFolders": [folder]}
            )
        rpcs.append(rpc)
    await asyncio.sleep(2.0)
    if peer == "codex":
        pids = [pid for rpc in rpcs for pid in process_tree(rpc.pid)]
    else:
        from drive_openvaala import home_pids

        pids = home_pids(str(home / "ov"))
    rss = sum(_rollup(pid, "Rss") for pid in pids)
    pss = sum(_rollup(pid, "Pss") for pid in pids)
    for rpc in rpcs:
        await rpc.close()
    shutil.rmtree(home, ignore_errors=True)
    return rss, pss


def _rollup(pid: int, field: str) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def ratio_text(ours: float | None, theirs: float | None) -> str:
    if ours is None or theirs is None or theirs == 0:
        return "-"
    return f"{ours / theirs:.2f}"


def show(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return f"{value * 1000:.1f}" if unit in SECONDS_AS_MS else f"{value:.3g}" if unit == "s" else f"{value:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--cold-runs", type=int, default=7)
    parser.add_argument("--out", type=Path, help="all results as JSON")
    parser.add_argument("--server", default=SERVER, help="the openvaala-lsp to measure (default: this checkout's)")
    options = parser.parse_args()
    server = options.server
    if not Path(CODEX).exists():
        sys.exit(f"no Codex at {CODEX}: run `bash {PEERS}/setup_peers.sh` first (or set CODEX_BIN)")
    common = ["--turns", str(options.turns), "--cold-runs", str(options.cold_runs), "--deltas", "2000"]
    rounds: list[dict[str, dict[str, Any]]] = []
    with tempfile.TemporaryDirectory(prefix="openvaala-peers-") as tmp:
        root = Path(tmp)
        prepare_workspace(root / "workspace", True)
        for number in range(options.rounds):
            print(f"round {number + 1} of {options.rounds}: Codex...", end=" ", flush=True)
            codex = run_driver(
                [sys.executable, str(PEERS / "drive_codex.py"), "--workdir", str(root / "codex-run"), *common],
                root / "codex.json",
            )
            print("openvaala...", end=" ", flush=True)
            ours = run_driver(
                [
                    sys.executable,
                    str(Path(__file__).parent / "drive_openvaala_bench.py"),
                    "--server",
                    server,
                    "--workdir",
                    str(root / "ov-run"),
                    *common,
                ],
                root / "ov.json",
            )
            print("probes...", flush=True)
            for peer, result in (("codex", codex), ("openvaala", ours)):
                result["first_answer_s"] = statistics.median(
                    asyncio.run(first_answer(peer, root, server)) for _ in range(3)
                )
                result["editor_rss_kb"], result["editor_pss_kb"] = asyncio.run(editors_memory(peer, root, 1, server))
                result["editors_rss_kb"], result["editors_pss_kb"] = asyncio.run(
                    editors_memory(peer, root, EDITORS, server)
                )
            rounds.append({"codex": codex, "openvaala": ours})
    version = rounds[0]["codex"].get("version", "codex")
    print(f"\n{'':46} {version:>14} {'openvaala':>12} {'ratio':>7}   ({options.rounds} rounds, {os.cpu_count()} cores)")
    summary = {}
    for label, unit, codex_value, ours_value in ROWS:
        theirs = statistics.median(v for r in rounds if (v := codex_value(r["codex"])) is not None)
        ours = statistics.median(v for r in rounds if (v := ours_value(r["openvaala"])) is not None)
        summary[label] = {"codex": theirs, "openvaala": ours, "ratio": ours / theirs if theirs else None}
        print(
            f"{label + f' ({unit})':46} {show(theirs, unit):>14} {show(ours, unit):>12} {ratio_text(ours, theirs):>7}"
        )
    if options.out:
        options.out.write_text(json.dumps({"summary": summary, "rounds": rounds}, indent=1, default=str))
        print(f"wrote {options.out}")


if __name__ == "__main__":
    main()
