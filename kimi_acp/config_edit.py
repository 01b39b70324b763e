"""Editing the user's config.toml in place (tomlkit, keeping their comments and unknown keys), so
that the file is only ever replaced by one that loads and whose default model is usable.

Used by `kimi login` / `kimi logout` and by the ACP `logout` method (kimi_acp/auth/sign_out.py)."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Any

from .config import ConfigError, load_config, resolve_model


def table_in(doc: Any, name: str) -> Any:
    """`doc[name]`, created as a header-less super table when missing."""
    import tomlkit

    if name not in doc:
        doc.add(name, tomlkit.table(is_super_table=True))
    return doc[name]


def upsert(parent: Any, key: str, values: Mapping[str, Any]) -> Any:
    """Set `values` in `parent[key]`, updating an existing table in place; returns the table."""
    import tomlkit
    from tomlkit.items import InlineTable

    existing = parent.get(key)
    if isinstance(existing, MutableMapping):  # a tomlkit table (or inline table) is one
        for name, value in values.items():
            if existing.get(name) != value:
                existing[name] = value
        return existing
    table = tomlkit.inline_table() if isinstance(parent, InlineTable) else tomlkit.table()
    table.update(values)
    if not isinstance(table, InlineTable):
        table.add(tomlkit.nl())  # a blank line before whatever table follows
    parent[key] = table
    return parent[key]


def check_config_text(text: str, alias: str, path: Path) -> None:
    """Refuse to write a config that would not load or whose new default is not usable."""
    try:
        config = load_config(config_text=text).config
        resolved = resolve_model(config, alias)
    except ConfigError as exc:
        detail = str(exc).replace("--config", "the edited config")
        raise ConfigError(f"not writing {path}: {detail}") from None
    if resolved is None or not resolved.usable:
        raise ConfigError(f"not writing {path}: model {alias!r} would not be usable (base_url and model needed)")


def read_existing_config(path: Path) -> str | None:
    """The current text, None when there is no file; ConfigError when it does not validate."""
    if not path.exists():
        return None
    if not path.is_file():
        raise ConfigError(f"config path {path} is not a file")
    load_config(config_file=path)  # the loader's one-line message names the file and the key
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None


def write_checked(path: Path, new_text: str, alias: str | None) -> Path:
    """Check the edited text (it loads; the new default is usable) and replace the file atomically."""
    from .util.fs import atomic_write_text

    if alias is not None:
        check_config_text(new_text, alias, path)
    else:
        try:
            load_config(config_text=new_text)
        except ConfigError as exc:
            raise ConfigError(f"not writing {path}: {str(exc).replace('--config', 'the edited config')}") from None
    target = path.resolve() if path.is_symlink() else path
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    atomic_write_text(target, new_text, mode=0o600)
    return target
