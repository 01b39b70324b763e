"""Signing in with a Kimi account from a terminal: the OAuth device flow, then the model list.

The user opens the verification URL (we try a browser when there is a desktop), confirms the
code, and we poll the token endpoint at the interval the service asks for: `slow_down` adds five
seconds (RFC 8628 §3.5), an expired code starts over with a new one (twice at most), a refusal
in the browser ends the sign-in. The caller writes the token and the config.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from .errors import OAuthError
from .kimi_code import FALLBACK_CONTEXT, base_url
from .tokens import OAuthToken

SLOW_DOWN_STEP = 5.0
MIN_INTERVAL = 0.05  # a loopback test server may ask for sub-second polling; the real one says 5
MAX_CODES = 3


@dataclass(frozen=True)
class AccountModel:
    """One model the account may use, from `GET {base_url}/models`."""

    id: str
    context: int
    capabilities: tuple[str, ...]
    display_name: str | None = None


def desktop_available() -> bool:
    """Whether opening a browser would show a window (never a text browser in this terminal)."""
    if os.environ.get("KIMI_NO_BROWSER"):
        return False
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _open_browser(url: str) -> bool:
    if not desktop_available():
        return False
    try:
        import webbrowser

        return bool(webbrowser.open(url))
    except Exception:  # the printed URL is enough
        return False


def sign_in(
    say: Callable[[str], None],
    *,
    sleep: Callable[[float], None] = time.sleep,
    open_browser: Callable[[str], bool] = _open_browser,
    clock: Callable[[], float] = time.monotonic,
) -> OAuthToken:
    """Run the device flow until the user approves; OAuthError (one line) otherwise."""
    import httpx

    from . import oauth_client

    with httpx.Client(timeout=oauth_client.TIMEOUT) as client:
        for attempt in range(MAX_CODES):
            auth = oauth_client.request_device_authorization(client=client)
            say("")
            say("To sign in, open this page in a browser and confirm the code:")
            say(f"  {auth.verification_uri_complete}")
            say(f"  Code: {auth.user_code}")
            if open_browser(auth.verification_uri_complete):
                say("(opened in your browser)")
            interval = max(auth.interval, MIN_INTERVAL)
            deadline = clock() + auth.expires_in if auth.expires_in > 0 else None
            waiting_said = False
            while True:
                result = oauth_client.poll_device_token(auth, client=client)
                if result.outcome == "token" and result.token is not None:
                    return result.token
                if result.outcome == "denied":
                    raise OAuthError("sign-in was declined in the browser")
                if result.outcome == "expired" or (deadline is not None and clock() >= deadline):
                    if attempt + 1 < MAX_CODES:
                        say("The code expired before it was confirmed; here is a new one.")
                    break
                if result.outcome == "slow_down":
                    interval += SLOW_DOWN_STEP
                if not waiting_said:
                    say("Waiting for you to confirm in the browser (Ctrl-C cancels) ...")
                    waiting_said = True
                sleep(interval)
    raise OAuthError(f"the code expired {MAX_CODES} times without being confirmed; run `kimi login` again")


def account_capabilities(item: dict[str, object]) -> tuple[str, ...]:
    """Kimi Code CLI's rules: the service's flags, `thinking` in the id, and the kimi-k2 family."""
    model_id = str(item.get("id") or "").lower()
    caps: list[str] = []

    def add(*names: str) -> None:
        caps.extend(n for n in names if n not in caps)

    if item.get("supports_reasoning"):
        add("thinking")
    if "thinking" in model_id:
        add("thinking", "always_thinking")
    if item.get("supports_image_in"):
        add("image_in")
    if item.get("supports_video_in"):
        add("video_in")
    if model_id.startswith("kimi-k2"):
        add("thinking", "image_in", "video_in")
    return tuple(caps)


def list_models(access_token: str, *, timeout: float = 15.0) -> list[AccountModel]:
    """The models the new login may use; OAuthError when the service does not answer with a list."""
    import httpx

    from ..util.user_agent import user_agent
    from .device import device_headers

    url = f"{base_url()}/models"
    headers = {"User-Agent": user_agent(), "Authorization": f"Bearer {access_token}", **device_headers()}
    try:
        response = httpx.get(url, headers=headers, timeout=timeout)
    except httpx.HTTPError as exc:
        raise OAuthError(f"cannot list the models at {url} ({type(exc).__name__})") from None
    if response.status_code != 200:
        raise OAuthError(f"listing the models at {url} failed (HTTP {response.status_code})")
    try:
        data = response.json().get("data")
    except (ValueError, AttributeError):
        data = None
    if not isinstance(data, list):
        raise OAuthError(f"{url} did not answer with a model list")
    models: list[AccountModel] = []
    for item in data:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"].strip():
            continue
        context = item.get("context_length")
        size = context if isinstance(context, int) and not isinstance(context, bool) and context > 0 else FALLBACK_CONTEXT
        display = item.get("display_name")
        models.append(AccountModel(item["id"], size, account_capabilities(item), str(display) if display else None))
    return models


def default_model(models: list[AccountModel]) -> tuple[AccountModel, bool]:
    """The first thinking-capable model (else the first) and whether thinking is on by default."""
    chosen = next((m for m in models if "thinking" in m.capabilities), models[0])
    return chosen, "thinking" in chosen.capabilities
