"""The code attrs and cattrs generate for our classes, compiled once and kept beside the package's
bytecode (where Python keeps its `.pyc` files) instead of compiled again by every host.

attrs writes the source of each class's methods (`__init__`, `__eq__`, `__repr__`, ...) and cattrs
that of each converter function, then compiles it: ~0.3 ms a class on a small machine, 25-30 ms of a
host's first answer (measured). Between `install` and `finish` those compiles are served from the
cache file; `finish` writes what was compiled when the file lacked code for some class (a first
start, a new class, another Python or library version: the file's name tells those apart).

An entry is keyed by its whole source, file name and mode, so it never stands for other code: a
class that changed, or code that differs from process to process (attrs seeds a frozen class's
hash per process), is compiled as before. Writing follows Python's rule for bytecode: not when
`sys.dont_write_bytecode` is set (`PYTHONDONTWRITEBYTECODE`; `python -m openvaala_lsp.host
--write-generated-code` writes it anyway, as `compileall` does .pyc files), and a failed write only means
compiling next time.
"""

from __future__ import annotations

import builtins
import marshal
import os
import sys
import zlib
from types import CodeType, ModuleType

from openvaala_lsp import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

Key = tuple[str, str, str]  # source, file name, mode

PREFIX = "generated-code."

_cached: dict[Key, CodeType] = {}
_used: dict[Key, CodeType] = {}  # what this process compiled or took: what a new file holds
_known: set[str] = set()  # the file names the cache file has code for
_patched: list[ModuleType] = []
cache_file = ""  # the file `install` read, which `finish` writes


def bytecode_dir() -> str:
    """Where Python writes the package's own .pyc files: `__pycache__` beside them, or their
    directory's mirror under `sys.pycache_prefix` (`PYTHONPYCACHEPREFIX`, for a read-only install)."""
    package = os.path.dirname(os.path.abspath(__file__))
    if sys.pycache_prefix:
        return os.path.join(sys.pycache_prefix, package.lstrip(os.sep))  # as importlib's cache_from_source
    return os.path.join(package, "__pycache__")


def install(cache_dir: str | None = None) -> None:
    """Serves attrs' and cattrs' compiles from the cache (in `cache_dir`, by default the package's
    bytecode's) until `finish`. Call it before the modules that define the classes are imported; a
    second call before `finish` does nothing."""
    global cache_file
    if _patched:
        return
    import attr._make
    import cattrs.gen

    cache_file = os.path.join(cache_dir or bytecode_dir(), PREFIX + _tag(attr._make, cattrs.gen) + ".marshal")
    _cached.update(_load(cache_file))
    _known.update(filename for _, filename, _ in _cached)
    # both call the builtin by its global name: a global of that name in their module comes first
    for module in (attr._make, cattrs.gen):
        module.compile = _compile  # type: ignore[attr-defined]
        _patched.append(module)


def finish(*, write: bool | None = None) -> bool:
    """Gives the libraries the builtin back and frees the cache; first writes what this process
    compiled or took, if it compiled code for a class the file lacked. `write` forces the decision
    (default: unless `sys.dont_write_bytecode`). True if it wrote the file."""
    for module in _patched:
        del module.compile
    _patched.clear()
    entries = dict(_used)
    fresh = any(filename not in _known for _, filename, _ in entries)
    _cached.clear()
    _used.clear()
    _known.clear()
    allowed = not sys.dont_write_bytecode if write is None else write
    return fresh and allowed and _write(cache_file, entries)


def _tag(*libraries: ModuleType) -> str:
    """What the cached code depends on besides its source: the compiler and marshal's format (Python's
    version and optimisation level) and the versions of openvaala, attrs and cattrs (their files)."""
    identity = [sys.implementation.cache_tag, str(sys.flags.optimize), __version__]
    for module in libraries:
        try:
            status = os.stat(module.__file__ or "")
            identity.append(f"{status.st_size}:{status.st_mtime_ns}")
        except OSError:
            identity.append("?")
    return f"{sys.implementation.cache_tag}.{zlib.crc32(' '.join(identity).encode()):08x}"


def _load(cache_file: str) -> dict[Key, CodeType]:
    try:
        with open(cache_file, "rb") as cache:
            entries = marshal.loads(cache.read())
    except (OSError, EOFError, ValueError, TypeError):  # absent, unreadable or not marshal's
        return {}
    if not isinstance(entries, dict):
        return {}
    return {key: code for key, code in entries.items() if _valid(key, code)}


def _valid(key: object, code: object) -> bool:
    return (
        isinstance(key, tuple)
        and len(key) == 3
        and all(isinstance(part, str) for part in key)
        and isinstance(code, CodeType)
    )


def _write(cache_file: str, entries: dict[Key, CodeType]) -> bool:
    """Replaces the cache file atomically, then removes this Python's files of other versions (another
    Python's stay, as its .pyc files do: two interpreters may share the package's directory)."""
    directory, name = os.path.split(cache_file)
    temporary = f"{cache_file}.{os.getpid()}.tmp"
    try:
        os.makedirs(directory, exist_ok=True)
        with open(temporary, "wb") as out:
            out.write(marshal.dumps(entries))
        os.replace(temporary, cache_file)
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        return False
    for other in os.listdir(directory):
        if (
            other.startswith(f"{PREFIX}{sys.implementation.cache_tag}.")
            and other.endswith(".marshal")
            and other != name
        ):
            try:
                os.unlink(os.path.join(directory, other))
            except OSError:
                pass
    return True


def _compile(
    source: Any, filename: Any, mode: str, flags: int = 0, dont_inherit: bool = False, optimize: int = -1
) -> Any:
    if flags or optimize != -1 or not isinstance(source, str) or not isinstance(filename, str):
        return builtins.compile(source, filename, mode, flags, dont_inherit, optimize)
    key = (source, filename, mode)
    code = _cached.get(key)
    if code is None:
        code = builtins.compile(source, filename, mode)
    _used[key] = code
    return code
