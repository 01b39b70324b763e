"""The reference implementation for `--compare-ref`: Kimi Code CLI 1.51.0 in its own venv.

Why exactly 1.51.0: 1.52.0's bare `kimi` entry point downloads and runs an install script. The
venv is found by `--ref-venv`, else `$KIMI_REF_VENV`, else `/tmp/kimi-ref`; its `bin/kimi` must
answer `--version` with 1.51.0, or the bench stops with how to create it.

What the reference needs to talk to the bench's loopback model (read from its source and tried):
- `KIMI_SHARE_DIR` and the same `config.toml` as ours (`[models.*]`, `[providers.*]`);
  `telemetry = false` there and `KIMI_DISABLE_TELEMETRY=1`, or it posts events to its servers;
  `KIMI_CLI_NO_AUTO_UPDATE=1`;
- `_scripted_echo` reads `KIMI_SCRIPTED_ECHO_SCRIPTS` from the process environment, not from the
  provider's `env` table (`Share.env` sets both);
- its ACP server refuses `session/new` until a Kimi Code OAuth token is on disk
  (`credentials/kimi-code.json` with an `access_token`); a fake one that expires in a year and
  has no refresh token is never refreshed. `KIMI_CODE_OAUTH_HOST` points at loopback port 9
  (discard) so no OAuth call could leave the machine anyway;
- its Wire server answers only string request ids (the Wire spec's `id: string`).
On top of that the whole comparison runs in a private network namespace when it can (root and
`unshare`): loopback only, so the reference cannot reach anything but the fake model.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

VERSION = "1.51.0"
DEFAULT_VENV = "/tmp/kimi-ref"
ENV_VAR = "KIMI_REF_VENV"
NETNS_MARK = "KIMI_BENCH_NETNS"

HOW_TO = f"""Kimi Code CLI {VERSION} is needed for --compare-ref, in a Python 3.13 venv:

    ~/.pyenv/versions/3.13.*/bin/python -m venv {DEFAULT_VENV}
    {DEFAULT_VENV}/bin/pip install kimi-cli=={VERSION}

(never 1.52.0: its bare `kimi` downloads and runs an install script). Then pass
--ref-venv DIR or set ${ENV_VAR}=DIR if it is not in {DEFAULT_VENV}."""

# Its `session/new` takes ~0.3 s here (a whole CLI instance per session): 1,000 idle sessions
# would take five minutes a run, so its idle-session rows stop at 100.
MAX_SESSIONS = 100

ENV = {
    "KIMI_DISABLE_TELEMETRY": "1",
    "KIMI_CLI_NO_AUTO_UPDATE": "1",
    "KIMI_CODE_OAUTH_HOST": "http://127.0.0.1:9",
}


class ReferenceMissing(Exception):
    """The reference venv is missing or holds another version; the message says what to do."""


def locate(venv: str | None) -> Path:
    """The reference's `kimi` executable, checked to be version 1.51.0."""
    root = Path(venv or os.environ.get(ENV_VAR) or DEFAULT_VENV).expanduser()
    kimi = root / "bin" / "kimi"
    if not kimi.is_file():
        raise ReferenceMissing(f"no {kimi}.\n\n{HOW_TO}")
    try:
        out = subprocess.run(
            [str(kimi), "--version"], capture_output=True, text=True, timeout=60, env=_clean_env()
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ReferenceMissing(f"{kimi} --version failed: {exc}\n\n{HOW_TO}") from None
    text = (out.stdout + out.stderr).strip()
    if out.returncode != 0 or not text.endswith(VERSION):
        raise ReferenceMissing(f"{kimi} --version says {text[:200]!r}, expected {VERSION}.\n\n{HOW_TO}")
    return kimi


def _clean_env() -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("KIMI_")}, **ENV}


def prepare_share(share_dir: Path) -> None:
    """What the reference's ACP server insists on before `session/new`: a Kimi Code token file."""
    credentials = share_dir / "credentials"
    credentials.mkdir(mode=0o700, exist_ok=True)
    token = {
        "access_token": "bench-not-a-real-token",
        "refresh_token": "",
        "expires_at": time.time() + 365 * 86400,
        "scope": "",
        "token_type": "Bearer",
        "expires_in": 365 * 86400,
    }
    path = credentials / "kimi-code.json"
    path.write_text(json.dumps(token), encoding="utf-8")
    path.chmod(0o600)


def reexec_in_netns(argv: list[str]) -> int | None:
    """Run the bench again inside a private network namespace (loopback up, nothing else).

    Returns the child's exit status, or None when that is not possible here (not root, no
    `unshare`/`ip`, or already inside one): the caller then goes on without isolation.
    """
    if os.environ.get(NETNS_MARK) or os.geteuid() != 0:
        return None
    unshare, ip = shutil.which("unshare"), shutil.which("ip")
    if not unshare or not ip:
        return None
    probe = subprocess.run([unshare, "--net", ip, "link", "set", "lo", "up"], capture_output=True)
    if probe.returncode != 0:
        return None
    script = 'ip link set lo up && exec "$@"'
    cmd = [unshare, "--net", "sh", "-c", script, "sh", sys.executable, "-m", "bench", *argv]
    env = {**os.environ, NETNS_MARK: "1"}
    try:
        return subprocess.call(cmd, env=env)
    except KeyboardInterrupt:
        return 130
