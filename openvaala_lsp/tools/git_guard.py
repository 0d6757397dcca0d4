"""git with the commands its configuration names turned off, for a shell command the user did not see:
one a remembered `allowAlways` let run. A repository's config is the agent's to write (a nested
repository's wholly, and `.git/config` itself wherever the sandbox leaves it writable), and git runs
what it names: the fsmonitor hook on `git status`, hooks, pagers, editors, diff and merge drivers,
filters, credential helpers.

Settings passed in the environment (`GIT_CONFIG_COUNT`, `GIT_CONFIG_KEY_n`, `GIT_CONFIG_VALUE_n`)
override every config file, and git hands them on to the git processes it starts for submodules.
Those with a fixed name are always set (`FIXED`); those named after a driver (`filter.<name>.clean`,
`diff.<name>.textconv`, ...) are set for each one the repository's config defines, read (with
`git config`, which runs nothing) just before the command starts; submodules are not walked into, so
their own drivers never run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import shutil
from collections.abc import Mapping

# (key, value): no fsmonitor, no hooks, no pager, an editor that refuses, the default signing
# programs, no credential helper (an empty value empties the list), no `ext::` transport, and no
# walking into submodules (each has a config of its own, read by the git run there)
FIXED = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.editor", "false"),
    ("sequence.editor", "false"),
    ("core.sshCommand", "ssh"),
    ("core.askPass", ""),
    ("core.gitProxy", ""),
    ("credential.helper", ""),
    ("gpg.program", "gpg"),
    ("gpg.openpgp.program", "gpg"),
    ("gpg.x509.program", "gpgsm"),
    ("gpg.ssh.program", "ssh-keygen"),
    ("log.showSignature", "false"),
    ("protocol.ext.allow", "never"),
    ("interactive.diffFilter", ""),
    ("diff.ignoreSubmodules", "all"),
    ("status.submoduleSummary", "false"),
    ("submodule.recurse", "false"),
)
FIXED_ENVIRONMENT = {"GIT_PAGER": "cat", "PAGER": "cat", "GIT_EDITOR": "false", "GIT_SEQUENCE_EDITOR": "false"}
# keys named after a driver, a URL or a tool, and the value that makes each run nothing: an empty
# filter is no filter; a textconv of `cat` shows the file as it is; an empty external diff or helper
# cannot run (git then fails that diff rather than run the configured command)
_FILTER = re.compile(r"^filter\..+\.(?:clean|smudge|process)$")
_TEXTCONV = re.compile(r"^diff\..+\.textconv$")
_COMMAND = re.compile(
    r"^(?:diff\.external|diff\..+\.command|merge\..+\.driver|credential\..+\.helper|(?:diff|merge)tool\..+\.cmd)$"
)
_SUBMODULE = re.compile(r"^submodule\.(.+)\.(?:path|url|ignore)$")
_READ_SECONDS = 10.0  # `git config` reads a few files; a safety bound, never a measurement


async def guarded_environment(environment: Mapping[str, str], cwd: str, command: str) -> dict[str, str]:
    """`environment` with git's command-running settings turned off for `command` run in `cwd` (the
    repository's drivers are read only when the command names git)."""
    overrides = dict(FIXED)
    for key in await _configured(environment, cwd) if _names_git(command) else ():
        if _FILTER.match(key) or _COMMAND.match(key):
            overrides[key] = ""
        elif _TEXTCONV.match(key):
            overrides[key] = "cat"
        elif submodule := _SUBMODULE.match(key):
            overrides[f"submodule.{submodule[1]}.ignore"] = "all"
    guarded = {**environment, **FIXED_ENVIRONMENT}
    first = _count(environment)
    for index, (key, value) in enumerate(overrides.items(), start=first):
        guarded[f"GIT_CONFIG_KEY_{index}"] = key
        guarded[f"GIT_CONFIG_VALUE_{index}"] = value
    guarded["GIT_CONFIG_COUNT"] = str(first + len(overrides))
    return guarded


def _names_git(command: str) -> bool:
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    return any(word == "git" or word.endswith("/git") for word in words)


def _count(environment: Mapping[str, str]) -> int:
    """How many settings the environment passes already (ours follow them, so ours win)."""
    try:
        return max(int(environment.get("GIT_CONFIG_COUNT", "0")), 0)
    except ValueError:
        return 0


async def _configured(environment: Mapping[str, str], cwd: str) -> list[str]:
    """The keys that name a driver, a tool or a submodule in the config git reads in `cwd` (every
    file, includes too) and in the repository's `.gitmodules`; none without git or a repository."""
    git = shutil.which("git", path=environment.get("PATH", os.defpath))
    if git is None:
        return []
    pattern = r"^(filter|diff|merge|credential|difftool|mergetool|submodule)\."
    found = await _read(git, ["config", "--null", "--name-only", "--get-regexp", pattern], environment, cwd)
    top = (await _read(git, ["rev-parse", "--show-toplevel"], environment, cwd)).strip()
    if top:  # a repository without the file: git config fails, and reads as nothing
        modules = os.path.join(top, ".gitmodules")
        arguments = ["config", "--null", "--name-only", "--file", modules, "--get-regexp", pattern]
        found += await _read(git, arguments, environment, cwd)
    return [key for key in found.split("\0") if key]


async def _read(git: str, arguments: list[str], environment: Mapping[str, str], cwd: str) -> str:
    """What one git command (one that runs nothing else) prints; '' if it fails."""
    try:
        process = await asyncio.create_subprocess_exec(
            git,
            *arguments,
            cwd=cwd,
            env={**environment, **FIXED_ENVIRONMENT},
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:
        return ""
    try:
        output, _ = await asyncio.wait_for(process.communicate(), _READ_SECONDS)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        raise
    return output.decode("utf-8", errors="replace") if process.returncode == 0 else ""
