"""A loopback Gemini API and Vertex AI (`...:streamGenerateContent?alt=sse`), built from google-genai's types,
and a loopback Google token endpoint for service-account keys.

Every streamed chunk is a `google.genai.types.GenerateContentResponse` dumped as the REST API sends
it (camelCase, bytes as base64, `data: <json>` + CRLF CRLF, no `[DONE]`). Every request body is
checked against the SDK's `Content` / `Tool` / `GenerateContentConfig` and its request converters
(tests/support/sdk_wire.py); a body that does not validate is answered 400, as the API would, and
its problems are kept in `problems`.

    with FakeGeminiServer(api_keys={"AIza-good"}) as server:
        server.enqueue(GeminiScript().thought("Let me see.").text("Hi", "!").stream())

`FakeGeminiServer(vertex=True)` serves Vertex AI's paths and takes `Authorization: Bearer <token>`
for the tokens its `token_endpoint()` issued (`POST /token`: a JWT bearer grant signed by the
service-account key `service_account()` made, checked with its public key).
"""

from __future__ import annotations

import base64
import json
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

from tests.support.requirements import unavailable
from tests.support.sdk_wire import gemini_request_problems

from .openai_server import ErrorReply, FakeLLMServer, RecordedRequest, Reply, Stream

SIGNATURE = base64.b64encode(b"fake-thought-signature").decode()
GENAI_NEEDED = (3, 6)


def genai_types() -> Any:
    """`google.genai.types` of a release the fakes were written against (3.6 or newer). CI's
    lowest-dependency job can only install an older one (pyproject.toml, the dev extra) and runs
    no test that uses the fakes; anywhere else an older one skips the test, or fails it in CI."""
    try:
        import google.genai
        from google.genai import types
    except ImportError:
        unavailable("google-genai is not installed (pip install -e '.[dev]')")
    release = tuple(int(part) for part in google.genai.__version__.split(".")[:2])
    if release < GENAI_NEEDED:
        unavailable(f"google-genai {google.genai.__version__} is older than the 3.6 the fakes need")
    return types


class _GenaiTypes:
    """`gt.Part` and the rest, checked and imported at first use (importing this module needs no SDK)."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # what doctest's and inspect's probing asks of any object
            raise AttributeError(name)
        return getattr(genai_types(), name)


gt = _GenaiTypes()


def chunk_bytes(response: gt.GenerateContentResponse) -> bytes:
    data = response.model_dump(mode="json", by_alias=True, exclude_none=True)
    return b"data: " + json.dumps(data, ensure_ascii=False).encode() + b"\r\n\r\n"


class GeminiScript:
    """One streamed reply: a `GenerateContentResponse` per delta, the last with finishReason and usage."""

    def __init__(self, *, response_id: str = "gemini-resp-1", model_version: str = "gemini-fake-001") -> None:
        self.response_id = response_id
        self.model_version = model_version
        self.chunks: list[list[gt.Part]] = []

    def thought(self, *pieces: str) -> GeminiScript:
        self.chunks += [[gt.Part(text=p, thought=True)] for p in pieces]
        return self

    def text(self, *pieces: str) -> GeminiScript:
        self.chunks += [[gt.Part(text=p)] for p in pieces]
        return self

    def calls(self, *calls: tuple[str, dict[str, Any]], signature: str | None = SIGNATURE, ids: bool = False) -> GeminiScript:
        """Parallel function calls in one chunk, as Gemini sends them; the first carries the signature."""
        parts = []
        for index, (name, args) in enumerate(calls):
            call = gt.FunctionCall(name=name, args=args, id=f"fc-{index}" if ids else None)
            sig = base64.b64decode(signature) if signature and index == 0 else None
            parts.append(gt.Part(function_call=call, thought_signature=sig))
        self.chunks.append(parts)
        return self

    def _response(self, parts: list[gt.Part], *, finish: str | None = None, usage: tuple[int, ...] | None = None, **extra: Any) -> gt.GenerateContentResponse:
        candidate = gt.Candidate(content=gt.Content(role="model", parts=parts), index=0, finish_reason=finish, **extra)
        metadata = None
        if usage is not None:
            prompt, candidates, *rest = usage
            cached = rest[0] if rest else None
            thoughts = rest[1] if len(rest) > 1 else None
            metadata = gt.GenerateContentResponseUsageMetadata(
                prompt_token_count=prompt,
                candidates_token_count=candidates,
                cached_content_token_count=cached,
                thoughts_token_count=thoughts,
                total_token_count=prompt + candidates + (thoughts or 0),
            )
        return gt.GenerateContentResponse(
            candidates=[candidate], usage_metadata=metadata, model_version=self.model_version, response_id=self.response_id
        )

    def stream(self, *, usage: tuple[int, ...] = (10, 5), finish: str = "STOP", **options: Any) -> Stream:
        """The chunks, the last one with `finishReason` and the usage (prompt, candidates[, cached[, thoughts]])."""
        chunks = self.chunks or [[]]
        events = [chunk_bytes(self._response(parts, usage=(usage[0], 0))) for parts in chunks[:-1]]
        events.append(chunk_bytes(self._response(chunks[-1], finish=finish, usage=usage)))
        return Stream(events, done=False, **options)

    def blocked_prompt(self, reason: str = "SAFETY") -> Stream:
        """No candidate: the prompt itself was blocked."""
        response = gt.GenerateContentResponse(
            prompt_feedback=gt.GenerateContentResponsePromptFeedback(block_reason=reason),
            usage_metadata=gt.GenerateContentResponseUsageMetadata(prompt_token_count=7, total_token_count=7),
            model_version=self.model_version,
            response_id=self.response_id,
        )
        return Stream([chunk_bytes(response)], done=False)


def text_stream(*pieces: str, usage: tuple[int, ...] = (10, 5)) -> Stream:
    return GeminiScript().text(*pieces).stream(usage=usage)


def google_error(status: int, message: str, *, status_name: str = "", details: list[dict[str, Any]] | None = None) -> ErrorReply:
    """Google's error body: `{"error": {"code", "message", "status", "details"}}`."""
    names = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
             429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}
    error: dict[str, Any] = {"code": status, "message": message, "status": status_name or names.get(status, "UNKNOWN")}
    if details:
        error["details"] = details
    return ErrorReply(status, {"error": error})


def bad_key_error() -> ErrorReply:
    """What the Gemini API answers for a wrong API key: a 400 with reason API_KEY_INVALID."""
    return google_error(
        400,
        "API key not valid. Please pass a valid API key.",
        details=[{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com"}],
    )


def rate_limited(delay_s: int = 0) -> ErrorReply:
    return google_error(
        429,
        "Resource has been exhausted (e.g. check quota).",
        details=[{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{delay_s}s"}],
    )


def model_entry(model_id: str, *, input_limit: int = 1_048_576, methods: tuple[str, ...] = ("generateContent", "countTokens")) -> dict[str, Any]:
    """One `models.list` entry as the REST API sends it, checked by the SDK's own reading of it."""
    from google.genai import models

    entry = {
        "name": f"models/{model_id}", "displayName": model_id, "inputTokenLimit": input_limit,
        "outputTokenLimit": 65_536, "supportedGenerationMethods": list(methods),
    }
    read = models._Model_from_mldev(entry)
    read.pop("tuned_model_info", None)  # the converter copies the whole entry there (`_self`)
    parsed = gt.Model.model_validate(read)
    assert parsed.input_token_limit == input_limit and parsed.supported_actions == list(methods)
    return entry


# --------------------------------------------------------------------------- service accounts


def service_account(directory: Path, token_uri: str, *, project: str = "fake-project") -> tuple[Path, Any]:
    """A new RSA key as a service-account JSON file; returns its path and the public key."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    info = {
        "type": "service_account",
        "project_id": project,
        "private_key_id": "fake-key-id-1",
        "private_key": pem.decode(),
        "client_email": f"agent@{project}.iam.gserviceaccount.com",
        "client_id": "1234567890",
        "token_uri": token_uri,
    }
    path = directory / "service-account.json"
    path.write_text(json.dumps(info))
    return path, key.public_key()


class FakeGeminiServer(FakeLLMServer):
    """FakeLLMServer answering `streamGenerateContent`, refusing bodies the SDK rejects; with
    `vertex=True`, Vertex AI's paths and a token endpoint at `/token`."""

    def __init__(self, *, vertex: bool = False, token_lifetime: int = 3600, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.vertex = vertex
        self.problems: list[str] = []
        self.public_key: Any = None  # the service account's, to check the JWTs
        self.token_lifetime = token_lifetime
        self.issued: list[str] = []  # access tokens, in order
        self.assertions: list[dict[str, Any]] = []  # the verified JWT claims
        self.refuse_grants = False
        self.user_refresh_token: str | None = None  # a gcloud user login's, for the refresh-token grant
        self._token_lock = threading.Lock()

    @property
    def token_uri(self) -> str:
        return f"{self.url}/token"

    def _record(self, request: RecordedRequest, problems: list[str] = ()) -> None:  # type: ignore[assignment]
        with self._request_seen:
            self.problems.extend(problems)
            self._requests.append(request)
            self._request_seen.notify_all()

    def _take(self, request: RecordedRequest) -> Reply:
        path = request.path.split("?", 1)[0]
        if path == "/token":
            self._record(request)
            return self._grant(request)
        problems = gemini_request_problems(request.body, vertex=self.vertex)
        if not path.endswith(":streamGenerateContent") or "alt=sse" not in request.path:
            problems.append(f"no route POST {request.path}")
        if problems:
            self._record(request, problems)
            return google_error(400, "fake server: the request does not validate: " + "; ".join(problems[:5]))
        if not self._authorized(request.headers):
            self._record(request)
            if self.vertex:
                return google_error(401, "Request had invalid authentication credentials.")
            return bad_key_error()
        return super()._take(request)

    def _answer_get(self, request: RecordedRequest) -> tuple[int, dict[str, Any]]:
        """`GET .../models` as the Gemini API answers it: `{"models": [{"name": "models/...", ...}]}`;
        a wrong key is a 400 with reason API_KEY_INVALID."""
        with self._request_seen:
            self._requests.append(request)
            self._request_seen.notify_all()
            models = list(self.models) if self.models is not None else None
        path = request.path.split("?", 1)[0].rstrip("/")
        if models is None or not path.endswith("/models"):
            return 404, {"error": {"code": 404, "message": f"no route for GET {request.path}", "status": "NOT_FOUND"}}
        if not self._authorized(request.headers):
            reply = bad_key_error()
            assert isinstance(reply.body, dict)
            return reply.status, reply.body
        data = [m if isinstance(m, dict) else model_entry(m) for m in models]
        return 200, {"models": data}

    def _authorized(self, headers: dict[str, str]) -> bool:
        bearer = headers.get("authorization", "").removeprefix("Bearer ")
        if self.vertex and (self.public_key is not None or self.user_refresh_token) and bearer:
            with self._token_lock:
                return bool(self.issued) and bearer == self.issued[-1]
        if self.api_keys is None:
            return True
        return headers.get("x-goog-api-key") in self.api_keys

    def _grant(self, request: RecordedRequest) -> Reply:
        import jwt  # PyJWT (a dependency of the mcp SDK): checks what the agent signed

        form = urllib.parse.parse_qs(request.raw_body.decode())
        if self.refuse_grants:
            return ErrorReply(400, {"error": "invalid_grant", "error_description": "Invalid JWT Signature."})
        if form.get("grant_type") == ["refresh_token"] and self.user_refresh_token:
            if form.get("refresh_token") != [self.user_refresh_token] or not form.get("client_secret"):
                return ErrorReply(400, {"error": "invalid_grant", "error_description": "Token has been expired or revoked."})
            return self._issue({"sub": "user"})
        if form.get("grant_type") != ["urn:ietf:params:oauth:grant-type:jwt-bearer"]:
            return ErrorReply(400, {"error": "unsupported_grant_type", "error_description": "Invalid grant_type."})
        try:
            claims = jwt.decode(
                form["assertion"][0], self.public_key, algorithms=["RS256"], audience=self.token_uri,
                options={"require": ["iss", "aud", "iat", "exp"]},
            )
        except (jwt.PyJWTError, KeyError) as exc:
            return ErrorReply(400, {"error": "invalid_grant", "error_description": f"Invalid JWT: {exc}"})
        if claims.get("scope") != "https://www.googleapis.com/auth/cloud-platform":
            return ErrorReply(400, {"error": "invalid_scope", "error_description": "bad scope"})
        return self._issue(claims)

    def _issue(self, claims: dict[str, Any]) -> Reply:
        with self._token_lock:
            token = f"ya29.fake-access-token-{len(self.issued) + 1}-{int(time.time() * 1000)}"
            self.issued.append(token)
            self.assertions.append(claims)
        return ErrorReply(200, {"access_token": token, "expires_in": self.token_lifetime, "token_type": "Bearer"})
