"""The CPU floor of reading a model's stream in Python: what one process spends per 1000 paced SSE
chunks read with httpx (the provider's client, on its own transport) and with a bare asyncio stream,
before any parsing, runtime work or writing to an editor. It says how much of `delta_latency.py`'s
CPU per 1000 deltas no change above httpx can remove.

    .venv/bin/python bench/stream_floor.py --chunks 1000 --delay-ms 10 --rounds 5

A loopback server (a child process, so its CPU is not counted) writes one Responses-style
`output_text.delta` event per chunk, `--delay-ms` apart; each client reads one warm-up stream, then
one timed stream per round, by its process CPU time. Not a test: the numbers move with the load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time

import httpx

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


async def serve(port: int, chunks: int, delay: float) -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
        writer.write(HEAD)
        for number in range(chunks):
            delta = {"type": "response.output_text.delta", "item_id": "msg_1", "delta": f"token{number} "}
            event = b"event: response.output_text.delta\ndata: " + json.dumps(delta).encode() + b"\n\n"
            writer.write(b"%x\r\n%s\r\n" % (len(event), event))
            await writer.drain()
            await asyncio.sleep(delay)
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", port)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


async def with_httpx(url: str) -> tuple[int, float]:
    async with httpx.AsyncClient() as client:
        async with client.stream("GET", url) as response:
            async for _ in response.aiter_bytes():
                pass
        started, reads = time.process_time(), 0
        async with client.stream("GET", url) as response:
            async for _ in response.aiter_bytes():
                reads += 1
        return reads, time.process_time() - started


async def with_asyncio(url: str) -> tuple[int, float]:
    port = int(url.rsplit(":", 1)[1].rstrip("/"))

    async def read() -> tuple[int, float]:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        started, reads = time.process_time(), 0
        while await reader.read(65536):
            reads += 1
        writer.close()
        return reads, time.process_time() - started

    await read()  # warm-up, as httpx's
    return await read()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=1000)
    parser.add_argument("--delay-ms", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)  # the child's port (0: any)
    options = parser.parse_args()
    if options.serve is not None:
        asyncio.run(serve(options.serve, options.chunks, options.delay_ms / 1000))
        return
    pace = ["--chunks", str(options.chunks), "--delay-ms", str(options.delay_ms)]
    child = [sys.executable, __file__, "--serve", "0", *pace]
    with subprocess.Popen(child, stdout=subprocess.PIPE, text=True) as server:
        assert server.stdout is not None
        url = f"http://127.0.0.1:{server.stdout.readline().strip()}/"
        figures: dict[str, list[float]] = {"httpx": [], "asyncio": []}
        for _ in range(options.rounds):  # alternating, so load drifts hit both alike
            for name, client in (("httpx", with_httpx), ("asyncio", with_asyncio)):
                reads, cpu = asyncio.run(client(url))
                figures[name].append(cpu / reads * 1000 * 1000)
        server.kill()
    print(f"CPU per 1000 reads of a stream paced {options.delay_ms} ms (ms; median of {options.rounds}, all):")
    for name, values in figures.items():
        print(f"  {name:8} {statistics.median(values):7.1f}   {', '.join(f'{v:.1f}' for v in values)}")


if __name__ == "__main__":
    main()
