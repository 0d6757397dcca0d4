"""The package's shape: its parts import only downward (the layers below, lowest first), and no
modules import each other in a circle. Read from the code's own imports (TYPE_CHECKING ones too), so
a change that breaks the shape fails here, with the offending import named.

`python tests/test_layers.py` prints the largest modules and classes as well.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "openvaala_lsp"

# Each part of the package by layer, lowest first. A part may import its own modules and any part of
# a lower layer, never one of its own layer or above.
LAYERS: list[set[str]] = [
    # domain types, the run directory fronts and the host share: stdlib + attrs
    {"__init__", "paths", "logs", "model", "rundir"},
    # what travels between the processes (frames, compact JSON, the hello, the LSP client); models and agents
    # a file's change as a capped, counted diff (file tools and checkpoints alike)
    {"definitions", "wire", "file_diff"},
    # the runtime's parts, each knowing nothing of the others (checkpoints: the workspace's shadow repositories)
    {"tools", "storage", "providers", "checkpoints"},
    {"hooks", "mcp"},  # hooks run like tools; MCP servers as tool sources, and their public shapes
    {"protocol"},  # wire types (params, results, events, errors), the converter, the method table
    {"executors"},  # where tools run besides here: ssh hosts (the local executor is the runtime's)
    {"telemetry"},  # spans and metrics of turns and their calls, when on; its [telemetry] settings
    {"config"},  # definitions from files, read with the converter's wire names
    {"runtime"},  # the runtime core: conversations, sessions, turns; no JSON-RPC
    {"server"},  # pygls translation
    {"host", "setup"},  # the runtime host process; setting up models
    {"front"},  # the stdlib-only front, which starts a host when none runs
    {"acp_front"},  # ACP editors: an LSP client of the host (reached as the front does) or of a runtime in-process
    {"cli"},  # the command lines: openvaala-lsp (the front or the runtime in-process), openvaala
    {"__main__"},
]
LAYER_OF = {part: index for index, parts in enumerate(LAYERS) for part in parts}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def part_of(module: str) -> str:
    pieces = module.split(".")
    return pieces[1] if len(pieces) > 1 else "__init__"


def imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, module) of every import of the package in the file, absolute ones resolved."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] == PACKAGE.name:
                for alias in node.names:  # `from openvaala_lsp.runtime import turns` takes a module
                    candidate = f"{node.module}.{alias.name}"
                    is_module = (PACKAGE.parent / candidate.replace(".", "/")).with_suffix(".py").exists()
                    yield node.lineno, candidate if is_module else node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE.name:
                    yield node.lineno, alias.name


def graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        edges[module_name(path)] = {target for _, target in imports(path)}
    return edges


def test_every_part_has_a_layer() -> None:
    parts = {
        path.stem if path.is_file() else path.name
        for path in PACKAGE.iterdir()
        if path.suffix == ".py" or (path / "__init__.py").exists()
    }
    assert parts == set(LAYER_OF), "give each new part of the package a layer in LAYERS"


def test_imports_run_only_downward() -> None:
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = part_of(module_name(path))
        for line, target in imports(path):
            destination = part_of(target)
            if destination != source and LAYER_OF[destination] >= LAYER_OF[source]:
                upward.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {target} ({source} -> {destination})")
    assert upward == []


def test_no_modules_import_each_other_in_a_circle() -> None:
    edges = graph()
    # Tarjan's strongly connected components, iteratively
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next((c for c in children if c in edges), None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    assert circles == []


def sizes(count: int = 10) -> list[tuple[int, str]]:
    """The largest modules and classes by lines."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        name = str(path.relative_to(PACKAGE.parent))
        found.append((len(text.splitlines()), name))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                methods = sum(isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)) for b in node.body)
                found.append((node.end_lineno - node.lineno + 1, f"{name}:{node.name} ({methods} methods)"))
    return sorted(found, reverse=True)[:count]


if __name__ == "__main__":
    for lines, name in sizes(int(sys.argv[1]) if len(sys.argv) > 1 else 10):
        sys.stdout.write(f"{lines:5d}  {name}\n")
