"""Questions on a plain terminal: numbered choices, defaults in brackets, answers checked on the spot.

Ctrl-C (KeyboardInterrupt) and end of input (EOFError) pass through to the caller, which aborts
without writing anything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from openvaala_lsp.setup.presets import SetupError


class Prompter:
    def __init__(self, ask: Callable[[str], str] = input, say: Callable[[str], None] = print) -> None:
        self.ask = ask
        self.say = say

    def text(
        self,
        question: str,
        default: str | None = None,
        *,
        check: Callable[[str], None] | None = None,
        optional: bool = False,
    ) -> str:
        """The answer, stripped; `default` on an empty answer; "" only when `optional`."""
        shown = f" [{default}]" if default else (" [none]" if optional else "")
        while True:
            answer = self.ask(f"{question}{shown}: ").strip() or (default or "")
            if not answer:
                if optional:
                    return ""
                self.say("  an answer is needed here")
                continue
            try:
                if check is not None:
                    check(answer)
            except SetupError as problem:
                self.say(f"  {problem}")
                continue
            return answer

    def choose(self, question: str, options: Sequence[str], default: int = 1) -> int:
        """The 1-based number of the chosen option."""
        self.say(question)
        for number, option in enumerate(options, 1):
            self.say(f"  {number}) {option}")
        while True:
            answer = self.ask(f"Choice [{default}]: ").strip()
            if not answer:
                return default
            if answer.isdigit() and 1 <= int(answer) <= len(options):
                return int(answer)
            self.say(f"  type a number from 1 to {len(options)}")

    def confirm(self, question: str, default: bool = True) -> bool:
        while True:
            answer = self.ask(f"{question} [{'Y/n' if default else 'y/N'}]: ").strip().lower()
            if not answer:
                return default
            if answer in ("y", "yes", "n", "no"):
                return answer.startswith("y")
            self.say("  answer y or n")

    def integer(self, question: str, default: int) -> int:
        def positive(answer: str) -> None:
            try:
                value = int(answer)
            except ValueError:
                value = 0
            if value <= 0:
                raise SetupError("type a positive whole number")

        return int(self.text(question, str(default), check=positive))
