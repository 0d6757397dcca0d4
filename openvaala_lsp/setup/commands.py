"""`openvaala setup`, `openvaala doctor` and bare `openvaala`, wired to argparse by `user_cli`."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable, Sequence

from openvaala_lsp.definitions import MODEL_APIS, ModelDefinition
from openvaala_lsp.setup import configfile
from openvaala_lsp.setup.check import check_model
from openvaala_lsp.setup.doctor import doctor, read_all, status
from openvaala_lsp.setup.presets import BY_KEY, SetupError, build_definition, check_env_name, check_url
from openvaala_lsp.setup.prompts import Prompter
from openvaala_lsp.setup.wizard import Answers, Walkthrough

SETUP_EPILOG = """\
defaults: openai gpt-5-mini (openai-responses, OPENAI_API_KEY, 400000 tokens);
anthropic claude-sonnet-4-5 (ANTHROPIC_API_KEY, 200000); ollama llama3.2 at http://127.0.0.1:11434
(no key, 4096); openai-compatible needs --base-url and --model (openai-chat, no key, 32768);
local is the embedded Gemma 3 270M base model: tiny and offline, for trying openvaala, not for real work
(needs the local-model extra).
API keys are never written: --api-key-env names the variable that holds the key."""


def add_setup_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--provider", choices=list(BY_KEY), help="which kind of provider")
    parser.add_argument("--model", help="the model name the provider knows")
    parser.add_argument("--api", choices=MODEL_APIS, help="override the API dialect")
    parser.add_argument("--base-url", type=_checked(check_url), help="the server's base URL")
    parser.add_argument(
        "--api-key-env", type=_checked(check_env_name), help="NAME of the environment variable holding the key"
    )
    parser.add_argument("--no-api-key", action="store_true", help="the server needs no key")
    parser.add_argument("--context-window", type=_positive, help="tokens the model takes in")
    parser.add_argument("--no-check", action="store_true", help="save without the real connection check")
    parser.add_argument("--yes", action="store_true", help="no prompts: flags and defaults only")


def add_doctor_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--offline", action="store_true", help="skip the requests to the models")


def interactive() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


def run_setup(args: argparse.Namespace) -> int:
    answers = Answers(
        provider=args.provider,
        model=args.model,
        api=args.api,
        base_url=args.base_url,
        key_env="" if args.no_api_key else args.api_key_env,
        context_window=args.context_window,
        check=not args.no_check,
    )
    if args.yes or not interactive():  # without a terminal there is no one to answer
        return _setup_unattended(answers)
    first = not configfile.read_config(configfile.user_config_path()).models
    return _walk(answers, first=first)


def run_doctor(args: argparse.Namespace) -> int:
    return doctor(print, os.environ, offline=args.offline)


def run_bare(commands: Sequence[tuple[str, str]]) -> int:
    """Walks a terminal user with no model through the setup; otherwise a status and the commands."""
    user = configfile.read_config(configfile.user_config_path())
    if interactive() and not user.models and not user.problems:
        return _walk(Answers(), first=True)
    status(print, os.environ, read_all())
    if not user.models and not interactive():
        print("set one up in a terminal with `openvaala`, or: openvaala setup --provider PROVIDER --yes")
    print("\ncommands:")
    for name, text in commands:
        print(f"  openvaala {name:8} {text}")
    print("  openvaala COMMAND --help for its options")
    return 0


def _walk(answers: Answers, *, first: bool) -> int:
    try:
        return Walkthrough(Prompter(), os.environ).run(answers, first=first)
    except KeyboardInterrupt:
        print("\nAborted; nothing was written.")
        return 130
    except EOFError:
        print("\nNo more input; nothing was written.")
        return 1
    except SetupError as problem:
        print(f"openvaala setup: {problem}", file=sys.stderr)
        return 2


def _setup_unattended(answers: Answers) -> int:
    if answers.provider is None:
        print("openvaala setup: --provider is needed without a terminal or with --yes", file=sys.stderr)
        return 2
    try:
        definition = build_definition(
            BY_KEY[answers.provider],
            model=answers.model,
            api=answers.api,
            base_url=answers.base_url,
            key_env=answers.key_env,
            context_window=answers.context_window,
        )
    except SetupError as problem:
        print(f"openvaala setup: {problem}", file=sys.stderr)
        return 2
    ref = f"{definition.ref.provider}/{definition.ref.name}"
    env = definition.api_key_env
    if env and not answers.check and not os.environ.get(env, "").strip():  # the check would say so
        print(f"openvaala setup: warning: {env} is not set; export {env}=<your key>", file=sys.stderr)
    if answers.check and not _unattended_check(definition, ref):
        return 1
    try:
        path = configfile.save_model(definition)
    except SetupError as problem:
        print(f"openvaala setup: {problem}", file=sys.stderr)
        return 1
    print(f"saved {ref} to {path}")
    return 0


def _unattended_check(definition: ModelDefinition, ref: str) -> bool:
    print(f"checking {ref} with one tiny request...")
    result = asyncio.run(check_model(definition, os.environ))
    if result.ok:
        print(f"  {result.describe()}")
        return True
    print(f"openvaala setup: the check of {ref} failed: {result.describe()}", file=sys.stderr)
    print("nothing was written (--no-check saves without the check)", file=sys.stderr)
    return False


def _checked(check: Callable[[str], None]) -> Callable[[str], str]:
    """An argparse `type` from a presets check, so bad flags fail before any question."""

    def convert(value: str) -> str:
        try:
            check(value)
        except SetupError as problem:
            raise argparse.ArgumentTypeError(str(problem)) from None
        return value

    return convert


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number <= 0:
        raise argparse.ArgumentTypeError("a positive whole number of tokens")
    return number
