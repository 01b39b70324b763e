"""Talking HTTP to a model server: the plumbing the HTTP providers (`openai_legacy`, `kimi`,
`anthropic`, `openai_responses`, `gemini`, `vertexai`) share. One lazily created
`httpx.AsyncClient` per provider, SSE reading, and the mapping of httpx failures and HTTP statuses
to `llm.errors`.

Nothing here retries: the agent core owns retries, so a provider fails fast and precisely.

(The module is `kimi_acp.llm.http`; inside it, `http` still names the standard library's package,
imports being absolute.)
"""

from __future__ import annotations

import codecs
import email.utils
import json
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextlib import aclosing
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, Protocol, Self

import httpx

from ..errors import SIGN_IN_AGAIN, SignInRequired
from ..util import process_state, secrets
from ..util.user_agent import user_agent
from .errors import APIConnectionError, APIStatusError, APITimeoutError, ChatProviderError
from .sse import SSEEvent, SSEParser
from .types import ChatStream, Message, StreamPart, ThinkingEffort, ToolSpec

if TYPE_CHECKING:
    from ..config import ResolvedModel


class TokenSource(Protocol):
    """Credentials that change while the provider lives: a Kimi account (`auth.source.
    OAuthTokenSource`) or Google's Application Default Credentials (`llm.vertexai`).

    `access_token()` is cheap and synchronous; `ensure_fresh()` runs before each request;
    `after_unauthorized()` runs once on a 401 and says whether a retry can help. A source may also
    have `refused_error()`: the error for a 401 that a fresh token did not cure.
    """

    def access_token(self) -> str | None: ...

    def headers(self) -> dict[str, str]: ...

    async def ensure_fresh(self) -> None: ...

    async def after_unauthorized(self, request_headers: Mapping[str, str]) -> bool: ...


_orjson_loads: Callable[[str], Any] | None
try:  # orjson decodes a streamed chunk faster than the json module; optional
    from orjson import loads as _orjson_loads
except ImportError:  # pragma: no cover - the json module does the same work
    _orjson_loads = None


def _loads(data: str) -> Any:
    """JSON text to a value: orjson when it can, else (and for what it refuses: NaN, ints past
    64 bits, lone surrogates) the json module, so what was accepted before still is."""
    if _orjson_loads is not None:
        try:
            return _orjson_loads(data)
        except ValueError:
            pass
    return json.loads(data)


DEFAULT_TIMEOUT = httpx.Timeout(connect=15.0, read=300.0, write=30.0, pool=30.0)
_ERROR_BODY_CHARS = 300
_MALFORMED_CHARS = 100


_SSL_CONTEXT: Any = None


def shared_ssl_context() -> Any:
    """One TLS context per process. Building one loads the CA bundle; every session's client
    would otherwise pay that again on its first request (figures: docs/performance.md, Figures
    that used to live in the code)."""
    global _SSL_CONTEXT
    if _SSL_CONTEXT is None:
        _SSL_CONTEXT = httpx.create_ssl_context()
    return _SSL_CONTEXT


process_state.variable(globals(), "_SSL_CONTEXT")  # built from this process's CA settings (SSL_CERT_FILE)


class HTTPChatProvider:
    """Base of the HTTP providers: owns the client, streams SSE events, maps failures to errors.

    A subclass supplies `build_body` (the JSON request), `url` (where it is POSTed) and
    `_generate` (the SSE events of the reply turned into stream parts).
    """

    provider_type: str = ""

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        api_key: str = "",
        custom_headers: Mapping[str, str] | None = None,
        thinking: ThinkingEffort | None = None,
        session_id: str | None = None,
        timeout: httpx.Timeout | float | None = None,
        token_source: TokenSource | None = None,
    ) -> None:
        self.model_name = model
        self.base_url = base_url.rstrip("/")
        self.thinking = thinking
        self.session_id = session_id
        self._token_source = token_source  # a Kimi account (`oauth = {...}`): see kimi_acp/auth
        self._api_key = api_key
        self._custom_headers = dict(custom_headers or {})
        if timeout is None:
            self._timeout = DEFAULT_TIMEOUT
        elif isinstance(timeout, httpx.Timeout):
            self._timeout = timeout
        else:
            self._timeout = httpx.Timeout(timeout)
        self._client: httpx.AsyncClient | None = None

    @classmethod
    def from_resolved(
        cls,
        resolved: ResolvedModel,
        *,
        thinking: ThinkingEffort | None = None,
        session_id: str | None = None,
        **kwargs: Any,
    ) -> Self:
        """A provider for a resolved model; `kwargs` go to the constructor (e.g. `timeout`)."""
        provider = resolved.provider
        options = cls._options_from(resolved)
        return cls(
            model=resolved.model.model,
            base_url=options.pop("base_url", provider.base_url),
            api_key=options.pop("api_key", provider.api_key.get_secret_value()),
            custom_headers=provider.custom_headers,
            thinking=thinking,
            session_id=session_id,
            **options,
            **kwargs,
        )

    @classmethod
    def _options_from(cls, resolved: ResolvedModel) -> dict[str, Any]:
        """Provider-specific constructor arguments taken from the resolved model's config (a
        `base_url` or `api_key` here replaces the configured one)."""
        return {}

    def __repr__(self) -> str:  # never show the key
        return f"{type(self).__name__}(model={self.model_name!r}, base_url={self.base_url!r})"

    # -- subclasses provide these

    @property
    def url(self) -> str:
        raise NotImplementedError

    def build_body(
        self, system_prompt: str, tools: Sequence[ToolSpec], history: Sequence[Message]
    ) -> dict[str, Any]:
        """The JSON request body (exposed for tests and debugging)."""
        raise NotImplementedError

    def _generate(self, chat: ChatStream, body: dict[str, Any]) -> AsyncIterator[list[StreamPart]]:
        """POST `body` to `url` and yield the reply's parts, a list per network read (see
        `_sse_batches`), filling in `chat.id`/`chat.usage`."""
        raise NotImplementedError

    @property
    def _api_key(self) -> str:
        """The key a request carries: the account's current token when the config has `oauth`."""
        if self._token_source is not None:
            return self._token_source.access_token() or self._static_api_key
        return self._static_api_key

    @_api_key.setter
    def _api_key(self, value: str) -> None:
        self._static_api_key = value

    def _auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    # What a 401 to a provider with a plain key tells the user (a token source has its own).
    unauthorized_hint = f"Check this provider's api_key in config.toml. {SIGN_IN_AGAIN}"

    def _request_headers(self) -> dict[str, str] | None:
        """Per-request headers: only an account's token changes after the client is built."""
        if self._token_source is None:
            return None
        return {**self._token_source.headers(), **self._auth_headers(), **self._custom_headers}

    # -- requests

    def stream(self, system_prompt: str, tools: Sequence[ToolSpec], history: Sequence[Message]) -> ChatStream:
        body = self.build_body(system_prompt, tools, history)
        chat = ChatStream()
        return chat.bind_batches(self._generate(chat, body))

    def _headers(self) -> dict[str, str]:
        headers = {"User-Agent": user_agent(), **self._auth_headers()}
        headers.update(self._custom_headers)
        return headers

    # -- client lifecycle

    def _get_client(self) -> httpx.AsyncClient:
        if self._client is None or self._client.is_closed:
            from .transport import client_transport

            ssl_context = shared_ssl_context()
            self._client = httpx.AsyncClient(
                timeout=self._timeout,
                headers=self._headers(),
                verify=ssl_context,
                transport=client_transport(ssl_context),  # aiohttp underneath where it can be
            )
        return self._client

    async def aclose(self) -> None:
        """Close the pooled connections; a later `stream()` opens a new client."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    # -- errors

    def _redact(self, text: str) -> str:
        """Error texts may echo request data; the key (and any other known secret) must never
        reach a message."""
        return secrets.redact(text, [self._api_key] if self._api_key else [], mark="***")

    def _status_error(self, status: int, reason: str, headers: Mapping[str, str], body: bytes) -> APIStatusError:
        """The error for an HTTP error reply. A 401 means the key was refused: `SignInRequired`,
        with the hint (Wire -32004, ACP auth_required), never retried. Providers whose servers say
        "bad key" another way (Gemini: 400 API_KEY_INVALID) map that here too."""
        error = status_error(status, reason, headers, body, redact=self._redact)
        if status == 401:
            return SignInRequired(f"{error}. {self.unauthorized_hint}")
        return error

    def _malformed(self, data: str) -> ChatProviderError:
        return ChatProviderError(self._redact(f"malformed streaming response: {data[:_MALFORMED_CHARS]}"))

    # -- streaming

    def _decode(self, data: str) -> dict[str, Any]:
        """An SSE event's data as a JSON object; anything else is a malformed response."""
        try:
            value = _loads(data)
        except ValueError:
            raise self._malformed(data) from None
        if not isinstance(value, dict):
            raise self._malformed(data)
        return value

    async def _part_batches(
        self, body: dict[str, Any], on_event: Callable[[SSEEvent, list[StreamPart]], Any], *, with_done: bool = False
    ) -> AsyncGenerator[list[StreamPart], None]:
        """The parts `on_event` makes of each network read's events, a list per read (never empty);
        the `[DONE]` event too only `with_done`. When an event is an error, the parts made before it
        are yielded first: what arrived before the error is the client's too."""
        async with aclosing(self._sse_batches(self.url, body)) as batches:
            async for events in batches:
                out: list[StreamPart] = []
                try:
                    for event in events:
                        if with_done or not event.is_done:
                            on_event(event, out)
                except ChatProviderError:
                    if out:
                        yield out
                    raise
                if out:
                    yield out

    async def _sse_batches(
        self, url: str, body: dict[str, Any], *, _reauthorized: bool = False
    ) -> AsyncGenerator[list[SSEEvent], None]:
        """POST `body` and yield the SSE events of the reply, a list per network read (never empty),
        so a provider can merge the deltas that arrived together.

        A plain JSON reply (a server that ignored `stream: true`) is yielded as one event followed
        by `[DONE]`, so callers see one shape. httpx failures become provider errors here. With a
        Kimi account, a 401 refreshes the token once and the request is sent once more.
        """
        client = self._get_client()
        if self._token_source is not None and not _reauthorized:
            await self._token_source.ensure_fresh()
        try:
            async with client.stream("POST", url, json=body, headers=self._request_headers()) as response:
                if response.status_code == 401 and self._token_source is not None:
                    await response.aread()
                    if _reauthorized or not await self._token_source.after_unauthorized(response.request.headers):
                        refused = getattr(self._token_source, "refused_error", None)
                        if refused is not None:
                            raise refused()
                        raise SignInRequired("The Kimi service refused your account's sign-in (HTTP 401)")
                    async for batch in self._sse_batches(url, body, _reauthorized=True):
                        yield batch
                    return
                if response.status_code >= 400:
                    raw = await response.aread()
                    raise self._status_error(response.status_code, response.reason_phrase, response.headers, raw)
                content_type = response.headers.get("content-type", "")
                if "application/json" in content_type and "event-stream" not in content_type:
                    raw = await response.aread()
                    yield [SSEEvent(data=raw.decode("utf-8", "replace")), SSEEvent(data="[DONE]")]
                    return
                parser = SSEParser()
                decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
                async for chunk in response.aiter_bytes():
                    events = parser.feed(decoder.decode(chunk))
                    if events:
                        yield events
                events = parser.feed(decoder.decode(b"", final=True))
                last = parser.flush()
                if last is not None:
                    events.append(last)
                if events:
                    yield events
        except httpx.TimeoutException as exc:
            raise APITimeoutError(self._redact(f"request to {url} timed out ({type(exc).__name__})")) from exc
        except httpx.UnsupportedProtocol as exc:
            raise ChatProviderError(self._redact(f"invalid base_url {self.base_url!r}: {exc}")) from exc
        except httpx.RequestError as exc:
            detail = str(exc) or type(exc).__name__
            raise APIConnectionError(self._redact(f"connection error talking to {url}: {detail}")) from exc
        except httpx.InvalidURL as exc:
            raise ChatProviderError(self._redact(f"invalid base_url {self.base_url!r}: {exc}")) from exc


def status_error(
    status: int,
    reason: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    redact: Callable[[str], str] | None = None,
) -> APIStatusError:
    """`APIStatusError` for an HTTP error reply: "<status> <reason>: <server's message>"."""
    text = body.decode("utf-8", "replace")
    detail = error_message_from_body(text) or " ".join(text.split())[:_ERROR_BODY_CHARS]
    if not reason:
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = "error"
    message = f"{status} {reason}: {detail}" if detail else f"{status} {reason}"
    if redact is not None:
        message = redact(message)
    return APIStatusError(status, message, retry_after=parse_retry_after(headers))


def error_message_from_body(text: str) -> str | None:
    """The message of `{"error": {"message": ...}}` (OpenAI, Anthropic) or similar shapes."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    error = data.get("error")
    if isinstance(error, dict):
        message = error.get("message")
        if isinstance(message, str) and message:
            return message
    if isinstance(error, str) and error:
        return error
    for key in ("message", "detail"):
        value = data.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from `retry-after-ms`, `retry-after` (seconds or an HTTP date); None otherwise."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(float(raw_ms) / 1000.0, 0.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(float(raw), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)
