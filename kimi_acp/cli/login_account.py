"""`kimi login`'s first choice, the Kimi account, and `kimi logout`.

Signing in is the OAuth device flow (kimi_acp/auth): the tokens go to `credentials/kimi-code.json`
(0600) and the config gets the entries Kimi Code CLI's login writes (`[providers."managed:kimi-code"]`
with `oauth`, `[models."kimi-code/<id>"]`, `[services.moonshot_search|moonshot_fetch]`), so either
program can use the login. `kimi logout` undoes both.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from ..auth.sign_out import sign_out
from ..config import DEFAULT_CONFIG_TEXT
from ..config_edit import read_existing_config, table_in, upsert, write_checked
from ..errors import ConfigError
from .login_common import (
    EXIT_CONFIG,
    EXIT_FAILED,
    EXIT_OK,
    MAX_LISTED_MODELS,
    NEXT_STEP,
    Console,
)

SignIn = Callable[[Callable[[str], None]], Any]  # the device flow: prints, returns an OAuthToken


def edit_config_for_account(text: str | None, models: Sequence[Any], default: Any, thinking: bool) -> str:
    """The config with Kimi Code CLI's account entries: the managed provider, one model per listed
    model (replacing the provider's old ones), the default model, and the search/fetch services."""
    import tomlkit

    from ..auth import kimi_code

    doc = tomlkit.parse(DEFAULT_CONFIG_TEXT if text is None else text)
    base = kimi_code.base_url()

    def oauth_ref() -> Any:
        ref = tomlkit.inline_table()
        ref.update({"storage": "file", "key": kimi_code.OAUTH_KEY})
        return ref

    providers = table_in(doc, "providers")
    upsert(providers, kimi_code.PROVIDER_KEY, {"type": "kimi", "base_url": base, "api_key": "", "oauth": oauth_ref()})
    models_table = table_in(doc, "models")
    for key in [k for k, v in models_table.items() if isinstance(v, Mapping) and v.get("provider") == kimi_code.PROVIDER_KEY]:
        del models_table[key]
    for model in models:
        entry: dict[str, Any] = {"provider": kimi_code.PROVIDER_KEY, "model": model.id, "max_context_size": model.context}
        if model.capabilities:
            entry["capabilities"] = list(model.capabilities)
        if model.display_name:
            entry["display_name"] = model.display_name
        upsert(models_table, kimi_code.model_key(model.id), entry)
    doc["default_model"] = kimi_code.model_key(default.id)
    doc["default_thinking"] = thinking
    services = table_in(doc, "services")
    for name, suffix in (("moonshot_search", "search"), ("moonshot_fetch", "fetch")):
        upsert(services, name, {"base_url": f"{base}/{suffix}", "api_key": "", "oauth": oauth_ref()})
    return tomlkit.dumps(doc).rstrip("\n") + "\n"


def sign_in_account(console: Console, path: Path, sign_in: SignIn | None = None) -> int:
    """Device flow → token saved → models listed with it → config written; the exit code."""
    from tomlkit.exceptions import TOMLKitError

    from ..auth import kimi_code
    from ..auth.device_flow import default_model, list_models
    from ..auth.errors import OAuthError
    from ..auth.tokens import save_token
    from ..config import OAuthRef

    if sign_in is None:
        from ..auth.device_flow import sign_in as device_sign_in

        sign_in = device_sign_in
    try:
        token = sign_in(console.say)
        ref = OAuthRef(storage="file", key=kimi_code.OAUTH_KEY)
        saved = save_token(ref, token)
        console.say(f"Signed in. The login is saved in {saved}.")
        console.say(f"Checking {kimi_code.base_url()}/models ...")
        models = list_models(token.access_token)
        if not models:
            raise OAuthError("the account has no models available")
        chosen, thinking = default_model(models)
        text = read_existing_config(path)
        try:
            new_text = edit_config_for_account(text, models, chosen, thinking)
        except (TOMLKitError, ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"cannot edit {path} ({' '.join(str(exc).split())}); edit it by hand") from None
        written = write_checked(path, new_text, kimi_code.model_key(chosen.id))
    except OAuthError as exc:
        console.warn(f"kimi: error: Kimi account sign-in failed: {exc}")
        return EXIT_FAILED
    except ConfigError as exc:
        console.warn(f"kimi: error: {exc}")
        return EXIT_CONFIG
    except OSError as exc:
        console.warn(f"kimi: error: cannot write the login: {exc.strerror or exc}")
        return EXIT_FAILED
    names = ", ".join(m.id for m in models[:MAX_LISTED_MODELS])
    console.say(f"Models available: {names}")
    console.say(f"Saved {written}: model {kimi_code.model_key(chosen.id)!r} is the default.")
    console.say(NEXT_STEP)
    return EXIT_OK


def run_logout(*, out: TextIO | None = None, err: TextIO | None = None, config_path: Path | None = None) -> int:
    """`kimi logout`: 0 whether or not there was a login (the end state is the same)."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        result = sign_out(config_path)
    except OSError as exc:
        print(f"kimi: error: cannot delete the login: {exc.strerror or exc}", file=err)
        return EXIT_FAILED
    print("Signed out of your Kimi account." if result.removed_login else "No Kimi account login was stored.", file=out)
    if result.config_note:
        print(result.config_note[0].upper() + result.config_note[1:] + ".", file=out)
    return EXIT_OK
