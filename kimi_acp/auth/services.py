"""Kimi account tokens for `[services.*]` with `oauth` (SearchWeb, FetchURL; tools/web_service.py).

The service gets the account's access token, refreshed when close to expiry, and the device
headers; with no usable login it gets None and falls back to its `api_key`, as in Kimi Code CLI.
The answer has the shape of `tools.web_service.ServiceAuth` (`token`, `headers`) without
importing it: web_service imports this module, and the graph must stay acyclic.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import RefreshUnavailable, SignInRequired
from .source import OAuthTokenSource

if TYPE_CHECKING:
    from ..config import OAuthRef

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AccountAuth:
    token: str = field(repr=False)
    headers: Mapping[str, str] = field(default_factory=dict)


async def service_auth(ref: OAuthRef) -> AccountAuth | None:
    source = OAuthTokenSource(ref)
    try:
        await source.ensure_fresh()
    except SignInRequired as exc:
        log.info("web service: the Kimi account cannot be used (%s)", exc)
        return None
    except RefreshUnavailable as exc:
        log.warning("web service: %s", exc)
    token = source.access_token()
    return AccountAuth(token, source.headers()) if token else None
