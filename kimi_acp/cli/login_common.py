"""What `kimi login`'s key dialog (`login.py`) and the Kimi account sign-in (`login_account.py`)
share: the terminal and the exit codes. Editing config.toml is kimi_acp/config_edit.py."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO, TypeVar

from ..errors import KimiError

T = TypeVar("T")

EXIT_OK, EXIT_FAILED, EXIT_CONFIG, EXIT_INTERRUPTED = 0, 1, 2, 130
NEXT_STEP = "Next: add `kimi acp` to your IDE; see `kimi help acp`"
MAX_LISTED_MODELS = 20


class InvalidAnswer(KimiError, ValueError):
    """An answer that cannot be used; the message is shown and the question asked again."""


@dataclass
class Console:
    """The terminal: prompts read answers, `say` is the dialog, `warn` goes to stderr."""

    input_fn: Callable[[str], str]
    secret_fn: Callable[[str], str]
    out: TextIO
    err: TextIO

    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def warn(self, text: str) -> None:
        self.out.flush()
        print(text, file=self.err, flush=True)

    def ask(self, prompt: str, parse: Callable[[str], T], *, secret: bool = False) -> T:
        """Ask until `parse` accepts the answer; EOFError / KeyboardInterrupt end the dialog."""
        while True:
            raw = (self.secret_fn if secret else self.input_fn)(prompt)
            try:
                return parse(raw)
            except InvalidAnswer as exc:
                self.say(f"  {exc}")
