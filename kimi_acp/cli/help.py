"""`kimi help [TOPIC]`: the user docs, from the package itself.

A wheel carries them as `kimi_acp/_docs/*.md` (setup.py copies docs/ there when it builds), so an
install without a checkout (pipx, uv tool) can show them; an editable install or a checkout reads
docs/ beside the package. Messages that point somewhere name `kimi help TOPIC`, never a path that
exists only in a checkout.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
PLACES = (PACKAGE / "_docs", PACKAGE.parent / "docs")  # the wheel's copy, then a checkout's docs/
SUMMARIES = {
    "acp": "using `kimi acp` in Zed, JetBrains and other ACP clients",
    "configuration": "config.toml: providers, models, prices, environment variables, sessions",
    "security": "what runs unasked, what always asks, approvals, [permissions] rules, secrets",
    "wire": "`kimi --wire` and the Python API",
    "web": "`kimi web`, and the simple event stream",
    "mcp": "MCP servers from the IDE, mcp.json and `kimi mcp`",
    "skills": "skills, flows and agent files",
    "hooks": "[[hooks]] and Wire hook subscriptions",
    "plugins": "Kimi Code CLI's plugins and `kimi plugin`",
    "architecture": "how the code is laid out and tested",
    "performance": "the benchmark suite",
}


def docs_dir() -> Path | None:
    """Where this installation keeps its docs, or None when it has none."""
    return next((place for place in PLACES if (place / "acp.md").is_file()), None)


def topics() -> list[str]:
    found = docs_dir()
    return sorted(p.stem for p in found.glob("*.md")) if found is not None else []


def topic_text(topic: str) -> str | None:
    """The doc of `topic` (a name `topics()` lists), or None when there is no such doc."""
    found = docs_dir()
    if found is None or topic not in topics():
        return None
    return (found / f"{topic}.md").read_text(encoding="utf-8")


def topic_list() -> str:
    """What `kimi help` prints: each topic and what it covers."""
    names = topics()
    if not names:
        return "This installation has no docs (it was installed without them)."
    width = max(len(n) for n in names)
    lines = [f"  {name.ljust(width)}  {SUMMARIES.get(name, '')}".rstrip() for name in names]
    return "Usage: kimi help TOPIC\n\nTopics:\n" + "\n".join(lines)


def first_steps(*, ready: bool) -> str:
    """What a bare `kimi` says besides its usage: `kimi login` first when no model is usable yet (a
    terminal-first user types `kimi`, then looks for a `/login` that is not there)."""
    if not ready:
        return (
            "No model is set up yet. Run `kimi login` first: sign in with your Kimi account, or choose a "
            "provider, API key and model. Then add `kimi acp` to your IDE (`kimi help acp`).\n"
            "This `kimi` has no chat in the terminal: your IDE, `kimi web` or a program (`kimi --wire`) talks to it."
        )
    return (
        "This `kimi` has no chat in the terminal: add `kimi acp` to your IDE (`kimi help acp`), open "
        "`kimi web`, or drive `kimi --wire` from a program (`kimi help wire`)."
    )


def model_ready() -> bool:
    """Whether the config names a usable model (a Kimi account one: signed in)."""
    from ..config import load_config, resolve_model
    from ..errors import ConfigError

    try:
        resolved = resolve_model(load_config().config)
    except (ConfigError, OSError):
        return False
    if resolved is None or not resolved.usable:
        return False
    if resolved.provider.oauth is not None and not resolved.provider.api_key.get_secret_value():
        from ..auth.account import login_status

        return login_status(resolved.provider.oauth).signed_in
    return True
