"""`kimi info` and `kimi sessions`: what is configured and what is stored, without secrets."""

from __future__ import annotations

import json
import sys
from typing import Any


def print_info(config_file: str | None, as_json: bool) -> int:
    from .._version import __version__
    from ..config import load_config, resolve_model
    from ..errors import ConfigError
    from ..util.share_dir import share_dir

    try:
        loaded = load_config(config_file)
    except ConfigError as exc:
        print(f"kimi: error: {exc}", file=sys.stderr)
        return 2
    config = loaded.config
    info: dict[str, Any] = {
        "version": __version__,
        "python": sys.version.split()[0],
        "share_dir": str(share_dir()),
        "config_file": str(loaded.path) if loaded.path else None,
        "default_model": config.default_model or None,
        "models": {},
        "providers": {},
    }
    # Shown as they will be used: with the KIMI_* / OPENAI_* environment overrides applied.
    for alias in config.models:
        resolved = resolve_model(config, alias)
        assert resolved is not None
        info["models"][alias] = {
            "provider": resolved.provider_name,
            "model": resolved.model.model,
            "max_context_size": resolved.model.max_context_size,
            "capabilities": sorted(resolved.capabilities),
        }
        info["providers"][resolved.provider_name] = _provider_info(resolved.provider)
    for name, provider in config.providers.items():
        info["providers"].setdefault(name, _provider_info(provider))
    from ..plugins.spec import installed_plugins

    info["plugins"] = {p.name: {"version": p.version, "tools": [t.name for t in p.tools]} for p in installed_plugins()}
    rules = config.permissions
    info["permissions"] = {"deny": rules.deny, "ask": rules.ask, "allow": rules.allow, "pass_env": rules.pass_env}
    info["sandbox"] = _sandbox_info(config)
    if as_json:
        print(json.dumps(info, indent=2))
        return 0
    print(f"kimi-acp {info['version']} (Python {info['python']})")
    print(f"share dir:     {info['share_dir']}")
    print(f"config file:   {info['config_file'] or '(from --config)'}")
    print(f"default model: {info['default_model'] or '(none: run `kimi login`)'}")
    print("models:" if info["models"] else "models:        (none)")
    for alias, m in info["models"].items():
        caps = f" [{', '.join(m['capabilities'])}]" if m["capabilities"] else ""
        print(f"  {alias}: {m['model']} via {m['provider']}, context {m['max_context_size']}{caps}")
    print("providers:" if info["providers"] else "providers:     (none)")
    for name, p in info["providers"].items():
        login = f", {p['login']}" if p.get("login") else ""
        vertex = f", {p['vertex']}" if p.get("vertex") else ""
        print(f"  {name}: type {p['type']}, base_url {p['base_url'] or '-'}, api key {p['api_key']}{login}{vertex}")
    print("plugins:" if info["plugins"] else "plugins:       (none)")
    for name, plugin in info["plugins"].items():
        print(f"  {name} {plugin['version']}: {', '.join(plugin['tools']) or 'no tools'}")
    permissions = info["permissions"]
    if not any(permissions.values()):
        print("permissions:   (no rules: every call asks as usual; `kimi help security`)")
    else:
        print("permissions (deny wins over ask, ask over allow):")
        for verdict in ("deny", "ask", "allow"):
            if permissions[verdict]:
                print(f"  {verdict}: {', '.join(permissions[verdict])}")
        if permissions["pass_env"]:
            print(f"  child processes keep: {', '.join(permissions['pass_env'])}")
    sandbox = info["sandbox"]
    network = "network allowed" if sandbox["allow_network"] else "no network"
    if sandbox["mode"] == "off":
        where = f"this machine has {sandbox['machine']}" if sandbox["machine"] else f"none on this machine: {sandbox['why_not']}"
        print(f"sandbox:       off (commands ask; [sandbox] mode, --sandbox, /sandbox turn it on; {where})")
    elif sandbox["machine"]:
        print(f"sandbox:       {sandbox['mode']} ({sandbox['machine']}, {network}); a session's /sandbox or IDE choice comes first")
    else:
        print(f"sandbox:       {sandbox['mode']} requested, but not enforced: {sandbox['why_not']} (commands ask as usual)")
    return 0


def _sandbox_info(config: Any) -> dict[str, Any]:
    """`[sandbox]` and what this machine can enforce it with (bwrap is tried once, for real)."""
    from ..sandbox.detect import machine

    found = machine()
    return {
        "mode": config.sandbox.mode,
        "allow_network": config.sandbox.allow_network,
        "machine": found.label if found.backend else None,
        "why_not": found.why_not or None,
    }


def _provider_info(provider: Any) -> dict[str, Any]:
    info = {
        "type": provider.type,
        "base_url": provider.base_url or None,
        "api_key": "set" if provider.api_key.get_secret_value() else "not set",
    }
    if provider.oauth is not None:  # a Kimi account: its state in words, never a token
        from ..auth.account import login_status

        info["login"] = login_status(provider.oauth).detail
    if provider.type == "vertexai":
        info["vertex"] = _vertex_info(provider)
    return info


def _vertex_info(provider: Any) -> str:
    """Where a Vertex AI provider's project, location and credentials come from (paths, never keys)."""
    import os

    from ..llm.vertexai import default_adc_path

    def setting(name: str) -> str:
        return (provider.env.get(name) or os.environ.get(name) or "").strip()

    if provider.api_key.get_secret_value():
        credentials = "credentials: the api key"
    elif setting("GOOGLE_APPLICATION_CREDENTIALS"):
        credentials = f"credentials: {setting('GOOGLE_APPLICATION_CREDENTIALS')} (GOOGLE_APPLICATION_CREDENTIALS)"
    elif default_adc_path().is_file():
        credentials = f"credentials: {default_adc_path()} (gcloud)"
    elif setting("GOOGLE_API_KEY"):
        credentials = "credentials: GOOGLE_API_KEY"
    else:
        credentials = "credentials: none (set api_key or GOOGLE_APPLICATION_CREDENTIALS)"
    project = setting("GOOGLE_CLOUD_PROJECT") or "(from the credentials)"
    location = setting("GOOGLE_CLOUD_LOCATION") or "(from base_url, else global)"
    return f"project {project}, location {location}, {credentials}"


def print_sessions(work_dir: str, as_json: bool) -> int:
    from .. import sessions
    from ..util.session_paths import canonical_path

    found = sessions.list_sessions(work_dir)
    rows = [
        {"id": s.id, "title": s.title(), "updated_at": sessions.iso_time(s.updated_at())} for s in found
    ]
    if as_json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    if not rows:
        print(f"No sessions for {canonical_path(work_dir)}")
        return 0
    for row in rows:
        print(f"{row['id']}  {row['updated_at']}  {row['title']}")
    return 0
