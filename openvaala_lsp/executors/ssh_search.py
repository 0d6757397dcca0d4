"""`glob` and `grep` on an ssh executor's host, with the arguments and answers of the local ones.

glob walks the tree over SFTP as `globbing.walk_files` walks it here: `.git`, symbolic links and what
the `.gitignore` files from the root down exclude are skipped, at most `MAX_WALKED` entries are looked
at. grep runs the host's GNU grep (`-rIHn -Z`; extended regexes, binary files and `.git` skipped,
`.gitignore` not read, which the result says), its output cut on the host and bounded here.
"""

from __future__ import annotations

import posixpath
import shlex
import stat
from typing import Any, cast

import asyncssh

from openvaala_lsp.executors.ssh_host import host_facts
from openvaala_lsp.executors.ssh_link import HostFacts, SshLink
from openvaala_lsp.executors.ssh_process import run_remote
from openvaala_lsp.executors.ssh_tools import RemoteFailures, resolve_remote
from openvaala_lsp.tools.base import ToolContext, ToolOutput
from openvaala_lsp.tools.common import ToolFailure
from openvaala_lsp.tools.globbing import SKIPPED_DIRECTORIES, IgnoreRules, PathRule, compile_glob
from openvaala_lsp.tools.listing import GlobTool, literal_prefix
from openvaala_lsp.tools.matches import MAX_RECORDED_LINES, FileMatches, GrepResult, clip_line
from openvaala_lsp.tools.search import GrepTool, format_result
from openvaala_lsp.tools.truncate import truncate_text

MAX_WALKED = 200_000
GREP_OUTPUT = 8 * 1024 * 1024  # bytes of grep's output the host sends at most
GREP_SECONDS = 60.0


async def _gitignore(sftp: asyncssh.SFTPClient, directory: str) -> tuple[PathRule, ...]:
    try:
        async with sftp.open(posixpath.join(directory, ".gitignore"), "rb") as file:
            data = cast(bytes, await file.read(1024 * 1024))  # binary mode: bytes
    except asyncssh.SFTPError:
        return ()
    text = data.decode("utf-8", errors="replace")
    return tuple(rule for rule in map(PathRule.parse, text.splitlines()) if rule is not None)


async def _rules_for(sftp: asyncssh.SFTPClient, directory: str, root: str) -> IgnoreRules:
    chain = [directory]
    while chain[-1] != root and chain[-1].startswith(root.rstrip("/") + "/"):
        chain.append(posixpath.dirname(chain[-1]))
    rules = IgnoreRules()
    for each in reversed(chain):
        found = await _gitignore(sftp, each)
        if found:
            rules = IgnoreRules(layers=(*rules.layers, (each, found)))
    return rules


async def remote_files(
    sftp: asyncssh.SFTPClient, start: str, root: str, context: ToolContext, facts: HostFacts
) -> list[tuple[str, float]]:
    """(path, mtime) of the regular files under `start` a local walk would list."""
    found: list[tuple[str, float]] = []
    pending = [(start, await _rules_for(sftp, start, root))]
    walked = 0
    while pending:
        directory, rules = pending.pop()
        try:
            names = await sftp.readdir(directory)
        except asyncssh.SFTPError:
            continue
        if any(str(name.filename) == ".gitignore" for name in names) and directory != start:
            own = await _gitignore(sftp, directory)
            if own:
                rules = IgnoreRules(layers=(*rules.layers, (directory, own)))
        for name in sorted(names, key=lambda n: str(n.filename)):
            walked += 1
            if walked > MAX_WALKED:
                raise ToolFailure(f"more than {MAX_WALKED} entries under {start}; narrow the path or the pattern")
            filename = str(name.filename)
            path = posixpath.join(directory, filename)
            mode = name.attrs.permissions or 0
            if filename in (".", "..") or stat.S_ISLNK(mode) or _protected(path, context, facts):
                continue
            if stat.S_ISDIR(mode):
                if filename not in SKIPPED_DIRECTORIES and not rules.ignored(path, True):
                    pending.append((path, rules))
            elif stat.S_ISREG(mode) and not rules.ignored(path, False):
                found.append((path, float(name.attrs.mtime or 0)))
    return found


class RemoteGlob(RemoteFailures, GlobTool):
    def __init__(self, link: SshLink) -> None:
        super().__init__()
        self.link = link

    async def remote(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutput:
        pattern: str = arguments["pattern"]
        if pattern.startswith("/") or ".." in pattern.split("/"):
            raise ToolFailure("pattern must be relative and without '..'; give the directory to search in as `path`")
        base = await resolve_remote(self.link, arguments.get("path") or context.directory, context)
        sftp = await self.link.sftp()
        with self.link.dropped("listing files"):
            if not await sftp.isdir(base):
                raise ToolFailure(f"not a directory: {arguments.get('path') or base}")
            prefix, _ = literal_prefix(pattern)
            start = posixpath.join(base, prefix) if prefix else base
            # a link in the literal prefix could lead out of the roots
            if prefix and (str(await sftp.realpath(start)) != posixpath.normpath(start) or not await sftp.isdir(start)):
                return ToolOutput(text=f"No files match {pattern} in {base}")
            facts = await host_facts(self.link)
            files = await remote_files(sftp, start, self.link.inside_roots(base) or base, context, facts)
        regex = compile_glob(pattern)
        matched = [(mtime, path) for path, mtime in files if regex.fullmatch(posixpath.relpath(path, base))]
        if not matched:
            return ToolOutput(text=f"No files match {pattern} in {base}")
        matched.sort(key=lambda item: (-item[0], item[1]))
        shown = [path for _, path in matched[: self.max_results]]
        text = "\n".join(shown)
        if len(matched) > len(shown):
            text += f"\n\n[{len(matched)} files match; showing the {len(shown)} most recently modified. "
            text += "Narrow the pattern.]"
        return ToolOutput(text=text)


def grep_command(arguments: dict[str, Any], target: str) -> str:
    mode = arguments["output_mode"]
    flags = ["-rIH", "-Z", "-E", "--exclude-dir=.git"]
    flags += {"files_with_matches": ["-l"], "count": ["-c"], "content": ["-n"]}[mode]
    if arguments["case_insensitive"]:
        flags.append("-i")
    glob = arguments.get("glob")
    if glob:
        flags.append(f"--exclude={glob[1:]}" if glob.startswith("!") else f"--include={glob}")
    argv = ["grep", *flags, "-e", arguments["pattern"], "--", target]
    return f"{' '.join(shlex.quote(word) for word in argv)} | head -c {GREP_OUTPUT}"


def _protected(path: str, context: ToolContext, facts: HostFacts) -> bool:
    return context.protected.unreadable_at(path) is not None or facts.credential_at(path) is not None


def parse_grep(output: bytes, mode: str, context: ToolContext, facts: HostFacts, *, cut: bool) -> GrepResult:
    """GNU grep's `-Z` records: `path\\0` (-l), `path\\0count` (-c), `path\\0line:text` (-n)."""
    result = GrepResult()
    by_path: dict[str, FileMatches] = {}
    records = output.split(b"\0" if mode == "files_with_matches" else b"\n")
    if cut:  # the host stopped sending at GREP_OUTPUT bytes
        result.stopped_early = True
        records = records[:-1]  # cut in the middle
    recorded = 0
    for record in records:
        if mode == "files_with_matches":
            path, rest = record.lstrip(b"\n"), b""
        else:
            path, _, rest = record.partition(b"\0")
        name = path.decode("utf-8", errors="replace")
        if not name or _protected(name, context, facts):
            continue
        found = by_path.get(name)
        if found is None:
            found = by_path[name] = FileMatches(path=name)
            result.files.append(found)
        if mode == "count":
            found.count = int(rest or b"0")
        elif mode == "content":
            number, _, text = rest.partition(b":")
            if recorded == MAX_RECORDED_LINES:
                result.stopped_early = True
                break
            found.lines.append((int(number or b"0"), clip_line(text.decode("utf-8", errors="replace"))))
            found.count += 1
            recorded += 1
        else:
            found.count = 1
    result.files = [file for file in result.files if file.count]
    return result


class RemoteGrep(RemoteFailures, GrepTool):
    def __init__(self, link: SshLink) -> None:
        super().__init__()
        self.link = link

    async def remote(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutput:
        base = await resolve_remote(self.link, arguments.get("path") or context.directory, context)
        command = grep_command(arguments, base)
        workdir = self.link.inside_roots(base) or base
        argv = ["/bin/sh", "-c", command]
        result = await run_remote(self.link, argv, workdir=workdir, time_limit=GREP_SECONDS, read_limit=GREP_OUTPUT * 2)
        output = result.output.render(GREP_OUTPUT * 2).encode("utf-8")
        if result.timed_out:
            raise ToolFailure(f"grep on {self.link.target.host} did not end within {GREP_SECONDS:g} s")
        if result.exit_code not in (0, 1) and not output.strip():
            raise ToolFailure(f"grep failed on {self.link.target.host} (exit code {result.exit_code})")
        if result.exit_code not in (0, 1):
            raise ToolFailure(f"grep failed on {self.link.target.host}: {output[:500].decode(errors='replace')}")
        cut = result.output.total_bytes >= GREP_OUTPUT
        found = parse_grep(output, arguments["output_mode"], context, await host_facts(self.link), cut=cut)
        text = format_result(found, arguments["output_mode"], arguments.get("head_limit"))
        text += "\n[searched with the host's grep: extended regexes; .gitignore not read]"
        return ToolOutput(text=truncate_text(text, self.max_output))
