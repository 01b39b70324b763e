"""Calling one of Kimi's `[services.*]` endpoints (web search, page fetch): the headers, the POST,
and keeping the credential out of every text a person or the model may read.

Both SearchWeb and FetchURL go through `post`, so the headers of a service call are built in one
place (`service_headers`): `Authorization: Bearer <credential>`, `X-Msh-Tool-Call-Id`, our
User-Agent, then the service's `custom_headers` (which win, as in Kimi Code CLI).

The credential is the service's `api_key`, unless the service names a Kimi account (`oauth = {...}`)
and an OAuth token source is connected (`set_oauth_token_source`, the one place where the
account's tokens plug in): then it is the account's access token, with the device headers the
account service expects.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import ToolError
from ..util import process_state
from ..util import secrets as known_secrets

if TYPE_CHECKING:
    import httpx  # imported on first use: a session that never calls the service never loads it

    from ..config import OAuthRef, ServiceConfig

MAX_REPLY_BYTES = 5 * 1024 * 1024  # the most of a service's answer read
REDACTED = known_secrets.REDACTED
# Custom header names that carry credentials: their values are secrets too.
_SECRET_HEADER = known_secrets.SECRET_NAME


@dataclass(frozen=True)
class ServiceAuth:
    """What an OAuth token source gives for an account: the bearer token and extra headers."""

    token: str
    headers: Mapping[str, str] = field(default_factory=dict)  # e.g. the device's X-Msh-* headers


class AccountToken(Protocol):
    """The shape of a token source's answer: a `ServiceAuth`, or kimi_acp/auth's `AccountAuth`
    (which cannot import this module: web_service imports auth, and the graph stays acyclic)."""

    @property
    def token(self) -> str: ...

    @property
    def headers(self) -> Mapping[str, str]: ...


OAuthTokenSource = Callable[["OAuthRef"], Awaitable[AccountToken | None]]

# ---------------------------------------------------------------------------------------------
# OAUTH PLUG-IN POINT. Unset, a service with `oauth` asks kimi_acp/auth/services.py (the Kimi
# account); `set_oauth_token_source(...)` replaces that (tests). The source gets the service's
# OAuthRef and returns the account's token (refreshed as needed) or None when the user is not
# signed in (then the api_key is used, and with neither the tool says "not configured").
_oauth_token_source: OAuthTokenSource | None = None


def set_oauth_token_source(source: OAuthTokenSource | None) -> None:
    """Connect (or, with None, disconnect) the source of Kimi account tokens for services."""
    global _oauth_token_source
    _oauth_token_source = source


process_state.variable(globals(), "_oauth_token_source")


# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ServiceCredentials:
    """The headers of one service call, and the secret values in them (to redact)."""

    headers: dict[str, str]
    secrets: tuple[str, ...]

    def redact(self, text: str) -> str:
        """Without this call's credentials, nor any other secret the process knows."""
        return known_secrets.redact(text, self.secrets)


class ServiceFailure(ToolError):
    """A service call that got no usable HTTP answer. `kind`: "not_configured", "timeout" or
    "network"; the message is already redacted."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass(frozen=True)
class ServiceReply:
    status: int
    body: bytes
    content_type: str
    credentials: ServiceCredentials

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    def error_excerpt(self, limit: int = 300) -> str:
        """The start of an error body for a message, one line, credentials redacted."""
        text = " ".join(self.credentials.redact(self.text).split())
        return text if len(text) <= limit else text[:limit] + "…"


def redact(text: str, secrets: tuple[str, ...] | list[str]) -> str:
    """`text` without these values (shorter ones than 4 characters would redact ordinary words)."""
    return known_secrets.replace(text, secrets)


async def service_headers(
    service: ServiceConfig, tool_call_id: str, *, accept: str | None = None
) -> ServiceCredentials | None:
    """The headers of a call to `service` for tool call `tool_call_id`; None without a credential."""
    from ..util.user_agent import user_agent

    token = ""
    extra: Mapping[str, str] = {}
    source = _oauth_token_source
    if service.oauth is not None and source is None:
        from ..auth.services import service_auth as source  # the Kimi account (kimi_acp/auth)
    if service.oauth is not None and source is not None:
        auth = await source(service.oauth)
        if auth is not None and auth.token:
            token, extra = auth.token, auth.headers
    if not token:
        token = service.api_key.get_secret_value().strip()
    if not token:
        return None
    headers = {
        "User-Agent": user_agent(),
        "Authorization": f"Bearer {token}",
        "X-Msh-Tool-Call-Id": tool_call_id,
    }
    if accept:
        headers["Accept"] = accept
    headers.update(extra)
    headers.update(service.custom_headers)
    secrets = [token, service.api_key.get_secret_value()]
    secrets += [v for k, v in service.custom_headers.items() if _SECRET_HEADER.search(k)]
    known_secrets.register(secrets)  # an account's fresh token included: out of every later result and log line
    return ServiceCredentials(headers, tuple(s for s in secrets if s))


async def post(
    service: ServiceConfig,
    tool_call_id: str,
    payload: dict[str, Any],
    *,
    timeout: httpx.Timeout | tuple[float, float, float, float],
    accept: str | None = None,
) -> ServiceReply:
    """POST `payload` as JSON to the service's base_url; any HTTP status is a reply.

    Raises ServiceFailure when there is no credential, on a timeout, or when the service cannot be
    reached; its message never holds a credential."""
    import httpx

    from ..llm.http import shared_ssl_context

    credentials = await service_headers(service, tool_call_id, accept=accept)
    if credentials is None:
        raise ServiceFailure("not_configured", "the service has no api_key (and no signed-in Kimi account)")
    try:
        async with httpx.AsyncClient(timeout=timeout, verify=shared_ssl_context()) as client:  # no redirects: the key stays with base_url
            async with client.stream("POST", service.base_url, json=payload, headers=credentials.headers) as response:
                chunks: list[bytes] = []
                size = 0
                async for chunk in response.aiter_bytes():
                    chunks.append(chunk)
                    size += len(chunk)
                    if size > MAX_REPLY_BYTES:
                        break
                content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
                body = b"".join(chunks)[:MAX_REPLY_BYTES]
                return ServiceReply(response.status_code, body, content_type, credentials)
    except httpx.TimeoutException as exc:
        raise ServiceFailure("timeout", f"the request timed out ({type(exc).__name__})") from None
    except (httpx.HTTPError, httpx.InvalidURL, ValueError, OSError) as exc:
        raise ServiceFailure("network", credentials.redact(str(exc) or type(exc).__name__)) from None
