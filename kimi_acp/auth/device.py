"""The device headers (`X-Msh-*`) the Kimi service expects on OAuth and model requests.

The device id is a random hex UUID kept in `$KIMI_SHARE_DIR/device_id` (0600), the file Kimi
Code CLI uses, so both programs present the same device. Header values must be ASCII, so a host
name with other characters is stripped to its ASCII part.
"""

from __future__ import annotations

import functools
import platform
import socket
import uuid

from ..util.fs import atomic_write_text
from ..util.share_dir import share_dir

PLATFORM_NAME = "kimi_cli"  # the client family the service knows; we are a drop-in for it


def device_id() -> str:
    path = share_dir() / "device_id"
    try:
        existing = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        existing = ""
    if existing:
        return existing
    new = uuid.uuid4().hex
    try:
        atomic_write_text(path, new)  # 0600, in a share dir made 0700 if this is its first file
    except OSError:
        pass  # a read-only home: a per-process id still lets requests through
    return new


def _ascii(value: str, fallback: str = "unknown") -> str:
    cleaned = value.encode("ascii", "ignore").decode("ascii").strip()
    cleaned = "".join(c for c in cleaned if c.isprintable())
    return cleaned or fallback


def _device_model() -> str:
    system = platform.system()
    arch = platform.machine()
    if system == "Darwin":
        release = platform.mac_ver()[0] or platform.release()
        return " ".join(p for p in ("macOS", release, arch) if p)
    return " ".join(p for p in (system or "Unknown", platform.release(), arch) if p)


@functools.cache
def _static_headers() -> tuple[tuple[str, str], ...]:
    from .._version import __version__

    values = {
        "X-Msh-Platform": PLATFORM_NAME,
        "X-Msh-Version": __version__,
        "X-Msh-Device-Name": platform.node() or socket.gethostname(),
        "X-Msh-Device-Model": _device_model(),
        "X-Msh-Os-Version": platform.version(),
    }
    return tuple((k, _ascii(v)) for k, v in values.items())


def device_headers() -> dict[str, str]:
    headers = dict(_static_headers())
    headers["X-Msh-Device-Id"] = _ascii(device_id())
    return headers
