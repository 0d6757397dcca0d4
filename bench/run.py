"""openvaala benchmarks over the wire: the real openvaala-lsp process driven over stdio, the scripted
model server on 127.0.0.1. Prints medians and ratios against Codex app-server's published figures.

    python bench/run.py [--standalone] [--quick]

Not a test: nothing here asserts; numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_provider import ChatStream, FakeProviderServer
from lsp_client import LspClient

from openvaala_lsp.rundir import run_dir

CODEX = {
    "initialize_ms": 60.0,
    "first_delta_ms": 73.0,
    "turn_ms": 194.0,
    "deltas_per_s": 24_000.0,
    "tool_gap_ms": 73.0,
    "cpu_s_per_turn": 0.22,
    "rss_growth_mib_per_turn": 3.0,
    "idle_rss_mib": 90.0,
}
PAGE = os.sysconf("SC_PAGE_SIZE")
TICKS = os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/statm") as statm:
        return int(statm.read().split()[1]) * PAGE / 2**20


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(") ", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def runtime_pids(lsp: LspClient, home: Path) -> list[int]:
    """The processes doing the work: the spawned process, plus the runtime host if one serves it."""
    pids = [lsp.process.pid]
    pid_file = Path(run_dir({"OPENVAALA_HOME": str(home)}).pid_file)
    try:
        pids.append(int(pid_file.read_text().split()[0]))
    except (OSError, ValueError):
        pass  # standalone: no host
    return pids


def report(name: str, value: float, unit: str, codex_key: str | None = None, lower_is_better: bool = True) -> None:
    shown = f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"
    line = f"{name:<46} {shown:>10} {unit}"
    if codex_key:
        codex = CODEX[codex_key]
        ratio = value / codex if lower_is_better else codex / value
        line += f"   Codex {codex:g} {unit}; ratio {ratio:.2f} ({'better' if ratio < 1 else 'worse'})"
    print(line, flush=True)


async def median_ms(runs: int, action: Callable[[], Awaitable[Any]]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        await action()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


async def spawn(home: Path, workspace: Path, args: list[str], env: dict[str, str] | None = None) -> LspClient:
    return await LspClient.spawn(home, cwd=workspace, args=args, env=env)


async def bench_initialize(root: Path, args: list[str], runs: int) -> None:
    home, workspace = root / "init-home", root / "ws"
    home.mkdir()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        lsp = await spawn(home, workspace, args)
        await lsp.initialize([workspace])
        times.append((time.perf_counter() - start) * 1000)
        await lsp.shutdown()
    report("spawn -> initialize response (median)", statistics.median(times), "ms", "initialize_ms")


async def bench_lists(root: Path, args: list[str], quick: bool) -> None:
    import seed_storage

    home, workspace = root / "list-home", root / "ws"
    home.mkdir()
    db = str(home / "openvaala.duckdb")
    items = 20_000 if quick else 100_000
    conversations = 10_000 if quick else 50_000
    big = await seed_storage.seed_items_async(db, conversation_items=items, other_conversations=1, items_per_other=100)
    await seed_storage.seed_conversations_async(db, n=conversations)
    lsp = await spawn(home, workspace, args)
    await lsp.initialize([workspace])
    try:
        await lsp.call("isIdle")
        pids = runtime_pids(lsp, home)
        report("idle RSS after initialize (MiB), front + host", sum(rss_mib(p) for p in pids), "MiB", "idle_rss_mib")
        tail = await median_ms(
            10, lambda: lsp.call("listItems", {"conversationId": big, "limit": 100, "cursor": items - 100})
        )
        report(f"listItems 100 at the end of {items // 1000}k items", tail, "ms")
        desc = await median_ms(
            10, lambda: lsp.call("listItems", {"conversationId": big, "limit": 100, "order": "desc"})
        )
        report(f"listItems 100 newest (desc) of {items // 1000}k", desc, "ms")
        listed = await median_ms(10, lambda: lsp.call("listConversations", {"limit": 50}))
        report(f"listConversations 50 of {conversations // 1000}k", listed, "ms")
        searched = await median_ms(10, lambda: lsp.call("listConversations", {"limit": 50, "query": "parser"}))
        report(f"listConversations query of {conversations // 1000}k", searched, "ms")
    finally:
        await lsp.shutdown()


def model_definitions(server: FakeProviderServer) -> dict[str, Any]:
    model = {
        "ref": {"provider": "fake", "name": "bench"},
        "api": "openai-chat",
        "baseUrl": server.base_url("openai-chat"),
        "contextWindow": 128_000,
    }
    return {"models": [model]}


class Turns:
    def __init__(self, lsp: LspClient, cid: str, sub: str) -> None:
        self.lsp, self.cid, self.sub = lsp, cid, sub
        self.seen = 0

    async def run(self, text: str) -> dict[str, float]:
        """Submits and follows one turn; times are measured where the editor sees events."""
        start = time.perf_counter()
        marks: dict[str, float] = {}
        chars = 0
        await self.lsp.call("submitInput", {"conversationId": self.cid, "content": [{"type": "text", "text": text}]})
        while True:
            notifications = self.lsp.of("openvaala/sessionEvent", self.sub)
            for n in notifications[self.seen :]:
                now = time.perf_counter()
                for event in n["events"]:
                    if event["type"] == "itemDelta":
                        marks.setdefault("first_delta", now)
                        marks["last_delta"] = now
                        chars += len(event["delta"])
                        if "tool_done" in marks:
                            marks.setdefault("after_tool", now)
                    elif event["type"] == "itemCompleted" and event["item"]["type"] == "toolResult":
                        marks["tool_done"] = now
                    elif event["type"] == "turnCompleted":
                        marks["end"] = now
            self.seen = len(notifications)
            if "end" in marks:
                break
            known = len(notifications)
            await self.lsp.wait_for(lambda m, known=known: len(self.lsp.of("openvaala/sessionEvent", self.sub)) > known)
        result = {key: (value - start) * 1000 for key, value in marks.items()}
        result["chars"] = chars
        return result


async def tool_gaps(
    turns: Turns, server: FakeProviderServer, runs: int, tool: str, arguments: dict[str, Any]
) -> list[float]:
    """Milliseconds from the end of a response calling `tool` to the next request, per run."""
    gaps = []
    for _ in range(runs):
        server.enqueue(
            "openai-chat",
            ChatStream().tool_call("c1", tool, [json.dumps(arguments)]).finish().response(),
            ChatStream().text("done").finish().response(),
        )
        await turns.run(f"use {tool}")
        asked, followed = server.requests_for("openai-chat")[-2:]
        assert asked.finished_at is not None
        gaps.append((followed.received_at - asked.finished_at) * 1000)
    return gaps


async def bench_turns(root: Path, args: list[str], quick: bool) -> None:
    home, workspace = root / "turn-home", root / "ws"
    home.mkdir()
    server = FakeProviderServer.start_in_thread()
    lsp = await spawn(home, workspace, args)
    await lsp.initialize([workspace], options={"eventBatchMs": 4})
    try:
        await lsp.call("setDefinitions", model_definitions(server))
        conversation = await lsp.call("createConversation")
        cid = conversation["id"]
        session = (await lsp.call("listSessions", {"conversationId": cid}))["items"][0]["id"]
        sub = (await lsp.call("subscribeSession", {"conversationId": cid, "sessionId": session}))["subscriptionId"]
        turns = Turns(lsp, cid, sub)

        server.set_default("openai-chat", ChatStream().text("hi").finish().response())
        first = [await turns.run("hello") for _ in range(10)]
        report(
            "submit -> first delta (median of 10)",
            statistics.median(t["first_delta"] for t in first),
            "ms",
            "first_delta_ms",
        )

        deltas = 2000
        server.set_default("openai-chat", ChatStream().deltas(deltas, "x").finish().response())
        await turns.run("warm up")
        pids = runtime_pids(lsp, home)
        runs = 3 if quick else 10
        cpu_before = sum(cpu_seconds(p) for p in pids)
        rss_before = sum(rss_mib(p) for p in pids)
        long_turns = [await turns.run("stream") for _ in range(runs)]
        cpu = (sum(cpu_seconds(p) for p in pids) - cpu_before) / runs
        rss_growth = (sum(rss_mib(p) for p in pids) - rss_before) / runs
        assert all(t["chars"] == deltas for t in long_turns), "a delta was lost"
        report(
            f"{deltas}-delta turn, submit -> turnCompleted",
            statistics.median(t["end"] for t in long_turns),
            "ms",
            "turn_ms",
        )
        rates = [deltas / ((t["last_delta"] - t["first_delta"]) / 1000) for t in long_turns]
        report(
            "deltas/s delivered to the stdio client",
            statistics.median(rates),
            "/s",
            "deltas_per_s",
            lower_is_better=False,
        )
        report("CPU per 2000-delta turn (runtime processes)", cpu, "s", "cpu_s_per_turn")
        report("RSS growth per turn", rss_growth, "MiB", "rss_growth_mib_per_turn")

        (workspace / "notes.txt").write_text("tool input\n")
        # from the last byte of the response asking for the tool to the next request reaching the model:
        # stream end, tool run, results saved, next request built and sent
        gaps = await tool_gaps(turns, server, runs, "read_file", {"path": "notes.txt"})
        report("tool round-trip gap (model sees the result)", statistics.median(gaps), "ms", "tool_gap_ms")

        # the same for a shell command, in the sandbox (the default) and with it off
        for mode in ("workspace-write", "off"):
            agent = {"name": "default", "sandbox": {"mode": mode}}
            await lsp.call("setDefinitions", model_definitions(server) | {"agents": [agent]})
            gaps = await tool_gaps(turns, server, runs, "shell", {"command": "echo bench-tool-ok"})
            report(f"shell tool gap, sandbox {mode}", statistics.median(gaps), "ms", "tool_gap_ms")
    finally:
        await lsp.shutdown()
        server.stop_thread()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--standalone", action="store_true", help="runtime in the spawned process")
    parser.add_argument("--quick", action="store_true", help="smaller data sets, fewer runs")
    options = parser.parse_args()
    args = ["--standalone"] if options.standalone else []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "ws").mkdir()
        print(
            f"openvaala benchmarks ({'standalone' if options.standalone else 'default mode'}), {os.cpu_count()} cores",
            flush=True,
        )
        await bench_initialize(root, args, 10)
        await bench_lists(root, args, options.quick)
        await bench_turns(root, args, options.quick)


if __name__ == "__main__":
    asyncio.run(main())
