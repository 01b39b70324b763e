"""The secrets this process knows, and their removal from every text a person or the model reads.

One registry for the whole process: the config's keys and headers, the providers' key variables,
Kimi account and MCP OAuth tokens, MCP headers and env, plugin keys, `[services.*]` credentials.
Whoever learns a secret registers it; what is registered stays for the process's life, because a
log line or a tool result may come long after. Every tool result (`core/toolset.py`) and every log
record (`LogRedaction` on the log file, `startup/logs.py`) goes through `redact`.

Standard library only: the log setup needs it before anything heavy is imported.
"""

from __future__ import annotations

import binascii
import functools
import logging
import os
import re
import threading
from collections.abc import Callable, Iterable
from typing import TypeAlias

from . import process_state

REDACTED = "[redacted]"
# A value registered for the whole process is redacted from every output: a short one ("true",
# "v1") would mangle ordinary text everywhere, and no real key is that short.
MIN_SECRET_CHARS = 8
# A caller's own list (the credential of the call it is making) may be shorter, as it always was.
MIN_GIVEN_CHARS = 4

# The agent's model credentials in the environment: registered, and kept from child processes.
KEY_VARIABLES = (
    "KIMI_API_KEY",
    "MOONSHOT_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "DEEPSEEK_API_KEY",
    "OPENROUTER_API_KEY",
    "AZURE_OPENAI_API_KEY",
)

# The names of headers and variables whose values are credentials. Only those are registered: a
# path or a flag in an `env` table, redacted from every output (and every variable holding it
# kept from every command), would break far more than it protects.
SECRET_NAME = re.compile(r"auth|key|token|secret|cookie|session|passw|credential|signature", re.IGNORECASE)

_known: set[str] = set()
_patterns: tuple[re.Pattern[str], ...] | None = None  # every form of every known value; None: to compile
_lock = threading.Lock()  # OAuth refreshes register from worker threads


def register(values: Iterable[str | None]) -> None:
    """Redact these values from now on (too short ones are ignored: see MIN_SECRET_CHARS)."""
    global _patterns
    new = {v.strip() for v in values if isinstance(v, str) and len(v.strip()) >= MIN_SECRET_CHARS}
    with _lock:
        if new <= _known:
            return
        _known.update(new)
        _patterns = None  # compiled when next needed: a config registers its keys one by one


def register_named(pairs: Iterable[tuple[str, str]]) -> None:
    """Register the values of the headers or variables whose name says they are credentials
    (`SECRET_NAME`); of `Bearer <token>`, the token alone too."""
    values: list[str] = []
    for name, value in pairs:
        if isinstance(value, str) and SECRET_NAME.search(name):
            values += [value, *value.split()[-1:]]
    register(values)


def register_environment() -> None:
    """Register the values of the providers' key variables (`KEY_VARIABLES`) set in os.environ."""
    register(os.environ.get(name) for name in KEY_VARIABLES)


def clear() -> None:
    """Forget every registered value (tests: each starts with an empty registry)."""
    global _patterns
    with _lock:
        _known.clear()
        _patterns = None


def _forget_for_a_fresh_process() -> Callable[[], None]:
    """process_state's reset: a fresh process knows no secret until it reads its config and
    environment; the restore gives the values known before back."""
    saved = set(_known)
    clear()

    def restore() -> None:
        clear()
        register(saved)

    return restore


process_state.register(f"{__name__}._known", _forget_for_a_fresh_process)


def any_registered() -> bool:
    """Whether anything is registered (when not, there is nothing to redact anywhere)."""
    return bool(_known)


def holds_secret(text: str) -> bool:
    """Whether `text` contains a registered value, in any of the forms `redact` knows."""
    return any(pattern.search(text) for pattern in _registry_patterns())


def redact(text: str, also: Iterable[str] = (), *, mark: str = REDACTED) -> str:
    """`text` with every registered value, and every value of `also` (at least MIN_GIVEN_CHARS
    long), replaced by `mark`, as written and in its base64 and hex forms (`encoded_forms`); the
    longest first, so no fragment of a longer secret is left."""
    extra = frozenset(v for v in also if v and len(v) >= MIN_GIVEN_CHARS)
    if not extra or extra <= _known:
        patterns = _registry_patterns()
    else:
        patterns = _compile_forms(frozenset(_known) | extra)
    for pattern in patterns if text else ():
        text = pattern.sub(mark, text)
    return text


def replace(text: str, values: Iterable[str], *, mark: str = REDACTED, min_chars: int = MIN_GIVEN_CHARS) -> str:
    """`text` with exactly `values` (those at least `min_chars` long, as written) replaced by
    `mark`, longest first; the registry is left out (a helper that must redact what it is given,
    no more)."""
    wanted = {v for v in values if v and len(v) >= min_chars}
    if not wanted or not text:
        return text
    # An alternation takes the first alternative that matches: longest first means the whole value.
    return re.compile("|".join(re.escape(v) for v in sorted(wanted, key=len, reverse=True))).sub(mark, text)


def _registry_patterns() -> tuple[re.Pattern[str], ...]:
    global _patterns
    patterns = _patterns
    if patterns is None:
        with _lock:
            if _patterns is None:
                _patterns = _compile_forms(frozenset(_known)) if _known else ()
            patterns = _patterns
    return patterns


# --------------------------------------------------------------------------- encoded forms
#
# A command can print a secret encoded (`base64 -w0 /proc/PID/environ`, `xxd -p`), so each value
# is also looked for as its hex and its base64. Base64 turns 3 bytes into 4 characters, so a value
# inside a longer stream is encoded one of three ways, depending on where it starts; of each, only
# the characters of whole 3-byte groups come from the value alone. A form is the first
# ENCODED_ANCHOR_CHARS of those characters followed by the rest of the run of hex or base64
# characters it is in: the whole encoded value, its last partial group and padding included (and
# whatever else was encoded with it: a stream that carries a key is not worth keeping), at the cost
# of a short pattern whatever the value's length. Standard and URL-safe base64 differ only in `+/`
# versus `-_`, hex lower and upper only in case: a character class covers both.

ENCODED_ANCHOR_CHARS = 32  # 24 bytes of base64, 16 of hex: past any common key prefix (`sk-ant-api03-`)
_HEX_ATOMS = {c: f"[{c}{c.upper()}]" for c in "abcdef"}
_HEX_RUN = "[0-9A-Fa-f]*"
_BASE64_ATOMS = {"+": r"[+\-]", "/": "[/_]"}
_BASE64_RUN = r"[A-Za-z0-9+/_=\-]*"
# What each class atom matches, as literal atoms (a pattern must start with a literal).
_CLASS_CHOICES = {r"[+\-]": (r"\+", "-"), "[/_]": ("/", "_")}
_CLASS_CHOICES |= {f"[{c}{c.upper()}]": (c, c.upper()) for c in "abcdef"}


def encoded_forms(value: str) -> list[tuple[str, ...]]:
    """The forms `redact` looks for, each a tuple of regex atoms: the value as written (one atom
    per character), then its hex and its base64 at each of the three alignments (the anchor's
    atoms, then the run). A value given for one call may be shorter than MIN_SECRET_CHARS: it has
    no encoded forms (a few characters of hex or base64 are found in ordinary text), nor has an
    encoded form whose anchor would be that short."""
    forms = [tuple(re.escape(c) for c in value)]
    if len(value) < MIN_SECRET_CHARS:
        return forms
    data = value.encode("utf-8")
    anchors = [data[: ENCODED_ANCHOR_CHARS // 2].hex()]
    for skip in range(3):  # the bytes of the value that share a group with what comes before it
        rest = data[skip : skip + ENCODED_ANCHOR_CHARS // 4 * 3]
        anchors.append(binascii.b2a_base64(rest[: len(rest) - len(rest) % 3], newline=False).decode("ascii"))
    for index, anchor in enumerate(anchors):
        if len(anchor) >= MIN_SECRET_CHARS:
            atoms, run = (_HEX_ATOMS, _HEX_RUN) if index == 0 else (_BASE64_ATOMS, _BASE64_RUN)
            forms.append((*(atoms.get(c, c) for c in anchor), run))
    return forms


# A trie of atoms: each key one atom (a character or a class) to the rest; "" marks a form's end.
_Trie: TypeAlias = dict[str, "_Trie"]


@process_state.cache  # patterns of secret values: none outlives the process that knew them
@functools.lru_cache(maxsize=32)
def _compile_forms(values: frozenset[str]) -> tuple[re.Pattern[str], ...]:
    """Patterns for every form of every value, one per leading character: each then starts with a
    literal, which the regex engine finds with its fast scan (one pattern for all forms would be
    tried at every character that starts any of them: 3 to 10 times slower, bench/redact.py). In
    each, the forms make a trie of atoms, so shared prefixes are walked once, and at a branch the
    longer continuation is tried first (a whole encoded value, padding included, before its inner
    part). A form that starts with a character class is there once per character it allows."""
    tries: dict[str, _Trie] = {}
    for value in values:
        for whole in encoded_forms(value):
            for form in [(first, *whole[1:]) for first in _CLASS_CHOICES.get(whole[0], whole[:1])]:
                node = tries.setdefault(form[0], {})
                for atom in form:
                    node = node.setdefault(atom, {})
                node[""] = {}  # a form ends here
    return tuple(re.compile(_trie_regex(trie)) for trie in tries.values())


def _trie_regex(node: _Trie) -> str:
    """The regex of a trie: a run of single atoms as it is (a loop, not recursion: a form may be
    thousands of atoms long), a branch as an alternation, a form ending inside a longer one as an
    optional rest."""
    out: list[str] = []
    while len(node) == 1 and "" not in node:
        ((atom, node),) = node.items()
        out.append(atom)
    branches = [atom + _trie_regex(child) for atom, child in node.items() if atom]
    if branches:
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        out.append(f"(?:{body})?" if "" in node else body)
    return "".join(out)


class LogRedaction(logging.Filter):
    """On a handler: every record it writes (ours and any library's) without a registered value.

    The record is changed in place: its message is formatted once here, its traceback too."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not _known:
            return True
        try:
            message = record.getMessage()
        except Exception:  # a bad format: the handler reports it as logging does
            return True
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True
