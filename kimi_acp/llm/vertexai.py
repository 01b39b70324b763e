"""Gemini on Vertex AI (`type = "vertexai"`): the Gemini content format (`llm/gemini.py`) at
`{base_url}/v1/projects/{project}/locations/{location}/publishers/google/models/{model}`
`:streamGenerateContent?alt=sse`.

Project and location come from the provider's `env` (`GOOGLE_CLOUD_PROJECT`, `GOOGLE_CLOUD_LOCATION`,
as Kimi Code CLI's docs show), else the process environment; the location may also be read off a
regional base URL (`https://us-central1-aiplatform.googleapis.com`), else it is `global`.

Credentials, in this order:
- the provider's `api_key` (a Vertex AI API key, "express mode": no project in the path);
- Application Default Credentials: the JSON file `GOOGLE_APPLICATION_CREDENTIALS` names (provider
  `env` first), else gcloud's `application_default_credentials.json`. A service-account key is
  exchanged at its `token_uri` for an access token with an RS256-signed JWT (signed with the
  `cryptography` package, imported here only); a user's gcloud login is refreshed with its refresh
  token. The token is refreshed five minutes before it expires, and once on a 401;
- `GOOGLE_API_KEY` from the environment when no credentials file exists.
With none of them the error says exactly what to set. Every token (and signed assertion) is
registered with `util/secrets.py`, so no log line or output ever shows it.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import re
import time
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..config import ResolvedModel
from ..util import process_state, secrets
from ..util.user_agent import user_agent
from .errors import APIConnectionError, APIStatusError, ChatProviderError
from .gemini import GeminiProvider

log = logging.getLogger(__name__)

SCOPE = "https://www.googleapis.com/auth/cloud-platform"
DEFAULT_TOKEN_URI = "https://oauth2.googleapis.com/token"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
REFRESH_MARGIN_S = 300.0  # refresh this long before the token expires
ASSERTION_LIFETIME_S = 3600
TOKEN_TIMEOUT_S = 30.0
_REGIONAL_HOST = re.compile(r"^([a-z0-9-]+?)-aiplatform\.googleapis\.com$")
_VERSIONED = re.compile(r"/v1(?:beta1)?$")


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def sign_jwt(claims: Mapping[str, Any], private_key_pem: str, key_id: str | None = None) -> str:
    """An RS256 JWT (RFC 7515 compact form) of `claims`, signed with a PEM RSA private key."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    key = serialization.load_pem_private_key(private_key_pem.encode(), password=None)
    if not isinstance(key, rsa.RSAPrivateKey):
        raise TypeError("the private_key is not an RSA key")
    header: dict[str, Any] = {"alg": "RS256", "typ": "JWT"}
    if key_id:
        header["kid"] = key_id
    signing_input = (
        _b64url(json.dumps(header, separators=(",", ":")).encode())
        + "."
        + _b64url(json.dumps(dict(claims), separators=(",", ":")).encode())
    )
    signature = key.sign(signing_input.encode("ascii"), padding.PKCS1v15(), hashes.SHA256())
    return f"{signing_input}.{_b64url(signature)}"


def default_adc_path() -> Path:
    """Where `gcloud auth application-default login` writes the user's credentials."""
    configured = os.environ.get("CLOUDSDK_CONFIG")
    if configured:
        return Path(configured) / "application_default_credentials.json"
    if os.name == "nt" and os.environ.get("APPDATA"):
        return Path(os.environ["APPDATA"]) / "gcloud" / "application_default_credentials.json"
    return Path.home() / ".config" / "gcloud" / "application_default_credentials.json"


class GoogleCredentials:
    """Application Default Credentials as an `llm.http.TokenSource`: a service account's key
    (JWT bearer grant) or a gcloud user login (refresh-token grant)."""

    def __init__(self, info: Mapping[str, Any], *, source: str, clock: Callable[[], float] = time.time) -> None:
        self.kind = str(info.get("type") or "")
        if self.kind not in ("service_account", "authorized_user"):
            raise ChatProviderError(
                f"the credentials in {source} are of type {self.kind or '(none)'!r}, which kimi-acp cannot use: "
                "set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file, or run "
                "`gcloud auth application-default login`"
            )
        if self.kind == "service_account":
            needed: tuple[str, ...] = ("client_email", "private_key")
        else:
            needed = ("client_id", "client_secret", "refresh_token")
        missing = [name for name in needed if not info.get(name)]
        if missing:
            raise ChatProviderError(f"the credentials in {source} lack {', '.join(missing)}")
        self._info = dict(info)
        self.source = source
        self.token_uri = str(info.get("token_uri") or DEFAULT_TOKEN_URI)
        self.project = str(info.get("project_id") or info.get("quota_project_id") or "")
        self._clock = clock
        self._token: str | None = None
        self._expires_at = 0.0
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()
        secrets.register(str(info.get(name) or "") for name in ("private_key", "client_secret", "refresh_token"))

    @classmethod
    def from_file(cls, path: str | Path, *, clock: Callable[[], float] = time.time) -> GoogleCredentials:
        path = Path(path).expanduser()
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ChatProviderError(
                f"the credentials file {path} does not exist (GOOGLE_APPLICATION_CREDENTIALS)"
            ) from None
        except (OSError, ValueError) as exc:
            raise ChatProviderError(f"cannot read the credentials file {path}: {exc}") from None
        if not isinstance(info, dict):
            raise ChatProviderError(f"the credentials file {path} is not a JSON object")
        return cls(info, source=str(path), clock=clock)

    def __repr__(self) -> str:
        return f"GoogleCredentials(kind={self.kind!r}, source={self.source!r})"

    def describe(self) -> str:
        who = self._info.get("client_email") if self.kind == "service_account" else "your gcloud login"
        return f"{who} ({self.source})"

    # -- the TokenSource protocol (llm/http.py)

    def access_token(self) -> str | None:
        return self._token

    def headers(self) -> dict[str, str]:
        quota = self._info.get("quota_project_id")
        return {"x-goog-user-project": str(quota)} if self.kind == "authorized_user" and quota else {}

    def expires_in(self) -> float:
        return self._expires_at - self._clock()

    async def ensure_fresh(self) -> None:
        """Before a request: a token, refreshed when less than five minutes are left."""
        if self._token is not None and self.expires_in() > REFRESH_MARGIN_S:
            return
        async with self._get_lock():
            if self._token is None or self.expires_in() <= REFRESH_MARGIN_S:
                await self._refresh()

    async def after_unauthorized(self, request_headers: Mapping[str, str]) -> bool:
        """A 401 to a request: a new token, unless another request got one meanwhile; True when a
        retry with it can help."""
        sent = request_headers.get("authorization", "").removeprefix("Bearer ")
        async with self._get_lock():
            if self._token and sent != self._token:
                return True
            old = self._token
            await self._refresh()
            return self._token != old

    def refused_error(self) -> APIStatusError:
        return APIStatusError(
            401,
            f"Vertex AI refused the access token of {self.describe()} (HTTP 401). Check that "
            "GOOGLE_APPLICATION_CREDENTIALS names a valid key of an account with access to the project.",
        )

    # -- refreshing

    def _get_lock(self) -> asyncio.Lock:
        """One lock per event loop: the credentials are shared by every session of the process
        (`find_credentials`), and the Python API may run them on more than one loop."""
        loop = asyncio.get_running_loop()
        lock = self._locks.get(loop)
        if lock is None:
            lock = self._locks[loop] = asyncio.Lock()
        return lock

    def _grant(self) -> dict[str, str]:
        if self.kind == "authorized_user":
            return {
                "grant_type": "refresh_token",
                "client_id": str(self._info["client_id"]),
                "client_secret": str(self._info["client_secret"]),
                "refresh_token": str(self._info["refresh_token"]),
            }
        now = int(self._clock())
        claims = {
            "iss": self._info["client_email"], "scope": SCOPE, "aud": self.token_uri,
            "iat": now, "exp": now + ASSERTION_LIFETIME_S,
        }
        key_id = str(self._info.get("private_key_id") or "") or None
        try:
            assertion = sign_jwt(claims, str(self._info["private_key"]), key_id)
        except (ValueError, TypeError) as exc:
            raise ChatProviderError(f"cannot sign with the private_key in {self.source}: {exc}") from None
        secrets.register([assertion])  # a bearer credential itself for an hour
        return {"grant_type": JWT_BEARER, "assertion": assertion}

    async def _refresh(self) -> None:
        import httpx

        from .http import shared_ssl_context

        data = self._grant()
        try:
            async with httpx.AsyncClient(
                timeout=TOKEN_TIMEOUT_S, verify=shared_ssl_context(), headers={"User-Agent": user_agent()}
            ) as client:
                response = await client.post(self.token_uri, data=data)
        except httpx.HTTPError as exc:
            detail = secrets.redact(str(exc) or type(exc).__name__)
            raise APIConnectionError(f"cannot reach Google's token endpoint {self.token_uri}: {detail}") from None
        try:
            payload = response.json()
        except ValueError:
            payload = {}
        payload = payload if isinstance(payload, dict) else {}
        if response.status_code >= 500 or response.status_code == 429:
            status = response.status_code
            raise APIStatusError(status, f"Google's token endpoint answered HTTP {status}")
        token = payload.get("access_token")
        if response.status_code != 200 or not isinstance(token, str) or not token:
            said = ": ".join(str(payload[k]) for k in ("error", "error_description") if payload.get(k))
            reason = secrets.redact(said or f"HTTP {response.status_code}")
            fix = (
                "run `gcloud auth application-default login` again"
                if self.kind == "authorized_user"
                else "check that GOOGLE_APPLICATION_CREDENTIALS names a current key of the service account"
            )
            raise APIStatusError(401, f"Google refused the credentials of {self.describe()} ({reason}): {fix}")
        secrets.register([token])
        try:
            lifetime = float(payload.get("expires_in") or 3600)
        except (TypeError, ValueError):
            lifetime = 3600.0
        self._token = token
        self._expires_at = self._clock() + lifetime
        log.info("got a Google access token for %s (expires in %.0f s)", self.describe(), lifetime)


def _setting(resolved: ResolvedModel, name: str) -> str:
    """A provider `env` value, else the process environment's."""
    return (resolved.provider.env.get(name) or os.environ.get(name) or "").strip()


_SHARED: dict[tuple[str, int], GoogleCredentials] = process_state.container(f"{__name__}._SHARED", {})


def find_credentials(resolved: ResolvedModel) -> GoogleCredentials | None:
    """Application Default Credentials: GOOGLE_APPLICATION_CREDENTIALS's file, else gcloud's.

    One object per file (and version of it) for the whole process, so the sessions and subagents
    on one key share its token instead of each exchanging the key for one."""
    named = _setting(resolved, "GOOGLE_APPLICATION_CREDENTIALS")
    path = Path(named).expanduser() if named else default_adc_path()
    try:
        version = path.stat().st_mtime_ns
    except OSError:
        if named:
            return GoogleCredentials.from_file(path)  # says why it cannot be read
        return None
    key = (str(path.resolve()), version)
    credentials = _SHARED.get(key)
    if credentials is None:
        credentials = _SHARED[key] = GoogleCredentials.from_file(path)
    return credentials


class VertexAIProvider(GeminiProvider):
    """Gemini's streaming on Vertex AI, with an API key or Google credentials."""

    provider_type = "vertexai"
    unauthorized_hint = "Check this provider's api_key in config.toml (a Vertex AI API key)."

    def __init__(self, *, project: str = "", location: str = "global", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.project = project
        self.location = location

    @classmethod
    def _options_from(cls, resolved: ResolvedModel) -> dict[str, Any]:
        """Project, location and credentials; ChatProviderError saying what to set when missing."""
        name = resolved.provider_name
        api_key = resolved.provider.api_key.get_secret_value()
        credentials = None if api_key else find_credentials(resolved)
        if not api_key and credentials is None:
            api_key = _setting(resolved, "GOOGLE_API_KEY")
        if not api_key and credentials is None:
            raise ChatProviderError(
                f"Vertex AI needs credentials and none were found for [providers.{name}]. Set one of: "
                f"api_key in [providers.{name}] (a Vertex AI API key); GOOGLE_APPLICATION_CREDENTIALS in "
                f"[providers.{name}] env (or the environment) to the path of a service-account key file (JSON); "
                "or run `gcloud auth application-default login`."
            )
        project = _setting(resolved, "GOOGLE_CLOUD_PROJECT") or (credentials.project if credentials else "")
        if credentials is not None and not project:
            raise ChatProviderError(
                f"Vertex AI needs a project: set GOOGLE_CLOUD_PROJECT in [providers.{name}] env "
                '(e.g. env = { GOOGLE_CLOUD_PROJECT = "my-project" })'
            )
        location = _setting(resolved, "GOOGLE_CLOUD_LOCATION") or _location_of(resolved.provider.base_url) or "global"
        options: dict[str, Any] = {
            "project": "" if api_key else project,
            "location": location,
            "base_url": resolved.provider.base_url or _default_base_url(location),
            "api_key": api_key,
        }
        if credentials is not None:
            options["token_source"] = credentials
        return options

    @classmethod
    def from_resolved(cls, resolved: ResolvedModel, **kwargs: Any) -> VertexAIProvider:
        kwargs.pop("token_source", None)  # never a Kimi account here: Google's credentials are
        return super().from_resolved(resolved, **kwargs)

    @property
    def url(self) -> str:
        root = self.base_url.rstrip("/")
        if not _VERSIONED.search(root):
            root += "/v1"
        model = self.model_name
        if model.startswith("projects/"):
            return f"{root}/{model}:streamGenerateContent?alt=sse"
        path = model if model.startswith("publishers/") else f"publishers/google/models/{model}"
        if self.project:
            path = f"projects/{self.project}/locations/{self.location}/{path}"
        return f"{root}/{path}:streamGenerateContent?alt=sse"

    def _auth_headers(self) -> dict[str, str]:
        if self._token_source is not None:
            token = self._token_source.access_token()
            return {"Authorization": f"Bearer {token}"} if token else {}
        return {"x-goog-api-key": self._static_api_key} if self._static_api_key else {}


def _location_of(base_url: str) -> str:
    from urllib.parse import urlsplit

    match = _REGIONAL_HOST.match(urlsplit(base_url).hostname or "")
    return match.group(1) if match else ""


def _default_base_url(location: str) -> str:
    if location == "global":
        return "https://aiplatform.googleapis.com"
    return f"https://{location}-aiplatform.googleapis.com"
