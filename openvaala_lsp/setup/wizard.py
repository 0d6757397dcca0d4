"""The interactive walk-through: provider, model, key variable, context window, a real check, save.

Nothing is written before the last step, so Ctrl-C or an abort at any point leaves no trace.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from pathlib import Path

import attrs

from openvaala_lsp.config.tomlwrite import dumps
from openvaala_lsp.definitions import EMBEDDED_MODEL_NOTE, ModelDefinition, embedded_model
from openvaala_lsp.providers.factory import DEFAULT_BASE_URLS
from openvaala_lsp.setup import configfile
from openvaala_lsp.setup.check import check_model, local_model_missing
from openvaala_lsp.setup.presets import BY_KEY, PRESETS, Preset, build_definition, check_env_name, check_url
from openvaala_lsp.setup.prompts import Prompter


@attrs.define(kw_only=True)
class Answers:
    """What the flags already answered; None asks."""

    provider: str | None = None
    model: str | None = None
    api: str | None = None
    base_url: str | None = None
    key_env: str | None = None  # "" means no key
    context_window: int | None = None
    check: bool = True


class Aborted(Exception):
    """The user chose to abort."""


class Walkthrough:
    def __init__(
        self,
        prompter: Prompter,
        environ: Mapping[str, str],
        save: Callable[[ModelDefinition], Path] = configfile.save_model,
    ) -> None:
        self.ask = prompter
        self.say = prompter.say
        self.environ = environ
        self.save = save

    def run(self, answers: Answers, *, first: bool) -> int:
        where = configfile.user_config_path()
        if first:
            self.say("No model is configured yet. Let's set one up: pick a provider, check the connection")
            self.say(f"with one tiny request, then save it to {where}.")
        else:
            self.say(f"Adding a model to {where}.")
        self.say("Ctrl-C aborts at any point; nothing is written before the end.\n")
        try:
            preset = BY_KEY[answers.provider] if answers.provider else self._provider()
            if preset.key == "local":
                definition = self._local(answers.check)
            else:
                definition = self._remote(preset, answers)
                if answers.check:
                    self._check(definition)
        except Aborted:
            self.say("Aborted; nothing was written.")
            return 1
        path = self.save(definition)
        entry = dumps({"models": [configfile.model_entry(definition)]})
        self.say(f"\nSaved to {path}:\n\n{entry}")
        self.say("Check it any time with `openvaala doctor`.")
        return 0

    def _provider(self) -> Preset:
        number = self.ask.choose("Which model provider?", [preset.label for preset in PRESETS])
        self.say("")
        return PRESETS[number - 1]

    def _remote(self, preset: Preset, answers: Answers) -> ModelDefinition:
        base_url = answers.base_url
        if preset.asks_base_url and base_url is None:
            if preset.base_url is None:
                self.say("The base URL is the part before /chat/completions, e.g. http://127.0.0.1:8000/v1")
            base_url = self.ask.text("Base URL of the server", preset.base_url, check=check_url)
        model = answers.model or self.ask.text("Model name", preset.model)
        key_env = answers.key_env
        if key_env is None and preset.key != "ollama":  # Ollama serves without keys
            key_env = self._key_env(preset, None)
        elif key_env:
            key_env = self._key_env(preset, key_env)
        window = answers.context_window
        if window is None:
            hint = f" ({preset.window_hint})" if preset.window_hint else ""
            window = self.ask.integer(f"Context window in tokens{hint}", preset.context_window)
        self.say("")
        return build_definition(
            preset, model=model, api=answers.api, base_url=base_url, key_env=key_env, context_window=window
        )

    def _key_env(self, preset: Preset, given: str | None) -> str:
        """The variable's name, once it is set or the user goes on without it."""
        name = given
        while True:
            if name is None:
                optional = preset.key_env is None
                question = "Environment variable that holds the API key" + (" (blank: no key)" if optional else "")
                name = self.ask.text(question, preset.key_env, check=check_env_name, optional=optional)
            if not name:
                return ""
            if self.environ.get(name, "").strip():
                self.say(f"  {name} is set. Only its name is saved; the key stays in your environment.")
                return name
            self.say(f"\n{name} is not set here. Add this line to your shell profile (~/.bashrc, ~/.zshrc, ...):")
            self.say(f"    export {name}=<your key>")
            self.say("then open a new terminal; editors started from there see it too.")
            choice = self.ask.choose(
                "What now?",
                ["continue anyway (the connection check fails until it is set)", "use another variable", "abort"],
            )
            if choice == 1:
                return name
            if choice == 3:
                raise Aborted
            name = None

    def _local(self, check: bool) -> ModelDefinition:
        definition = embedded_model()
        assert definition.local_server is not None
        self.say(f"{definition.display_name}: runs on this machine, no account or key needed.")
        self.say(EMBEDDED_MODEL_NOTE)
        missing = local_model_missing(definition.local_server)
        if missing:
            self.say(f"But {missing}")
            options = ["save it anyway (install the extra before first use)", "abort"]
            if self.ask.choose("What now?", options) == 2:
                raise Aborted
            return definition
        if check and self.ask.confirm("Start it now for a real check? That takes a few seconds"):
            self._check(definition)
        return definition

    def _check(self, definition: ModelDefinition) -> None:
        """Returns when the model answered or the user saves anyway; raises Aborted otherwise."""
        ref = f"{definition.ref.provider}/{definition.ref.name}"
        where = (
            "on this machine" if definition.local_server else definition.base_url or DEFAULT_BASE_URLS[definition.api]
        )
        while True:
            self.say(f"Checking {ref} ({definition.api}) at {where} with one tiny request...")
            result = asyncio.run(check_model(definition, self.environ))
            if result.ok:
                self.say(f"  {result.describe()}")
                return
            self.say(f"  failed: {result.describe()}")
            choice = self.ask.choose("What now?", ["retry", "save anyway", "abort (nothing is written)"])
            if choice == 2:
                return
            if choice == 3:
                raise Aborted
