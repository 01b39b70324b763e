"""The token record and where it lives: `$KIMI_SHARE_DIR/credentials/<name>.json` or the OS keyring.

The file format is Kimi Code CLI's (`access_token`, `refresh_token`, `expires_at` as epoch
seconds, `scope`, `token_type`, `expires_in`), so a login made by either program works in both.
Files are replaced atomically and are 0600 in a 0700 directory: they hold secrets.

`storage = "keyring"` is read from the OS keyring when the optional `keyring` package is
installed (it is not a dependency: most users never need it, and its backends pull in D-Bus
libraries on Linux). As in Kimi Code CLI, the file is read first, and tokens read from the
keyring or refreshed are written to the file.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..config import OAuthRef
from ..util.secrets import register
from ..util.share_dir import share_dir
from .errors import KeyringUnavailable
from .kimi_code import KEYRING_SERVICE

log = logging.getLogger(__name__)

if TYPE_CHECKING:

    class _Keyring(Protocol):
        """The `keyring` module, as far as it is used here (its top-level functions)."""

        def get_password(self, service_name: str, username: str) -> str | None: ...

        def delete_password(self, service_name: str, username: str) -> None: ...


@dataclass(frozen=True)
class OAuthToken:
    access_token: str = field(repr=False)
    refresh_token: str = field(repr=False)
    expires_at: float = 0.0
    scope: str = ""
    token_type: str = "Bearer"
    expires_in: float = 0.0

    def __post_init__(self) -> None:
        """A token read, refreshed or received is known from then on: out of every tool result
        and log line (util/secrets.py), whoever holds it."""
        register([self.access_token, self.refresh_token])

    @classmethod
    def from_response(cls, data: dict[str, Any], *, now: float | None = None) -> OAuthToken:
        """A token endpoint's answer; raises ValueError when it lacks the access token."""
        access = data.get("access_token")
        if not isinstance(access, str) or not access:
            raise ValueError("the token answer has no access_token")
        try:
            expires_in = float(data.get("expires_in") or 0)
        except (TypeError, ValueError):
            expires_in = 0.0
        now = time.time() if now is None else now
        return cls(
            access_token=access,
            refresh_token=str(data.get("refresh_token") or ""),
            expires_at=now + expires_in if expires_in > 0 else 0.0,
            scope=str(data.get("scope") or ""),
            token_type=str(data.get("token_type") or "Bearer"),
            expires_in=expires_in,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OAuthToken:
        def number(key: str) -> float:
            try:
                return float(data.get(key) or 0)
            except (TypeError, ValueError):
                return 0.0

        return cls(
            access_token=str(data.get("access_token") or ""),
            refresh_token=str(data.get("refresh_token") or ""),
            expires_at=number("expires_at"),
            scope=str(data.get("scope") or ""),
            token_type=str(data.get("token_type") or ""),
            expires_in=number("expires_in"),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "access_token": self.access_token,
            "refresh_token": self.refresh_token,
            "expires_at": self.expires_at,
            "scope": self.scope,
            "token_type": self.token_type,
            "expires_in": self.expires_in,
        }


# --------------------------------------------------------------------------- paths


def _name(key: str) -> str:
    """`oauth/kimi-code` → `kimi-code` (Kimi's rule: the last path segment after `oauth/`)."""
    return key.removeprefix("oauth/").split("/")[-1] or key


def credentials_dir() -> Path:
    return share_dir() / "credentials"


def credentials_path(key: str) -> Path:
    return credentials_dir() / f"{_name(key)}.json"


def lock_path(key: str) -> Path:
    return credentials_dir() / f"{_name(key)}.lock"


def ensure_credentials_dir() -> Path:
    directory = credentials_dir()
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    return directory


# --------------------------------------------------------------------------- file


def file_signature(key: str) -> tuple[int, int] | None:
    """(mtime_ns, size) of the credentials file, None when missing: cheap change detection."""
    try:
        st = os.stat(credentials_path(key))
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def load_file(key: str) -> OAuthToken | None:
    path = credentials_path(key)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        log.warning("cannot read credentials file %s: %s", path, type(exc).__name__)
        return None
    if not isinstance(data, dict):
        log.warning("credentials file %s does not hold a JSON object", path)
        return None
    return OAuthToken.from_dict(data)


def save_file(key: str, token: OAuthToken) -> Path:
    """Write atomically (temp file, fsync, rename) with mode 0600 from the first byte."""
    from ..util.fs import atomic_write_text

    ensure_credentials_dir()
    path = credentials_path(key)
    atomic_write_text(path, json.dumps(token.to_dict(), ensure_ascii=False), mode=0o600)
    return path


def delete_file(key: str) -> bool:
    try:
        credentials_path(key).unlink()
    except FileNotFoundError:
        return False
    return True


# --------------------------------------------------------------------------- keyring


def _keyring() -> _Keyring:
    try:
        import keyring  # optional: see the module docstring
    except ImportError:
        raise KeyringUnavailable(
            'the login is stored in the OS keyring (storage = "keyring") but the Python package '
            "`keyring` is not installed; install it (pip install keyring) or run `kimi login` to "
            "store the login in a file"
        ) from None
    module: _Keyring = keyring  # untyped to mypy (an extra it does not see): the calls made on it
    return module


def load_keyring(key: str) -> OAuthToken | None:
    module = _keyring()
    try:
        raw = module.get_password(KEYRING_SERVICE, key)
    except Exception as exc:  # any backend failure means "no usable keyring"
        raise KeyringUnavailable(f"cannot read the OS keyring ({type(exc).__name__}); run `kimi login` to sign in again") from None
    if not raw:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    return OAuthToken.from_dict(data) if isinstance(data, dict) else None


def delete_keyring(key: str) -> bool:
    try:
        module = _keyring()
    except KeyringUnavailable:
        return False
    try:
        module.delete_password(KEYRING_SERVICE, key)
    except Exception:  # nothing stored, or no backend: nothing to delete
        return False
    return True


# --------------------------------------------------------------------------- by reference


def load_token(ref: OAuthRef) -> OAuthToken | None:
    """The stored token: the file first, then (storage = "keyring") the keyring, copied to the file.

    Raises KeyringUnavailable only when the keyring is the one place left to look and cannot be read.
    """
    token = load_file(ref.key)
    if token is not None or ref.storage != "keyring":
        return token
    token = load_keyring(ref.key)
    if token is not None:
        try:
            save_file(ref.key, token)  # refreshes rotate the refresh token: one place of record
        except OSError as exc:
            log.warning("cannot copy the keyring login to a file: %s", exc.strerror or type(exc).__name__)
    return token


def save_token(ref: OAuthRef, token: OAuthToken) -> Path:
    return save_file(ref.key, token)


def delete_token(key: str) -> bool:
    """Remove the login from the file and the keyring; True when something was removed."""
    removed = delete_file(key)
    return delete_keyring(key) or removed
