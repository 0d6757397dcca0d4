"""The cache of the code attrs and cattrs generate (`generated_code`): a second process takes what the
first compiled and compiles nothing of it again, yet every class behaves as its own source says.
Each case runs in fresh interpreters, as hosts do, counting the compiler's calls."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

# a process that installs the cache in `cache_dir`, makes classes from SOURCE, uses them, finishes
SCRIPT = """
import builtins, json, sys
import attr._make
from openvaala_lsp import generated_code

cache_dir, write, source = sys.argv[1], sys.argv[2], sys.argv[3]
compiled = []
real_compile = builtins.compile
def counting(source, filename, *args, **kwargs):
    if "openvaala-test" in filename:
        compiled.append(filename)
    return real_compile(source, filename, *args, **kwargs)
builtins.compile = counting
generated_code.install(cache_dir)
patched = getattr(attr._make, "compile", None) is generated_code._compile
namespace = {"__name__": "openvaala-test"}
exec(source, namespace)
report = namespace["use"]()
written = generated_code.finish(write={"yes": True, "no": False, "default": None}[write])
print(json.dumps({
    "compiled": compiled,
    "written": written,
    "patched": patched,
    "restored": not hasattr(attr._make, "compile"),
    "file": generated_code.cache_file,
    "report": report,
}))
"""

CLASSES = """
import attrs, cattrs

@attrs.define(kw_only=True)
class Point:
    x: int
    y: int = 0

@attrs.define
class Box:
    corner: Point
    label: str = "box"

def use():
    converter = cattrs.Converter()
    box = converter.structure({"corner": {"x": 1, "y": 2}, "label": "a"}, Box)
    return {
        "box": repr(box),
        "equal": box == Box(Point(x=1, y=2), "a"),
        "dict": converter.unstructure(box),
    }
"""


def run(cache_dir: Path, source: str = CLASSES, write: str = "yes", **env: str) -> dict[str, Any]:
    environment = {**os.environ, **env}
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    environment.update(env)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(cache_dir), write, source],
        capture_output=True,
        text=True,
        env=environment,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_a_second_process_takes_the_code_the_first_compiled(tmp_path: Path) -> None:
    first = run(tmp_path)
    assert first["patched"] is True and first["restored"] is True
    assert first["compiled"], "attrs and cattrs compile through the cache"
    assert first["written"] is True and Path(first["file"]).is_file()

    second = run(tmp_path)
    assert second["compiled"] == []
    assert second["written"] is False  # nothing new: the file stays as it is
    assert (
        second["report"]
        == first["report"]
        == {
            "box": "Box(corner=Point(x=1, y=2), label='a')",
            "equal": True,
            "dict": {"corner": {"x": 1, "y": 2}, "label": "a"},
        }
    )


def test_a_class_that_changed_gets_code_from_its_own_source(tmp_path: Path) -> None:
    run(tmp_path)
    changed = CLASSES.replace("    y: int = 0\n", "    y: int = 0\n    z: int = 7\n")
    result = run(tmp_path, changed)
    assert any("Point" in name for name in result["compiled"])
    assert not any("Box" in name for name in result["compiled"])
    assert result["report"] == {
        "box": "Box(corner=Point(x=1, y=2, z=7), label='a')",
        "equal": True,
        "dict": {"corner": {"x": 1, "y": 2, "z": 7}, "label": "a"},
    }


def test_a_broken_cache_file_is_compiled_past_and_replaced(tmp_path: Path) -> None:
    cache_file = Path(run(tmp_path)["file"])
    for garbage in (b"", b"\x00not marshal", b"\xe3" * 40, json.dumps({"a": 1}).encode()):
        cache_file.write_bytes(garbage)
        result = run(tmp_path)
        assert result["compiled"] and result["report"]["equal"] is True
        assert result["written"] is True
        assert run(tmp_path)["compiled"] == []


def test_writing_follows_pythons_bytecode_rule(tmp_path: Path) -> None:
    assert run(tmp_path, write="default", PYTHONDONTWRITEBYTECODE="1")["written"] is False
    assert not list(tmp_path.iterdir())
    assert run(tmp_path, write="no")["written"] is False
    assert run(tmp_path, write="default")["written"] is True
    assert len(list(tmp_path.iterdir())) == 1


def test_a_new_file_replaces_those_of_other_versions(tmp_path: Path) -> None:
    """This Python's files of other versions go; another Python's stay, as .pyc files do."""
    stale = tmp_path / f"generated-code.{sys.implementation.cache_tag}.00000000.marshal"
    stale.write_bytes(b"old")
    other_python = tmp_path / "generated-code.cpython-0.00000000.marshal"
    other_python.write_bytes(b"another interpreter's")
    unrelated = tmp_path / f"model.{sys.implementation.cache_tag}.pyc"
    unrelated.write_bytes(b"pyc")
    result = run(tmp_path)
    kept = sorted([Path(result["file"]).name, other_python.name, unrelated.name])
    assert sorted(path.name for path in tmp_path.iterdir()) == kept


def test_the_file_goes_where_python_puts_the_packages_bytecode(tmp_path: Path) -> None:
    """Beside the package's .pyc files, or under `PYTHONPYCACHEPREFIX` when it is set (a read-only
    install): there, with the directories made."""
    script = (
        "import sys\n"
        "from openvaala_lsp import generated_code as g\n"
        "g.install()\n"
        "if sys.argv[1] == 'class':\n"
        "    exec('import attrs\\n@attrs.define\\nclass P:\\n    x: int', {'__name__': 'openvaala-test'})\n"
        "print(g.cache_file, g.finish(write=True))\n"
    )
    package = Path(__file__).resolve().parent.parent / "openvaala_lsp"
    environment = {**os.environ, "PYTHONPYCACHEPREFIX": str(tmp_path)}
    made = subprocess.check_output([sys.executable, "-c", script, "class"], text=True, env=environment).split()
    assert Path(made[0]).parent == tmp_path / str(package).lstrip(os.sep)
    assert made[1] == "True" and Path(made[0]).is_file()
    environment.pop("PYTHONPYCACHEPREFIX")
    beside = subprocess.check_output([sys.executable, "-c", script, "none"], text=True, env=environment).split()
    assert Path(beside[0]).parent == package / "__pycache__"
    assert beside[1] == "False"  # nothing compiled: the file there stays as it was


def test_an_unwritable_directory_only_means_compiling(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    result = run(blocked / "cache")
    assert result["written"] is False and result["report"]["equal"] is True


def test_the_build_command_writes_the_hosts_start(tmp_path: Path) -> None:
    """`python -m openvaala_lsp.host --write-generated-code` covers the classes a host makes before it
    listens."""
    done = subprocess.run(
        [sys.executable, "-m", "openvaala_lsp.host", "--write-generated-code"],
        capture_output=True,
        text=True,
        check=True,
    )
    path = Path(done.stdout.split(": ")[0])
    assert path.is_file() and path.name.startswith("generated-code.")
    script = (
        "import builtins, sys\n"
        "from openvaala_lsp import generated_code\n"
        "names = []\n"
        "real = builtins.compile\n"
        "builtins.compile = lambda s, f, *a, **k: (names.append(f), real(s, f, *a, **k))[1]\n"
        "generated_code.install()\n"
        "import openvaala_lsp.host.server\n"
        "ours = [name for name in names if name.startswith('<attrs generated') and 'openvaala_lsp.' in name]\n"
        "print(len(ours), len(generated_code._used))\n"
    )
    compiled, served = map(int, subprocess.check_output([sys.executable, "-c", script], text=True).split())
    assert served > 50
    assert compiled < served / 4  # what is left: frozen classes, whose hash attrs seeds per process
