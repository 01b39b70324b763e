"""What "approve for this session" of one simple command remembers, and what that covers.

- A command with a subcommand, `git status -s` or `npm test`, is remembered by its program and
  subcommand (`git status …`): later `git status` commands with any arguments run unasked, `git
  push` asks. A bare program (`make`) is remembered by its name, `python -m MODULE` by those three
  words, and a program whose first argument is an option or a path (`ls -la`, `grep -rn x src`)
  by its name (`ls …`), as before.
- Exactly as the card showed it, so that no extra word is covered: a program whose arguments are
  what it destroys, changes or sends (`rm`, `mv`, `chmod`, `kill`, `curl`, `ssh`, `tar`, …), since
  approving `rm -rf build` must not approve `rm -rf build ~`; and a program with subcommands whose
  first argument is an option (`git -C ../other push`), whose name alone would cover every
  subcommand.
- Never remembered and never covered (asked each time), since it runs whatever its arguments say:
  `eval`, `source`, `exec`, wrappers that run another command (`sudo`, `env`, `timeout`, `nohup`,
  `xargs`, …), code given inline (`bash -c`, `python -c`, `node -e`, `perl -ne`, …), `find` with
  `-exec` or `-delete`, `git -c` (a config value can name a program).

Reading commands (`cat`, `grep`) keep the prefix form: what they may not read without a question
(credentials, protected paths) asks anyway (command_paths.py). The user's own `[permissions]`
rules (rules.py) are not limited by this: they say what they say.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass

EXACT_MARK = "exactly="  # a remembered exact command, as opposed to a prefix

_SUBCOMMAND = re.compile(r"[A-Za-z][A-Za-z0-9_.:-]*")
_RUNNERS = frozenset(
    {
        "eval", "source", ".", "exec", "command", "builtin", "env", "sudo", "doas", "su", "runuser",
        "pkexec", "nohup", "timeout", "nice", "ionice", "time", "stdbuf", "setsid", "chrt", "taskset",
        "unbuffer", "watch", "flock", "chroot", "xargs", "parallel", "script", "busybox", "strace",
        "ltrace", "gdb", "valgrind",
    }
)  # fmt: skip
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh"})
# (short option letters, long options) that take code to run, per interpreter
_INLINE = {
    "python": ("c", ()), "node": ("ep", ("--eval", "--print")), "bun": ("ep", ("--eval", "--print")),
    "perl": ("eE", ()), "ruby": ("e", ()), "php": ("r", ()), "lua": ("e", ()), "osascript": ("e", ()),
}  # fmt: skip
_FIND_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprintf", "-fprint0", "-fls"})
_GIT_CODE_OPTIONS = ("-c", "--config-env", "--exec-path")
_OPERAND_PROGRAMS = frozenset(
    {
        "rm", "rmdir", "unlink", "shred", "mv", "cp", "ln", "install", "dd", "truncate", "chmod",
        "chown", "chgrp", "chattr", "setfacl", "kill", "pkill", "killall", "curl", "wget", "scp",
        "sftp", "rsync", "ssh", "nc", "ncat", "netcat", "socat", "telnet", "ftp", "tee", "mkfifo",
        "mknod", "tar", "zip", "unzip", "7z", "open", "xdg-open", "crontab", "at",
    }
)  # fmt: skip
_SUBCOMMAND_PROGRAMS = frozenset(
    {
        "git", "npm", "pnpm", "yarn", "bun", "cargo", "go", "docker", "podman", "kubectl", "helm", "gh",
        "pip", "pip3", "uv", "poetry", "pipx", "conda", "systemctl", "apt", "apt-get", "dnf", "brew",
        "terraform", "aws", "gcloud", "az", "make", "dotnet", "mvn", "gradle",
    }
)  # fmt: skip


@dataclass(frozen=True)
class CommandKey:
    """What approving one simple command for the session remembers."""

    words: tuple[str, ...]
    exact: bool

    @property
    def entry(self) -> str:
        """The value kept in `state.json` after the action (`run command:<entry>`)."""
        return EXACT_MARK + shlex.join(self.words) if self.exact else " ".join(self.words)

    @property
    def label(self) -> str:
        return f"`{shlex.join(self.words)}`" if self.exact else f"`{' '.join(self.words)} …`"


def program(words: tuple[str, ...]) -> str:
    return os.path.basename(words[0]) if words else ""


def runs_anything(words: tuple[str, ...]) -> bool:
    """Whether the command runs whatever its arguments say (see the module docstring)."""
    name = program(words)
    if name in _RUNNERS:
        return True
    options = _leading_options(words)
    if name in _SHELLS:
        return _has_option(options, "c", ("--command",))
    interpreter = _interpreter(name)
    if interpreter is not None:
        letters, long_options = _INLINE[interpreter]
        return _has_option(options, letters, long_options)
    if name == "deno":
        return len(words) > 1 and words[1] == "eval"
    if name == "find":
        return any(word in _FIND_ACTIONS for word in words)
    if name == "git":
        return any(option.startswith(_GIT_CODE_OPTIONS) for option in options)
    return False


def session_key(words: tuple[str, ...]) -> CommandKey:
    """What approving `words` for the session remembers (see the module docstring)."""
    name = program(words)
    if _interpreter(name) == "python" and len(words) >= 3 and words[1] == "-m":
        return CommandKey(words[:3], exact=False)
    if name in _OPERAND_PROGRAMS:
        return CommandKey(words, exact=True)
    if len(words) == 1:
        return CommandKey(words, exact=False)
    if _SUBCOMMAND.fullmatch(words[1]) and "/" not in words[1]:
        return CommandKey(words[:2], exact=False)
    if name in _SUBCOMMAND_PROGRAMS:
        return CommandKey(words, exact=True)
    return CommandKey(words[:1], exact=False)


def covered(words: tuple[str, ...], entries: Iterable[str]) -> bool:
    """Whether the remembered `entries` (of one action) cover the simple command `words`: an
    exact entry equal to it, or, when it is not one to remember exactly, a prefix of it. (So an
    earlier version's `rm` or `git` prefix covers no `rm -rf x`, no `git -C x push`.)"""
    if not words or runs_anything(words):
        return False
    exact = session_key(words).exact
    for entry in entries:
        if entry.startswith(EXACT_MARK):
            try:
                if tuple(shlex.split(entry[len(EXACT_MARK) :])) == words:
                    return True
            except ValueError:
                continue
        elif not exact and starts_with(words, tuple(entry.split(" "))):
            return True
    return False


def starts_with(words: tuple[str, ...], prefix: tuple[str, ...]) -> bool:
    return bool(prefix) and words[: len(prefix)] == prefix


def _interpreter(name: str) -> str | None:
    """`python3.12` → `python`; `nodejs` → `node`; None for anything else."""
    base = re.sub(r"[0-9.]+$", "", name)
    base = {"nodejs": "node", "pypy": "python", "luajit": "lua"}.get(base, base)
    return base if base in _INLINE else None


def _leading_options(words: tuple[str, ...]) -> list[str]:
    """The option words before the first operand (a script, a subcommand)."""
    options = []
    for word in words[1:]:
        if not word.startswith("-") or word == "-":
            break
        options.append(word)
    return options


def _has_option(options: list[str], letters: str, long_options: tuple[str, ...]) -> bool:
    for option in options:
        if option.startswith("--"):
            if option.split("=", 1)[0] in long_options:
                return True
        elif any(letter in option[1:] for letter in letters):
            return True
    return False
