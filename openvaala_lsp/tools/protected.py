"""The paths no tool may read, and the paths that govern the agent, shared by the sandbox (what a
command sees) and the file and skill tools (what they open or write).

- Unreadable: the user's credentials (`CREDENTIAL_PATHS` under the home, and an agent's `denyRead`)
  and the runtime's own files (configuration, the history database, logs, the run directory with the
  host's socket). Inside the sandbox they are empty; the file and skill tools refuse them.
- Governing: inside each workspace folder, what configures or runs as the user when the agent is
  done (`GOVERNING_NAMES`: the project's openvaala configuration, agents and skills, git's hooks and
  configuration), and a git worktree's pointer and what it points at. Read-only inside the
  sandbox; the file tools write them only with the user's approval of that one write.

Paths are real (symlinks resolved), so a link to a protected file is protected too.
"""

from __future__ import annotations

import functools
import glob
import os
import pwd
from collections.abc import Iterable, Sequence

import attrs

from openvaala_lsp import paths, rundir

CREDENTIAL_PATHS = (
    "~/.ssh",
    "~/.aws",
    "~/.gnupg",
    "~/.config/gcloud",
    "~/.azure",
    "~/.kube",
    "~/.docker/config.json",
    "~/.netrc",
    "~/.git-credentials",
    "~/.npmrc",
    "~/.pypirc",
    # what only root may read, which a runtime run by root could read from its sandbox (its user
    # namespace maps root to root: no capability, but the owner of these files)
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/ssh/ssh_host_*key",
)
GOVERNING_NAMES = (".openvaala", ".agents", ".claude", ".git/hooks", ".git/config")


@attrs.frozen
class Protected:
    unreadable: tuple[str, ...] = ()  # real absolute paths, files or folders (what lies below them too)
    governing: tuple[str, ...] = ()  # real absolute paths, files or folders (what lies below them too)

    def unreadable_at(self, real: str) -> str | None:
        """The protected path that `real` (a real path) lies in, if any."""
        return _holder(real, self.unreadable)

    def governing_at(self, real: str) -> str | None:
        return _holder(real, self.governing)


def _holder(real: str, protected: Iterable[str]) -> str | None:
    return next((path for path in protected if real == path or real.startswith(path.rstrip("/") + "/")), None)


def homes() -> list[str]:
    """The user's home as `$HOME` says and as the password database says (a changed `$HOME` must not
    move the credentials out of the list)."""
    found = [os.path.expanduser("~")]
    try:
        found.append(pwd.getpwuid(os.getuid()).pw_dir)
    except KeyError:
        pass
    return list(dict.fromkeys(os.path.realpath(home) for home in found if home))


def expand(entry: str, roots: Sequence[str]) -> list[str]:
    """An entry of a path list as real paths: `~/x` under each home, `/x` as is, a relative one under
    each workspace root; with `*`, `?` or `[`, the paths that match it now."""
    if entry.startswith("~/") or entry == "~":
        bases = homes()
        entry = entry[2:]
    elif os.path.isabs(entry):
        bases = ["/"]
    else:
        bases = list(roots)
    spelled = [os.path.join(base, entry) for base in bases]
    if glob.has_magic(entry):
        spelled = [match for pattern in spelled for match in glob.glob(pattern)]
    return list(dict.fromkeys(os.path.realpath(path) for path in spelled))


def runtime_paths(*, create: bool = False) -> tuple[str, ...]:
    """The runtime's own folders: configuration, data (the history database), logs, run directory.
    With `create`, those that do not exist yet are made (private): a folder a command could create
    where the user's configuration belongs would be read as the user's."""
    own = [str(paths.config_dir()), str(paths.data_dir()), str(paths.state_dir()), rundir.run_dir().path]
    if create:
        for path in own[:3]:  # the run directory is the host's to make, with its checks
            os.makedirs(path, mode=0o700, exist_ok=True)
    return tuple(dict.fromkeys(os.path.realpath(path) for path in own))


def credential_paths(deny_read: Sequence[str] = (), roots: Sequence[str] = ()) -> tuple[str, ...]:
    """The built-in credential paths and an agent's `denyRead`, whether they exist or not. Worked out
    once per home, list and workspace (a few hundred microseconds of lookups, before every tool call
    otherwise): a credential path that appears later is covered as it is spelled (a mount over a path
    covers what a link there points to)."""
    return _credential_paths(tuple(deny_read), tuple(roots), os.environ.get("HOME", ""))


@functools.lru_cache(maxsize=64)
def _credential_paths(deny_read: tuple[str, ...], roots: tuple[str, ...], home: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(path for entry in (*CREDENTIAL_PATHS, *deny_read) for path in expand(entry, roots)))


def governing_paths(roots: Sequence[str]) -> tuple[str, ...]:
    """What governs the agent inside `roots`, whether it exists or not. (The user's configuration is
    one of the runtime's own folders: unreadable, which covers unwritable.)"""
    found: list[str] = []
    for root in roots:
        real = os.path.realpath(root)
        found += [os.path.join(real, name) for name in GOVERNING_NAMES]
        found += git_pointer_targets(real)
    return tuple(dict.fromkeys(found))


def git_pointer_targets(root: str) -> list[str]:
    """For a worktree whose `.git` is a file (`gitdir: ...`): that file, and the configuration and hooks
    of the repository it points at, which git runs for this worktree."""
    pointer = os.path.join(root, ".git")
    try:
        with open(pointer, encoding="utf-8") as file:
            first = file.readline(4096).strip()
    except (IsADirectoryError, FileNotFoundError, NotADirectoryError, UnicodeDecodeError, PermissionError):
        return []
    except OSError:
        return []
    if not first.startswith("gitdir:"):
        return [pointer]
    gitdir = os.path.realpath(os.path.join(root, first[len("gitdir:") :].strip()))
    common = gitdir
    try:
        with open(os.path.join(gitdir, "commondir"), encoding="utf-8") as file:
            common = os.path.realpath(os.path.join(gitdir, file.readline(4096).strip()))
    except (OSError, UnicodeDecodeError):
        pass
    targets = [pointer, os.path.join(gitdir, "config.worktree"), os.path.join(common, "config")]
    return [*targets, os.path.join(common, "hooks")]


def protected_paths(roots: Sequence[str], deny_read: Sequence[str] = ()) -> Protected:
    """What is protected for a conversation whose workspace folders are `roots`."""
    unreadable = (*credential_paths(deny_read, roots), *runtime_paths())
    return Protected(unreadable=tuple(dict.fromkeys(unreadable)), governing=governing_paths(roots))
