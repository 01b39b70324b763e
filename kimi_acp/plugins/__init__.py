"""Kimi Code CLI's plugins: `$KIMI_SHARE_DIR/plugins/<name>/plugin.json`, each declaring tools
that are commands (`kimi plugin install` puts them there, in either program).

Every session (root and subagents) gets the installed plugins' tools next to the built-in ones;
a tool whose name is taken is skipped with a warning, as in Kimi Code CLI. Reading the directory
is the only cost at session open (nothing when there are no plugins); a tool's JSON Schema
machinery loads at its first listing or call. `spec.py` reads plugin.json, `tool.py` runs a tool,
`install.py` installs and removes, `cli.py` is `kimi plugin`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .paths import plugins_dir

if TYPE_CHECKING:
    from ..core.agent_core import AgentCore

__all__ = ["attach", "plugins_dir"]

log = logging.getLogger(__name__)


def attach(core: AgentCore) -> int:
    """Add the installed plugins' tools to `core`'s tool set; returns how many were added."""
    if not plugins_dir().is_dir():  # the usual case: nothing else is imported
        return 0
    from .spec import installed_plugins
    from .tool import DeferredPluginTool

    added = 0
    for spec in installed_plugins():
        for tool in spec.tools:
            if core.toolset.has(tool.name):
                log.warning("plugin tool %r (from plugin %r) skipped: the name is taken", tool.name, spec.name)
                continue
            core.toolset.add(DeferredPluginTool(spec, tool, core.config))
            added += 1
    return added
