"""The environment a tool's processes get: the client's, without what looks like a secret.

A variable is dropped when a word of its name says it holds a secret (`GITHUB_TOKEN`,
`AWS_SECRET_ACCESS_KEY`, `PGPASSWORD`, `SSH_AUTH_SOCK`, ...) or its value carries one (a URL with a
password, a private key). An agent's `allowEnv` lets named variables (or globs) through, except the
API keys of the configured models, which never reach a tool.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping

_WORD = re.compile(r"[^A-Z0-9]+")
_SECRET_ENDINGS = ("KEY", "KEYS", "TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD", "PASSWD", "PASSPHRASE")
_SECRET_WORDS = frozenset({"AUTH", "CREDENTIAL", "CREDENTIALS", "COOKIE", "PAT", "PRIVATE", "SESSIONID", "PWD"})
_NOT_SECRET = frozenset({"PWD", "OLDPWD"})  # the shell's working folders
_URL_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/@\s:]*:[^/@\s]+@")
_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")


def is_secret(name: str, value: str) -> bool:
    if name.upper() not in _NOT_SECRET:
        words = [word for word in _WORD.split(name.upper()) if word]
        if any(word.endswith(_SECRET_ENDINGS) or word in _SECRET_WORDS for word in words):
            return True
    return bool(_URL_PASSWORD.search(value) or _PRIVATE_KEY.search(value))


def tool_environment(
    environment: Mapping[str, str], *, allow: Iterable[str] = (), model_keys: Iterable[str] = ()
) -> dict[str, str]:
    """`environment` without its secrets; `allow` (names or globs) passes, `model_keys` never does."""
    allowed = list(allow)
    never = set(model_keys)
    return {
        name: value
        for name, value in environment.items()
        if name not in never
        and (not is_secret(name, value) or any(fnmatch.fnmatchcase(name, pattern) for pattern in allowed))
    }
