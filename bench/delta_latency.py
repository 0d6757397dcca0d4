"""Every delta's latency, from the model's write to the editor, and CPU per 1000 deltas: the shared
peer drivers (`../shared/bench-peers/`) with two clocks added.

    .venv/bin/python bench/delta_latency.py openvaala --server "$PWD/.venv/bin/openvaala-lsp" \\
        --turns 8 --deltas 2000 --delta-delay-ms 10 --out ov.json
    .venv/bin/python bench/delta_latency.py codex --turns 8 --deltas 2000 --delta-delay-ms 10 --out codex.json

The rest of the arguments go to the driver (`drive_openvaala.py`, titles off as in
`drive_openvaala_bench.py`, or `drive_codex.py`). The drivers time a turn's first and last delta; here
the fake model also records when it hands each delta's bytes to its socket, the editor side when each
notification's text arrives, and a delta's latency runs from its write to the first notification that
holds its last character. The drivers' `cpu_s` counts clock ticks (10 ms); `thread_cpu_s` adds each
thread's run time in nanoseconds (`/proc/PID/task/*/schedstat`) of the same processes, from the
submit to the turn's end. `turn_summary.later_turns` gains `delta_latency_p50_s`, `delta_latency_p99_s`,
`delta_latency_max_s`, `thread_cpu_s` and `cpu_s_per_1000_deltas` (from `thread_cpu_s`; per turn, then
summarised over turns), and `turn_summary.later_turns_pooled` the percentiles over every delta of the
later turns.

Not a test: nothing here asserts, and the numbers move with the machine's load.
"""

from __future__ import annotations

import bisect
import contextvars
import itertools
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PEERS = Path(os.environ.get("OPENVAALA_PEERS_DIR", Path(__file__).resolve().parents[2] / "shared" / "bench-peers"))
sys.path.insert(0, str(PEERS))
sys.path.insert(0, str(Path(__file__).resolve().parent))

KEYS = ["delta_latency_p50_s", "delta_latency_p99_s", "delta_latency_max_s", "thread_cpu_s", "cpu_s_per_1000_deltas"]


def thread_cpu_s(pids: list[int]) -> float:
    """Seconds on a CPU of every live thread of `pids`."""
    total = 0
    for pid in pids:
        for schedstat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
            try:
                total += int(schedstat.read_text().split()[0])
            except (OSError, ValueError, IndexError):
                pass  # the thread ended
    return total / 1e9


def percentile(values: list[float], fraction: float) -> float | None:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else None


class TimedText(list[str]):
    """A turn record's `text`: the driver appends each delta's text; this notes when."""

    def __init__(self) -> None:
        super().__init__()
        self.times: list[float] = []

    def append(self, text: str) -> None:
        self.times.append(time.monotonic())
        super().append(text)


def latencies(record: dict[str, Any], requests: list[dict[str, Any]], chars: int) -> list[float]:
    """Seconds from each delta's write to the notification that brought its last character."""
    text = record["text"]
    if not isinstance(text, TimedText):
        return []
    writes = [t for request in requests if not request.get("aux") for t in request.get("t_delta_writes", [])]
    arrived = list(itertools.accumulate(len(piece) for piece in text))  # characters by each notification
    result = []
    for number, written in enumerate(writes):
        at = bisect.bisect_left(arrived, (number + 1) * chars)
        if at == len(arrived):
            break
        result.append(text.times[at] - written)
    return result


def patch_driver(driver: Any) -> None:
    import harness

    harness.TURN_KEYS.extend(KEYS)
    new_turn_record, turn_metrics, summarize_turns = driver.new_turn_record, driver.turn_metrics, driver.summarize_turns

    def timed_record(thread_id: str) -> dict[str, Any]:
        record: dict[str, Any] = new_turn_record(thread_id)
        record["text"] = TimedText()
        return record

    def metrics(tr: dict[str, Any], t_submit: Any, t_ack: Any, mem: Any, reqs: Any, deltas: Any, chars: int) -> Any:
        result = turn_metrics(tr, t_submit, t_ack, mem, reqs, deltas, chars)
        found = latencies(tr, reqs, chars)
        result["delta_latencies"] = found
        result["delta_latency_p50_s"] = percentile(found, 0.5)
        result["delta_latency_p99_s"] = percentile(found, 0.99)
        result["delta_latency_max_s"] = max(found, default=None)
        written = sum(len(request.get("t_delta_writes", [])) for request in reqs if not request.get("aux"))
        result["thread_cpu_s"] = cpu = mem.get("thread_cpu_s")
        result["cpu_s_per_1000_deltas"] = cpu / written * 1000 if written and cpu else None
        return result

    def summary(first: dict[str, Any], rest: list[dict[str, Any]]) -> Any:
        result = summarize_turns(first, rest)
        pooled = [value for turn in rest for value in turn["delta_latencies"]]
        result["later_turns_pooled"] = {
            "deltas": len(pooled),
            "delta_latency_p50_s": percentile(pooled, 0.5),
            "delta_latency_p90_s": percentile(pooled, 0.9),
            "delta_latency_p99_s": percentile(pooled, 0.99),
            "delta_latency_max_s": max(pooled, default=None),
        }
        for turn in [first, *rest]:
            del turn["delta_latencies"]  # the percentiles stay; 2000 numbers a turn would bloat the file
        later = result["later_turns"]
        print(
            "later turns: delta latency p50 {} ms, p99 {} ms (pooled over {} deltas: p50 {} ms, p99 {} ms); "
            "first write -> first delta {} ms; CPU {} s per turn ({} s in ticks), {} s per 1000 deltas".format(
                _ms(later["delta_latency_p50_s"]),
                _ms(later["delta_latency_p99_s"]),
                len(pooled),
                _ms({"median": result["later_turns_pooled"]["delta_latency_p50_s"]}),
                _ms({"median": result["later_turns_pooled"]["delta_latency_p99_s"]}),
                _ms(later["server_first_write_to_client_first_delta_s"]),
                (later["thread_cpu_s"] or {}).get("median"),
                (later["cpu_s"] or {}).get("median"),
                (later["cpu_s_per_1000_deltas"] or {}).get("median"),
            ),
            file=sys.stderr,
        )
        return result

    if hasattr(driver, "HomeSampler"):  # openvaala: every process of the run's home (front and host)

        class HomeSampler(driver.HomeSampler):  # type: ignore[misc,name-defined]
            def start(self) -> None:
                self.threads0 = thread_cpu_s(driver.home_pids(self.home))
                super().start()

            async def stop(self) -> Any:
                result = await super().stop()
                result["thread_cpu_s"] = thread_cpu_s(driver.home_pids(self.home)) - self.threads0
                return result

        driver.HomeSampler = HomeSampler
    else:  # Codex: its process tree

        class ProcSampler(driver.ProcSampler):  # type: ignore[misc,name-defined]
            def start(self) -> None:
                self.threads0 = thread_cpu_s(harness.process_tree(self.root))
                super().start()

            async def stop(self) -> Any:
                result = await super().stop()
                result["thread_cpu_s"] = thread_cpu_s(harness.process_tree(self.root)) - self.threads0
                return result

        driver.ProcSampler = ProcSampler
    driver.new_turn_record = timed_record
    driver.turn_metrics = metrics
    driver.summarize_turns = summary
    harness.FakeLlm.start = _start_timed_fake


def _ms(summary: dict[str, Any] | None) -> str:
    value = (summary or {}).get("median")
    return "-" if value is None else f"{value * 1000:.2f}"


def _start_timed_fake(self: Any) -> Any:
    """`harness.FakeLlm.start`, with this file as the model server (`fake_model` below)."""
    self.workdir.mkdir(parents=True, exist_ok=True)
    port_file = self.workdir / "fake_llm.port"
    port_file.unlink(missing_ok=True)
    log = open(self.workdir / "fake_llm.log", "ab")
    self.proc = subprocess.Popen(
        [sys.executable, __file__, "fake-model", "--port-file", str(port_file), *self.extra_args],
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    for _ in range(200):
        if port_file.exists():
            self.port = int(port_file.read_text())
            return self
        time.sleep(0.02)
    raise RuntimeError("fake_llm did not start")


def fake_model() -> None:
    """The shared fake model, which also records when it writes each delta (`t_delta_writes` of a
    request's record; the time is taken before the write, as the fake's own `t_first_write` is)."""
    import fake_llm

    request: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("request")

    def recorded(handler: Any) -> Any:
        async def handle(conn: Any, state: Any, req: Any, body: Any, rec: dict[str, Any]) -> None:
            rec["t_delta_writes"] = []
            request.set(rec)
            await handler(conn, state, req, body, rec)

        return handle

    emit = fake_llm.SseEmitter.emit

    async def timed_emit(self: Any, data: bytes, event: str | None = None, is_delta: bool = False) -> None:
        await emit(self, data, event, is_delta)
        if is_delta:  # one event a write (`events_per_write` 1): the write just made was this delta's
            request.get()["t_delta_writes"].append(self.t_last)

    fake_llm.handle_responses = recorded(fake_llm.handle_responses)
    fake_llm.handle_chat = recorded(fake_llm.handle_chat)
    fake_llm.SseEmitter.emit = timed_emit
    fake_llm.main()


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in ("openvaala", "codex", "fake-model"):
        sys.exit(__doc__)
    peer = sys.argv.pop(1)
    if peer == "fake-model":
        fake_model()
        return
    if peer == "codex":
        import drive_codex as driver
    else:
        import drive_openvaala as driver
        import drive_openvaala_bench  # noqa: F401 - conversation titles off
    patch_driver(driver)
    driver.main()


if __name__ == "__main__":
    main()
