"""OAuth tokens of MCP servers, in the files Kimi Code CLI keeps them in, so a login carries over.

Kimi Code CLI (through fastmcp and py-key-value's file-tree store) keeps them under
`$KIMI_SHARE_DIR/mcp-oauth/`: one directory per collection (`mcp-oauth-token`,
`mcp-oauth-client-info`, `mcp-oauth-token-expiry`), each with a `<dir>-info.json` beside it, and
one JSON file per server URL in it, keyed `<url>/tokens`, `<url>/client_info`, `<url>/token_expiry`.
A name keeps its ASCII letters, digits and `_`; each run of other characters becomes one `_`, and a
changed name gets the prefix `S_` and the suffix `-` + the first 8 hex digits of the SHA-256 of
the original (every name we use has a `-` or `://`, so is always changed). A file is
`{"created_at": ISO, "expires_at": ISO?, "value": {...}, "version": 1}` (keys sorted); an entry
past its `expires_at` is absent. Files are written atomically with mode 0600, the directory 0700.

This module reads and writes that format itself (no SDK); the MCP SDK's models are imported only
by the methods that return them. Tokens read or written are registered for log redaction here, so
no caller can forget it.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import logging
import os
import re
import time
from pathlib import Path
from typing import Any

from ..util.fs import atomic_write_text
from ..util.secrets import register as register_secrets
from ..util.share_dir import share_dir

log = logging.getLogger(__name__)

TOKENS = "mcp-oauth-token"
CLIENT_INFO = "mcp-oauth-client-info"
TOKEN_EXPIRY = "mcp-oauth-token-expiry"
TOKEN_TTL_S = 365 * 24 * 3600  # how long a stored token entry lives (the refresh token may outlast the access token)
_UNSAFE = re.compile(r"[^A-Za-z0-9_]+")
_NAME_MAX = 255


def oauth_dir() -> Path:
    return share_dir() / "mcp-oauth"


def sanitize(value: str, max_length: int) -> str:
    """A collection or key as a file name, the way Kimi Code CLI's store names it."""
    cleaned = _UNSAFE.sub("_", value)
    if cleaned == value:
        return value[:max_length]
    digest = hashlib.sha256(value.encode()).hexdigest()[:8]
    return f"S_{cleaned[: max_length - 11]}-{digest}"


class OAuthStore:
    """The stored OAuth state of one MCP server URL (the SDK's `TokenStorage`, plus what it lacks)."""

    def __init__(self, server_url: str, directory: Path | None = None) -> None:
        self.server_url = server_url.rstrip("/")
        self.directory = directory or oauth_dir()

    # ------------------------------------------------------------------ the SDK's TokenStorage

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        value = self._get(TOKENS, "tokens")
        tokens = _validated(OAuthToken, value, self._path(TOKENS, "tokens"))
        if tokens is not None:
            register_secrets(token_secrets(tokens))  # whoever reads them, they never reach a log line
        return tokens

    async def set_tokens(self, tokens: Any) -> None:
        register_secrets(token_secrets(tokens))
        self._put(TOKENS, "tokens", tokens.model_dump(mode="json"), ttl=TOKEN_TTL_S)
        if tokens.expires_in is not None:  # absolute, so a later process knows when it ran out
            self._put(TOKEN_EXPIRY, "token_expiry", {"expires_at": time.time() + int(tokens.expires_in)}, ttl=TOKEN_TTL_S)

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        value = self._get(CLIENT_INFO, "client_info")
        return _validated(OAuthClientInformationFull, value, self._path(CLIENT_INFO, "client_info"))

    async def set_client_info(self, client_info: Any) -> None:
        expires = client_info.client_secret_expires_at
        ttl = expires - int(time.time()) if expires else None
        self._put(CLIENT_INFO, "client_info", client_info.model_dump(mode="json"), ttl=ttl)

    # ------------------------------------------------------------------ ours

    def token_expiry(self) -> float | None:
        """When the stored access token runs out (epoch seconds), if the server said."""
        value = self._get(TOKEN_EXPIRY, "token_expiry")
        try:
            return float(value["expires_at"]) if value else None
        except (KeyError, TypeError, ValueError):
            return None

    def has_tokens(self) -> bool:
        value = self._get(TOKENS, "tokens")
        return bool(value and value.get("access_token"))

    def clear(self, *, client_info: bool = True) -> bool:
        """Forget the tokens (and the client registration); whether anything was stored."""
        kinds = [(TOKENS, "tokens"), (TOKEN_EXPIRY, "token_expiry")]
        if client_info:
            kinds.append((CLIENT_INFO, "client_info"))
        removed = False
        for collection, suffix in kinds:
            with contextlib.suppress(FileNotFoundError):
                self._path(collection, suffix).unlink()
                removed = True
        return removed

    # ------------------------------------------------------------------ files

    def _collection_dir(self, collection: str) -> Path:
        return self.directory / sanitize(collection, _NAME_MAX - 10)  # room for "-info.json"

    def _path(self, collection: str, suffix: str) -> Path:
        directory = self._collection_dir(collection)
        limit = min(os.pathconf("/", "PC_PATH_MAX") - len(directory.as_posix()), _NAME_MAX - 5) if os.name != "nt" else 250
        return directory / f"{sanitize(f'{self.server_url}/{suffix}', limit)}.json"

    def _get(self, collection: str, suffix: str) -> dict[str, Any] | None:
        path = self._path(collection, suffix)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.warning("%s: unreadable (%s); ignored", path, exc)
            return None
        value = entry.get("value") if isinstance(entry, dict) else None
        if isinstance(value, str):  # the store may keep the value as a JSON string
            with contextlib.suppress(ValueError):
                value = json.loads(value)
        if not isinstance(value, dict):
            return None
        expires = entry.get("expires_at")
        if isinstance(expires, str) and _parse_time(expires) <= time.time():
            return None
        return value

    def _put(self, collection: str, suffix: str, value: dict[str, Any], *, ttl: float | None) -> None:
        directory = self._collection_dir(collection)
        self._ensure_collection(collection, directory)
        now = datetime.datetime.now(datetime.UTC)
        entry: dict[str, Any] = {"created_at": now.isoformat(), "value": value, "version": 1}
        if ttl:
            entry["expires_at"] = (now + datetime.timedelta(seconds=float(ttl))).isoformat()
        _write_private(self._path(collection, suffix), json.dumps(entry, sort_keys=True))

    def _ensure_collection(self, collection: str, directory: Path) -> None:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            self.directory.chmod(0o700)
        directory.mkdir(mode=0o700, exist_ok=True)
        info = directory.with_name(f"{directory.name}-info.json")
        if not info.exists():
            created = datetime.datetime.now(datetime.UTC).isoformat()
            document = {"collection": collection, "created_at": created, "directory": str(directory), "version": 1}
            _write_private(info, json.dumps(document, sort_keys=True))


def token_secrets(tokens: Any) -> list[str]:
    """The secret values of an `OAuthToken`, for log redaction."""
    return [v for v in (tokens.access_token, tokens.refresh_token) if v]


def _validated(model: Any, value: dict[str, Any] | None, path: Path) -> Any:
    if value is None:
        return None
    from pydantic import ValidationError

    try:
        return model.model_validate(value)
    except ValidationError as exc:
        log.warning("%s: not a valid %s (%s); ignored", path, model.__name__, exc.errors()[0]["msg"])
        return None


def _parse_time(text: str) -> float:
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        return 0.0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


def _write_private(path: Path, text: str) -> None:
    """Atomic and 0600 from the start: the file holds tokens."""
    atomic_write_text(path, text, mode=0o600)
