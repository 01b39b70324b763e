"""The OS sandbox Shell commands run in (docs/security.md, "The sandbox").

A session's mode (`[sandbox] mode`, `--sandbox`, `/sandbox`, the IDE's picker) is `off`,
`workspace-write` or `read-only`. With a mode on and a sandbox on this machine, Shell commands
(foreground and background) run without asking inside it, and so do edits inside the workspace;
the model may ask to run one outside, which asks the user. Without one, the session says so once
and asks as before: never silently unsandboxed.

- `policy.py`: what a command may do (writable dirs, the private temp dir, what is hidden, what
  stays read-only, the network): one policy, whatever enforces it.
- `bubblewrap.py` (Linux, `bwrap`), `landlock.py` + `landlock_run.py` (Linux without bwrap: a tiny
  launcher restricts itself, then execs the shell), `seatbelt.py` (macOS `sandbox-exec` profile).
- `detect.py`: which of them this machine has, found once per process.
- `session.py`: one session's sandbox (its mode, its temp dir, the notes and the one-time notice);
  it hands the Kaos a `kaos.base.CommandSandbox` for each command.

At start-up only `session.py` is imported (a session's mode is read when it opens): the policy and
the probe load when a mode is on; `landlock_run.py` imports nothing of the package at all.
"""

from typing import Literal

# The modes and what each means, here for the command lines' fast parsers and a session's settings
# (nothing is imported with them); config.SANDBOX_MODES is the same (tests/sandbox/test_sandbox_policy.py).
Mode = Literal["off", "workspace-write", "read-only"]
MODES: tuple[Mode, ...] = ("off", "workspace-write", "read-only")
MODE_TEXT = {
    "off": "commands run as before: each asks for approval",
    "workspace-write": "commands run unasked in a sandbox that may write only the workspace and its temp dir",
    "read-only": "commands run unasked in a sandbox that may write only its temp dir",
}
