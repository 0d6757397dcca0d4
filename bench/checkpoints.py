"""Checkpoint benchmark: what snapshots and diffs of a workspace cost with the shadow repository
(`openvaala_lsp/checkpoints`), for trees of 1k, 10k and 50k files (source-like text files of about
1.5 KiB in nested directories, a `.gitignore`).

- first snapshot: the shadow repository made, every file read and stored;
- second snapshot: 10 files changed (and one added, one removed) since the first; the goal is at
  most 300 ms for 50k files;
- unchanged snapshot: nothing changed (what a read-only turn's checkpoint costs);
- diff: the `FileChange`s (unified diffs) between the two snapshots;
- tool gap: what the checkpoints add to one file-changing tool call of a turn
  (`runtime.checkpointing.TurnCheckpoints.after_call`: the snapshot, the call's FileChanges, the
  turn's diff so far, the refs), one file changed by the call; the turn's first call also pays the
  `before` snapshot (the "unchanged" column).

Each figure is the median of `--repeat` runs (fresh trees for the first snapshot).

    .venv/bin/python bench/checkpoints.py [--sizes 1000,10000,50000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
import time

from openvaala_lsp.checkpoints import diffs
from openvaala_lsp.checkpoints.store import CheckpointStore
from openvaala_lsp.runtime.checkpointing import TurnCheckpoints

FILES_PER_DIRECTORY = 50


def make_tree(root: str, files: int) -> list[str]:
    paths = []
    for index in range(files):
        directory = os.path.join(root, f"pkg{index // 2500}", f"mod{index // FILES_PER_DIRECTORY}")
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, f"file{index}.py")
        with open(path, "w") as handle:
            handle.write("".join(f"def function_{index}_{line}(x):\n    return x + {line}\n" for line in range(30)))
        paths.append(path)
    with open(os.path.join(root, ".gitignore"), "w") as handle:
        handle.write("__pycache__/\n*.log\n")
    return paths


def change(paths: list[str], round_: int) -> None:
    for path in paths[:: max(len(paths) // 10, 1)][:10]:
        with open(path, "a") as handle:
            handle.write(f"# changed in round {round_}\n")
    with open(os.path.join(os.path.dirname(paths[0]), f"new{round_}.py"), "w") as handle:
        handle.write("print('new')\n")
    gone = paths[-1 - round_]
    if os.path.exists(gone):
        os.unlink(gone)


def append(path: str, text: str) -> None:
    with open(path, "a") as handle:
        handle.write(text)


async def tool_gaps(store: CheckpointStore, workspace: str, paths: list[str], calls: int) -> list[float]:
    """What `after_call` takes for each of `calls` calls that change one file each."""
    checkpoints = TurnCheckpoints(store, "conv_bench", "turn_bench", [workspace], lambda event: None)
    await checkpoints.before_call()
    gaps = []
    for call in range(calls):
        await checkpoints.before_call()
        append(paths[call * 7 % len(paths)], f"# call {call}\n")  # what the call did
        started = time.perf_counter()
        await checkpoints.after_call()
        gaps.append(time.perf_counter() - started)
    return gaps


def measure(files: int, repeat: int) -> dict[str, float]:
    first, second, unchanged, diffing, gap = [], [], [], [], []
    for run in range(repeat):
        base = tempfile.mkdtemp(prefix="openvaala-bench-checkpoints-")
        try:
            workspace = os.path.join(base, "workspace")
            paths = make_tree(workspace, files)
            store = CheckpointStore(os.path.join(base, "shadows"))
            repo = store.repo(workspace)
            started = time.perf_counter()
            before = repo.snapshot()
            first.append(time.perf_counter() - started)
            for round_ in range(3 if run == 0 else 1):
                change(paths, round_)
                started = time.perf_counter()
                after = repo.snapshot()
                second.append(time.perf_counter() - started)
                started = time.perf_counter()
                changes = diffs.diff(repo, before, after)
                diffing.append(time.perf_counter() - started)
                assert len(changes) >= 11, changes
                started = time.perf_counter()
                repo.snapshot()
                unchanged.append(time.perf_counter() - started)
                before = after
            gap += asyncio.run(tool_gaps(store, workspace, paths, 5))
        finally:
            shutil.rmtree(base, ignore_errors=True)
    return {
        "first": statistics.median(first) * 1000,
        "second": statistics.median(second) * 1000,
        "unchanged": statistics.median(unchanged) * 1000,
        "diff": statistics.median(diffing) * 1000,
        "gap": statistics.median(gap) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    header = f"{'files':>7} {'first snapshot':>15} {'second (10 changed)':>20} {'unchanged':>10} {'diff':>8}"
    print(f"{header} {'tool gap':>9}  (ms, medians)")
    for size in (int(part) for part in args.sizes.split(",")):
        figures = measure(size, args.repeat)
        print(
            f"{size:>7} {figures['first']:>15.0f} {figures['second']:>20.0f} "
            f"{figures['unchanged']:>10.0f} {figures['diff']:>8.0f} {figures['gap']:>9.0f}"
        )


if __name__ == "__main__":
    main()
