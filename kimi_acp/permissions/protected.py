"""Paths whose change outlives the session: always asked about, with a warning.

A write to the agent's own config can add a `[[hooks]]` command or `default_yolo = true`; a line
in `~/.bashrc` runs in every new shell, a systemd user unit or an editor's start-up file later by
itself; whatever is in a `.git` decides what the next git command runs (`config`'s
`core.fsmonitor` and filters, `hooks/`, a `commondir` or a `.git` file sending git to a `config`
elsewhere), so all of git's metadata is protected: `.git` itself and anything inside one;
`~/.ssh/authorized_keys` lets someone in. So a write there is never covered by "approve for this
session", an allow rule or yolo, and is refused under `--afk`. Decided on the path as typed and on
where it really leads.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..util.share_dir import cache_dir, share_dir
from .paths import relative_within, typed_and_real

SHELL_START_FILES = frozenset(
    {
        ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile", ".zshrc",
        ".zshenv", ".zprofile", ".zlogin", ".zlogout", ".kshrc", ".cshrc", ".tcshrc", ".inputrc",
        ".config/fish/config.fish", ".config/fish/conf.d", ".config/environment.d", ".pam_environment",
        ".xprofile", ".xsessionrc",
    }
)  # fmt: skip
# What runs by itself later: at login, on a timer, or when the user opens their editor.
AUTOSTART_PATHS = frozenset(
    {
        ".config/autostart", ".config/systemd/user", ".local/share/systemd/user", "Library/LaunchAgents",
        ".vimrc", ".config/nvim", ".vim/plugin", ".emacs", ".emacs.d", ".config/emacs",
    }
)  # fmt: skip


def protected_reason(path: str | os.PathLike[str]) -> str | None:
    """Why writing `path` has lasting effects ("a shell start-up file", ...), else None."""
    for candidate in typed_and_real(path):
        reason = _reason(candidate)
        if reason is not None:
            return reason
    return None


def _reason(path: Path) -> str | None:
    if relative_within(path, share_dir()) is not None:
        return "the agent's own configuration (its hooks, approvals and keys live there)"
    if relative_within(path, cache_dir()) is not None:  # `$KIMI_CACHE_DIR` away from the share dir
        return "the agent's start-up cache: the code in it runs at every start"
    home = relative_within(path, Path.home())
    if home is not None:
        text = home.as_posix()
        if any(text == entry or text.startswith(entry + "/") for entry in SHELL_START_FILES):
            return "a shell start-up file: what it says runs in every new shell"
        if any(text == entry or text.startswith(entry + "/") for entry in AUTOSTART_PATHS):
            return "a file that runs by itself later: at login, as a service, or when you open your editor"
        if text == ".local/bin" or text.startswith(".local/bin/"):
            return "a directory on your PATH: what is put there may run instead of a command you call"
        if text == ".ssh" or text.startswith(".ssh/"):
            return "SSH keys and who may log in"
        if text == ".gitconfig" or text.startswith(".config/git/"):
            return "your git configuration: it can run programs at every git command"
    parts = tuple(part.lower() for part in path.parts)  # `.GIT` is `.git` on a case-insensitive disk
    if ".git" in parts:
        inside = parts[parts.index(".git") + 1 :]
        if inside[:1] == ("hooks",):
            return "a git hook: it runs at the next git command"
        if inside == ("config",):
            return "a repository's git configuration: it can run programs at every git command"
        return (
            "git's metadata of a repository: what is there (its config, hooks, a `commondir` or a "
            "`.git` file pointing elsewhere) decides what programs the next git command runs"
        )
    return None
