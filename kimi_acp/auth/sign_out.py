"""Signing out of the Kimi account: its tokens and its config entries go (`kimi logout`, ACP `logout`)."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path

from ..config import default_config_path
from ..config_edit import read_existing_config, write_checked
from ..errors import ConfigError


@dataclass(frozen=True)
class SignOutResult:
    removed_login: bool
    config_note: str  # what happened to config.toml, in words ("" when nothing to say)


def edit_config_without_account(text: str) -> str | None:
    """The config without the account's entries; None when there are none."""
    import tomlkit

    from . import kimi_code

    doc = tomlkit.parse(text)
    changed = False
    providers = doc.get("providers")
    if isinstance(providers, MutableMapping) and kimi_code.PROVIDER_KEY in providers:
        del providers[kimi_code.PROVIDER_KEY]
        changed = True
    models = doc.get("models")
    removed: set[str] = set()
    if isinstance(models, MutableMapping):
        removed = {k for k, v in models.items() if isinstance(v, Mapping) and v.get("provider") == kimi_code.PROVIDER_KEY}
        for key in removed:
            del models[key]
        changed |= bool(removed)
    if str(doc.get("default_model", "")) in removed:
        doc["default_model"] = ""
    services = doc.get("services")
    if isinstance(services, MutableMapping):
        for name in ("moonshot_search", "moonshot_fetch"):
            entry = services.get(name)
            oauth = entry.get("oauth") if isinstance(entry, Mapping) else None
            if isinstance(oauth, Mapping) and oauth.get("key") == kimi_code.OAUTH_KEY:
                del services[name]
                changed = True
    return tomlkit.dumps(doc) if changed else None


def sign_out(path: Path | None = None) -> SignOutResult:
    """Delete the Kimi account's tokens (file and keyring) and its config entries.

    The service documents no revocation endpoint, so the tokens are forgotten locally; the
    refresh token then can never be used. A config that does not load is left alone (the
    tokens are deleted all the same)."""
    from . import kimi_code
    from .tokens import delete_token

    removed = delete_token(kimi_code.OAUTH_KEY)
    path = path or default_config_path()
    note = ""
    try:
        text = read_existing_config(path)
        new_text = edit_config_without_account(text) if text is not None else None
        if new_text is not None:
            write_checked(path, new_text, None)
            note = f"removed the Kimi account's models from {path}"
    except ConfigError as exc:
        note = f"{path} was not changed: {exc}"
    except Exception as exc:  # tomlkit errors: the tokens are gone, say what was not done
        note = f"{path} was not changed ({type(exc).__name__}); remove the managed:kimi-code entries by hand"
    return SignOutResult(removed, note)
