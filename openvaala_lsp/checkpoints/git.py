"""The `git` command as the checkpoints run it: with an environment and configuration of their own,
so that nothing of the user's (their `.git`, its config, index and hooks, their global config) and
nothing a hostile workspace plants (attributes naming filters, an fsmonitor) takes part."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence

import attrs

# Every command gets these: no hooks, no fsmonitor, no attribute or exclude files outside the shadow
# repository, paths printed raw, no automatic gc (the refs keep what matters reachable, and a gc
# would pause a turn), line endings and symlinks stored as they are on disk.
CONFIG: tuple[tuple[str, str], ...] = (
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("core.attributesFile", "/dev/null"),
    ("core.excludesFile", "/dev/null"),
    ("core.untrackedCache", "true"),
    ("core.quotePath", "false"),
    ("core.autocrlf", "false"),
    ("core.safecrlf", "false"),
    ("core.symlinks", "true"),
    ("core.fileMode", "true"),
    ("core.bare", "false"),
    ("core.splitIndex", "false"),
    ("core.sparseCheckout", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("safe.directory", "*"),
    ("submodule.recurse", "false"),
    ("diff.renames", "true"),
    ("commit.gpgSign", "false"),
    ("advice.addEmbeddedRepo", "false"),
    ("advice.addIgnoredFile", "false"),
    ("index.version", "4"),
    ("user.name", "openvaala"),
    ("user.email", "checkpoints@openvaala.invalid"),
)


class GitFailed(Exception):
    """A git command of the checkpoints ended with an error."""

    def __init__(self, argv: Sequence[str], code: int, stderr: str) -> None:
        detail = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit code {code}"
        super().__init__(f"git {' '.join(argv[:2])} failed: {detail}")
        self.code = code
        self.stderr = stderr


@attrs.frozen(kw_only=True)
class GitState:
    """Whether checkpoints can be made here, and if not, why (for `initialize` and the doctor)."""

    usable: bool
    reason: str
    executable: str | None = None


def environment(git_dir: str | None, work_tree: str | None, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The runtime's environment without any GIT_* variable it inherited (a GIT_DIR, GIT_INDEX_FILE or
    GIT_CONFIG_* would point git at the user's repository or configuration), and with git kept to the
    shadow repository: no system or global config, no prompts, no pager."""
    env = {key: value for key, value in (os.environ if base is None else base).items() if not key.startswith("GIT_")}
    if git_dir is not None:
        env["GIT_DIR"] = git_dir
    if work_tree is not None:
        env["GIT_WORK_TREE"] = work_tree
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_SYSTEM=os.devnull,
        GIT_ATTR_NOSYSTEM="1",
        GIT_TERMINAL_PROMPT="0",
        GIT_PAGER="cat",
        GIT_NO_REPLACE_OBJECTS="1",
        GIT_OPTIONAL_LOCKS="0",
        LC_ALL="C",
    )
    return env


def config_arguments() -> list[str]:
    return [part for key, value in CONFIG for part in ("-c", f"{key}={value}")]


def run(
    executable: str,
    git_dir: str | None,
    work_tree: str,
    argv: Sequence[str],
    *,
    stdin: bytes | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    """Runs `git argv` on the shadow repository `git_dir` with `work_tree`, in the work tree (no
    `git_dir`: in no repository, for `init`)."""
    completed = subprocess.run(
        [executable, *config_arguments(), *argv],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        cwd=work_tree,
        env=environment(git_dir, work_tree if git_dir is not None else None),
        check=False,
        umask=0o077,  # the shadow repository holds copies of the user's files: theirs alone, as the history
    )
    if check and completed.returncode != 0:
        raise GitFailed(argv, completed.returncode, completed.stderr.decode(errors="replace"))
    return completed


def probe(path: str | None = None) -> GitState:
    """Whether a `git` that the checkpoints can use is on PATH (`path`: instead of $PATH)."""
    executable = shutil.which("git", path=path if path is not None else os.environ.get("PATH"))
    if executable is None:
        return GitState(usable=False, reason="git is not installed (not on PATH): turns are not checkpointed")
    try:
        completed = subprocess.run(
            [executable, "--version"], capture_output=True, env=environment(None, None), timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return GitState(usable=False, reason=f"git does not run ({error}): turns are not checkpointed")
    words = completed.stdout.decode(errors="replace").split()
    version = words[2] if len(words) >= 3 and completed.returncode == 0 else ""
    numbers = tuple(int(part) for part in version.split(".")[:2] if part.isdigit())
    if len(numbers) < 2:
        return GitState(
            usable=False, reason=f"git at {executable} does not say its version: turns are not checkpointed"
        )
    if numbers < (2, 26):  # `add --pathspec-from-file`
        return GitState(
            usable=False, reason=f"git {version} is older than 2.26: turns are not checkpointed", executable=executable
        )
    return GitState(usable=True, reason=f"git {version}", executable=executable)


_state: GitState | None = None


def state() -> GitState:
    """`probe()`, once per process."""
    global _state
    if _state is None:
        _state = probe()
    return _state


def forget() -> None:
    """The next `state()` probes again (tests changing PATH)."""
    global _state
    _state = None
