"""What telemetry costs a turn: CPU and wall time per turn (a read_file call, then an answer) with
telemetry off and with it on (spans and metrics exported over OTLP/HTTP to a receiver in this
process), and whether any OpenTelemetry module is loaded when it is off. Each mode runs in a fresh
process of its own (the runtime in-process over DuckDB, the scripted model on 127.0.0.1), the modes
alternating; medians over the rounds. `--before DIR`: also the same turns on another checkout (say
`git archive 48d8c22^ | tar -x -C DIR`, openvaala before telemetry), to see what "off" costs.

    python bench/telemetry_cost.py [--turns N] [--rounds R] [--before DIR]

Not a test: nothing here asserts; numbers depend on the machine."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path[:0] = [str(TESTS), str(TESTS / "runtime")]


async def turns(count: int, endpoint: str | None) -> dict[str, object]:
    """In the child: `count` turns after a warm-up one; CPU and wall seconds of those turns."""
    from fake_provider import ChatStream, FakeProviderServer
    from harness import Harness
    from turn_helpers import API_KEY, USAGE, definitions

    options: dict[str, Any] = {}
    if endpoint:  # off: the runtime's default, so a runtime from before telemetry (`--before`) starts alike
        from openvaala_lsp.telemetry.settings import TelemetrySettings
        from openvaala_lsp.telemetry.start import telemetry_for

        options["telemetry"] = telemetry_for(TelemetrySettings(enabled=True, endpoint=endpoint), {})
    with tempfile.TemporaryDirectory() as folder, FakeProviderServer.start_in_thread() as provider:
        home, workspace = Path(folder) / "home", Path(folder) / "project"
        home.mkdir()
        workspace.mkdir()
        (workspace / "a.txt").write_text("some text\n" * 20)
        os.environ["OPENVAALA_HOME"] = str(home)
        harness = await Harness.start(home, [workspace], env={"FAKE_API_KEY": API_KEY}, **options)
        await harness.call("setDefinitions", definitions(provider))
        conversation = await harness.call("createConversation")
        session = (await harness.call("listSessions", {"conversationId": conversation["id"]}))["items"][0]["id"]
        await harness.call("subscribeSession", {"conversationId": conversation["id"], "sessionId": session})

        async def turn() -> None:
            provider.enqueue(
                "openai-chat",
                ChatStream().tool_call("c1", "read_file", ['{"path": "a.txt"}']).finish(usage=USAGE).response(),
                ChatStream().text("It", " says", " so.").finish(usage=USAGE).response(),
            )
            harness.notifications.clear()
            content = [{"type": "text", "text": "read a.txt"}]
            await harness.call("submitInput", {"conversationId": conversation["id"], "content": content})
            await harness.wait_for(lambda n: any(e["type"] == "turnCompleted" for e in n["params"].get("events", ())))

        await turn()  # warm-up: imports, first connection, first commit
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(count):
            await turn()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        loaded = sorted(name for name in sys.modules if name.startswith("opentelemetry"))
        closing = time.perf_counter()
        await harness.stop()
        closing = time.perf_counter() - closing
    return {"cpu": cpu / count, "wall": wall / count, "otel_modules": len(loaded), "stop": closing}


def child(mode: str, count: int, endpoint: str | None, tree: Path | None = None) -> dict[str, object]:
    """A child process running the turns; on the checkout `tree` (this script copied there) if given."""
    script, environ = Path(__file__), dict(os.environ)
    if tree is not None:
        script = tree / "bench" / Path(__file__).name
        script.write_bytes(Path(__file__).read_bytes())
        environ["PYTHONPATH"] = str(tree)
    argv = [sys.executable, str(script), "--child", "off" if mode == "before" else mode, "--turns", str(count)]
    if endpoint:
        argv += ["--endpoint", endpoint]
    ran = subprocess.run(argv, capture_output=True, text=True, check=True, env=environ, cwd=tree)
    result: dict[str, object] = json.loads(ran.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", choices=["off", "on"])
    parser.add_argument("--endpoint")
    parser.add_argument("--before", type=Path, metavar="DIR", help="another checkout to run with telemetry off too")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(turns(args.turns, args.endpoint if args.child == "on" else None))))
        return
    from otlp_receiver import OtlpReceiver

    results: dict[str, list[dict[str, object]]] = {"off": [], "on": []}
    if args.before:
        results["before"] = []
    with OtlpReceiver() as receiver:
        for _ in range(args.rounds):  # alternating, so that the machine's drift reaches all alike
            if args.before:
                results["before"].append(child("before", args.turns, None, args.before.resolve()))
            results["off"].append(child("off", args.turns, None))
            results["on"].append(child("on", args.turns, receiver.url))
        spans = len(receiver.spans())
    print(f"{os.cpu_count()} cores; {args.rounds} rounds of {args.turns} turns per mode (a read_file call, an answer)")
    for mode, runs in results.items():
        cpu = statistics.median(float(r["cpu"]) for r in runs) * 1000  # type: ignore[arg-type]
        wall = statistics.median(float(r["wall"]) for r in runs) * 1000  # type: ignore[arg-type]
        stop = statistics.median(float(r["stop"]) for r in runs) * 1000  # type: ignore[arg-type]
        modules = max(int(r["otel_modules"]) for r in runs)  # type: ignore[call-overload]
        label = "before telemetry" if mode == "before" else f"telemetry {mode}"
        print(
            f"{label:16}: {cpu:6.2f} ms CPU per turn, {wall:6.2f} ms wall per turn, "
            f"stop {stop:5.0f} ms, opentelemetry modules loaded: {modules}"
        )
    print(f"spans received: {spans}")


if __name__ == "__main__":
    main()
