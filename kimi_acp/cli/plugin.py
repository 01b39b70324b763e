"""`kimi plugin install | list | info | remove`: Kimi Code CLI's plugin commands, on the same directory."""

from __future__ import annotations

import asyncio
import sys

import click

from ..plugins.paths import plugins_dir
from ..plugins.spec import PLUGIN_JSON, PluginError, installed_plugins, parse_plugin_json


def build_plugin_group() -> click.Group:
    """The `plugin` click group; `kimi_acp/cli/main.py` registers it as `kimi plugin`."""

    @click.group(name="plugin", help="Manage plugins in $KIMI_SHARE_DIR/plugins (the ones Kimi Code CLI installs).")
    def plugin() -> None:
        pass

    @plugin.command("install", help="Install a plugin from a directory, a .zip file or URL, or a git URL.")
    @click.argument("target")
    def install_cmd(target: str) -> None:
        from ..plugins.install import install

        values = _host_values()
        if "api_key" not in values:
            click.echo("Warning: no model with an API key is configured; plugins that need one will fail. "
                       "Run `kimi login` first.", err=True)
        try:
            spec = install(target, values, say=click.echo)
        except (PluginError, OSError) as exc:
            _fail(str(exc))
        click.echo(f"Installed plugin '{spec.name}' v{spec.version}")
        for tool in spec.tools:
            click.echo(f"  tool: {tool.name}")

    @plugin.command("list", help="List the installed plugins.")
    def list_cmd() -> None:
        specs = installed_plugins()
        if not specs:
            click.echo("No plugins installed.")
            return
        for spec in specs:
            status = "installed" if spec.runtime else "not configured"
            click.echo(f"  {spec.name} v{spec.version} ({status})")

    @plugin.command("info", help="Show an installed plugin.")
    @click.argument("name")
    def info_cmd(name: str) -> None:
        path = plugins_dir() / name / PLUGIN_JSON
        if not path.is_file():
            _fail(f"plugin '{name}' is not installed")
        try:
            spec = parse_plugin_json(path)
        except PluginError as exc:
            _fail(str(exc))
        click.echo(f"Name:        {spec.name}")
        click.echo(f"Version:     {spec.version}")
        click.echo(f"Description: {spec.description or '(none)'}")
        if spec.runtime:
            click.echo(f"Runtime:     host={spec.runtime.get('host')}, version={spec.runtime.get('host_version')}")
        for tool in spec.tools:
            click.echo(f"Tool:        {tool.name}: {tool.description}")

    @plugin.command("remove", help="Remove an installed plugin.")
    @click.argument("name")
    def remove_cmd(name: str) -> None:
        from ..plugins.install import remove

        try:
            remove(name)
        except (PluginError, OSError) as exc:
            _fail(str(exc))
        click.echo(f"Removed plugin '{name}'")

    return plugin


def _host_values() -> dict[str, str]:
    from ..config import load_config
    from ..errors import ConfigError
    from ..plugins.host import host_values

    try:
        config = load_config().config
    except ConfigError as exc:
        click.echo(f"Warning: the config does not load ({exc}); nothing is injected.", err=True)
        return {}
    return asyncio.run(host_values(config))


def _fail(message: str) -> None:
    click.echo(f"kimi: error: {message}", err=True)
    sys.exit(1)
