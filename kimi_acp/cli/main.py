"""The `kimi` command: `kimi acp`, `kimi --wire`, `kimi web`, `kimi login`, `kimi info`, `kimi sessions`.

`kimi acp` is what IDEs start, so it bypasses click entirely (click's import is time an IDE user
would wait for; figures: docs/performance.md, Figures that used to live in the code). Everything
else goes through the click group below.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, NoReturn

from ..sandbox import MODES

LOGIN_ARGS = (["login"], ["--login"])
# `kimi login --provider NAME` (cli/login_script.py; a test keeps the two lists equal).
LOGIN_PROVIDERS = ("kimi-account", "kimi-code", "moonshot", "openai", "anthropic", "openai-responses", "gemini")

# `kimi acp --help` and `kimi-acp --help`: what the server is, and how to give it a model first.
# An IDE's terminal auth runs the configured command with `login` appended (see frontends/acp/handshake.py).
ACP_HELP = (
    "Serve the Agent Client Protocol on stdin/stdout, for Zed, JetBrains and other ACP clients. "
    "Your editor starts it (see `kimi help acp`); started on a terminal it just waits for JSON-RPC "
    "messages (Ctrl-D quits).",
    "First give it a model: run `kimi login` (the same as `kimi acp login`, which is what an IDE's "
    "\"log in\" button runs in a terminal) to sign in with your Kimi account, or to choose a provider, "
    "enter an API key and pick a model. Or set KIMI_API_KEY in the agent's environment.",
    "`kimi-acp` is the same server, for IDEs that take a command without arguments; "
    "`kimi-acp login` logs in.",
)


def main() -> None:
    argv = sys.argv[1:]
    if argv == ["acp"]:
        _serve_acp()
    if argv[:1] == ["acp"] and (sandbox := _sandbox_option(argv[1:])) is not None:
        _serve_acp(sandbox)  # `kimi acp --sandbox MODE`; anything else (a typo, --help) goes to click
    if argv[:1] == ["acp"] and argv[1:] in LOGIN_ARGS:
        _login()  # an IDE's terminal auth re-runs `kimi acp` with the method's args appended
    if "--wire" in argv:
        from ..frontends.wire.main import parse_fast, run_wire

        options = parse_fast(argv)
        if options is not None:
            sys.exit(run_wire(**options))
    _click_main()


def acp_main() -> None:
    """Entry point of `kimi-acp` (the same server as `kimi acp`)."""
    if sys.argv[1:] in LOGIN_ARGS:
        _login()
    if sys.argv[1:] in (["-h"], ["--help"]):
        import textwrap

        paragraphs = (textwrap.fill(p, 78, initial_indent="  ", subsequent_indent="  ") for p in ACP_HELP)
        print("Usage: kimi-acp [login] [--sandbox off|workspace-write|read-only]\n\n" + "\n\n".join(paragraphs))
        sys.exit(0)
    if sys.argv[1:]:
        sandbox = _sandbox_option(sys.argv[1:])
        if sandbox is None:
            fail(f"unknown arguments {' '.join(sys.argv[1:])!r} (kimi-acp [login] [--sandbox {'|'.join(MODES)}])")
        _serve_acp(sandbox)
    _serve_acp()


def _sandbox_option(args: list[str]) -> str | None:
    """The mode of `--sandbox MODE` / `--sandbox=MODE` when that is all `args` say, else None."""
    if len(args) == 2 and args[0] == "--sandbox":
        mode = args[1]
    elif len(args) == 1 and args[0].startswith("--sandbox="):
        mode = args[0].partition("=")[2]
    else:
        return None
    return mode if mode in MODES else None


def _serve_acp(sandbox: str | None = None) -> NoReturn:
    from ..frontends.acp.entry import run

    sys.exit(run(sandbox=sandbox))


def _login() -> NoReturn:
    from .login import run_login

    sys.exit(run_login())


def fail(message: str, code: int = 2) -> NoReturn:
    """A one-line error on stderr and an exit code; never a traceback."""
    print(f"kimi: error: {message}", file=sys.stderr)
    sys.exit(code)


def _click_main() -> None:
    import click

    from .._version import __version__

    @click.group(
        invoke_without_command=True,
        context_settings={"help_option_names": ["-h", "--help"]},
        help="A coding agent for IDEs (ACP) and programs (Wire), compatible with Kimi Code CLI.",
    )
    @click.version_option(__version__, "-V", "--version", prog_name="kimi-acp")
    @click.option("--wire", is_flag=True, help="Serve the Wire protocol (JSON-RPC 2.0, v1.10) on stdio.")
    @click.option("-w", "--work-dir", type=click.Path(file_okay=False), help="Working directory (default: cwd).")
    @click.option("-S", "-r", "--session", "--resume", "session_id", help="Resume (or create) this session id.")
    @click.option("-C", "--continue", "continue_last", is_flag=True, help="Continue the last session of the work dir.")
    @click.option("--config-file", type=click.Path(dir_okay=False), help="Config file (TOML, or JSON by suffix).")
    @click.option("--config", "config_text", help="Config as a JSON or TOML string (overrides the file).")
    @click.option("-m", "--model", help="Model alias from [models] (default: default_model).")
    @click.option("--thinking/--no-thinking", default=None, help="Turn the model's thinking on or off.")
    @click.option("-y", "--yolo", "--yes", "--auto-approve", "yolo", is_flag=True, help="Approve every action.")
    @click.option("--max-steps-per-turn", type=click.IntRange(min=1), help="Stop a turn after this many steps.")
    @click.option(
        "--mcp-config-file", "mcp_config_files", multiple=True, type=click.Path(dir_okay=False),
        help="MCP servers from this JSON file ({\"mcpServers\": {...}}, as mcp.json); repeatable.",
    )  # fmt: skip
    @click.option(
        "--mcp-config", "mcp_configs", multiple=True,
        help="MCP servers as a JSON string (the mcp.json format); repeatable.",
    )  # fmt: skip
    @click.option("--plan", is_flag=True, help="Start in plan mode (investigate and plan, no file changes).")
    @click.option("--afk", is_flag=True, help="Away from keyboard: approve every action, dismiss questions.")
    @click.option("--max-retries-per-step", type=click.IntRange(min=1), help="Attempts per step on retryable errors.")
    @click.option(
        "--agent-file", type=click.Path(dir_okay=False),
        help="Agent file (YAML: extend, system_prompt_path, tools, exclude_tools, ...).",
    )  # fmt: skip
    @click.option(
        "--skills-dir", "skills_dirs", multiple=True, type=click.Path(file_okay=False),
        help="Read skills from this directory instead of the project and user ones; repeatable.",
    )  # fmt: skip
    @click.option(
        "--add-dir", "add_dirs", multiple=True, type=click.Path(file_okay=False),
        help="Another directory the tools treat as part of the workspace; repeatable.",
    )  # fmt: skip
    @click.option(
        "--sandbox", type=click.Choice(MODES), default=None,
        help="Where Shell commands run, for a session that chose nothing itself (default: [sandbox] mode).",
    )  # fmt: skip
    @click.option(
        "--always-ask", is_flag=True,
        help="Ask before every command, read-only ones too (default: [permissions] always_ask; "
        "otherwise commands that only read the workspace run unasked).",
    )  # fmt: skip
    @click.pass_context
    def cli(ctx: click.Context, /, wire: bool, **options: Any) -> None:
        if ctx.invoked_subcommand is not None:
            if wire:
                fail("--wire cannot be combined with a subcommand")
            return
        if not wire:
            from .help import first_steps, model_ready

            if model_ready():
                click.echo(ctx.get_help() + "\n\n" + first_steps(ready=True))
            else:  # what to do first, before the list of commands a new user would read instead
                click.echo(first_steps(ready=False) + "\n\n" + ctx.get_help())
            return
        from ..frontends.wire.main import run_wire

        sys.exit(run_wire(**options))

    @cli.command(help="\n\n".join(ACP_HELP), short_help="Serve the Agent Client Protocol to IDEs, on stdio.")
    @click.argument("action", required=False, type=click.Choice(["login"]), metavar="[login]")
    @click.option(
        "--sandbox", type=click.Choice(MODES), default=None,
        help="Where Shell commands run, for sessions that chose nothing themselves (default: [sandbox] mode).",
    )  # fmt: skip
    def acp(action: str | None, sandbox: str | None) -> None:
        if action == "login":
            _login()
        _serve_acp(sandbox)

    @cli.command(name="help", help="Show a user doc (`kimi help acp`); without a topic, list them.")
    @click.argument("topic", required=False)
    def help_(topic: str | None) -> None:
        from .help import topic_list, topic_text, topics

        if topic is None:
            click.echo(topic_list())
            return
        text = topic_text(topic)
        if text is None:
            fail(f"no help topic {topic!r} (topics: {', '.join(topics()) or 'none installed'})")
        click.echo(text, nl=False)

    @cli.command(
        help=(
            "Sign in with your Kimi account, or set up an API-key provider and model (writes config.toml). "
            "Without options it asks; with --provider it asks nothing (for scripts). The API key is never an "
            "option: name an environment variable that holds it (--api-key-env), or pipe it in (--api-key-stdin)."
        )
    )
    @click.option("--provider", metavar="NAME", help=f"Set up without questions: {', '.join(LOGIN_PROVIDERS)}.")
    @click.option("--base-url", metavar="URL", help="The provider's base URL (default: the provider's usual one).")
    @click.option("--model", metavar="NAME", help="The model name the server knows (default: the provider's usual one).")
    @click.option("--max-context-size", type=click.IntRange(min=1), help="The model's window in tokens.")
    @click.option("--name", metavar="ALIAS", help="The model's name in config.toml (default: from the model name).")
    @click.option("--api-key-env", metavar="VAR", help="Read the API key from this environment variable.")
    @click.option("--api-key-stdin", is_flag=True, help="Read the API key from the first line of stdin.")
    @click.option("--no-check", is_flag=True, help="Save without checking the key with the provider.")
    def login(provider: str | None, no_check: bool, **options: Any) -> None:
        scripted = {k: v for k, v in options.items() if v not in (None, False)}
        if provider is None and not scripted and not no_check:
            _login()
        if provider is None:
            fail("--provider is required with the other options (kimi login --help)")
        from .login_script import Script, run_scripted_login

        sys.exit(run_scripted_login(Script(provider=provider, check=not no_check, **options)))

    @cli.command(help="Sign out of your Kimi account: delete its tokens and its entries in config.toml.")
    def logout() -> None:
        from .login_account import run_logout

        sys.exit(run_logout())

    @cli.command(help="Show version, share dir, config file, models and providers (never keys).")
    @click.option("--config-file", type=click.Path(dir_okay=False), help="Config file to describe.")
    @click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
    def info(config_file: str | None, as_json: bool) -> None:
        from .info import print_info

        sys.exit(print_info(config_file, as_json))

    @cli.command(help="List the sessions of a work dir, newest first.")
    @click.option("-w", "--work-dir", type=click.Path(file_okay=False), help="Work dir (default: cwd).")
    @click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
    def sessions(work_dir: str | None, as_json: bool) -> None:
        from .info import print_sessions

        sys.exit(print_sessions(work_dir or str(Path.cwd()), as_json))

    @cli.command(help="Serve the agent to a browser tab on this machine (needs: pip install 'kimi-acp[web]').")
    @click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
    @click.option("--port", default=0, type=click.IntRange(0, 65535), help="Port (default: a free one).")
    @click.option("-w", "--work-dir", type=click.Path(file_okay=False), help="Work dir (default: cwd).")
    @click.option("--config-file", type=click.Path(dir_okay=False), help="Config file (TOML, or JSON by suffix).")
    @click.option("--config", "config_text", help="Config as a JSON or TOML string (overrides the file).")
    @click.option("-y", "--yolo", is_flag=True, help="Approve every action.")
    @click.option("--always-ask", is_flag=True, help="Ask before every command, read-only ones too.")
    def web(**options: Any) -> None:
        from ..frontends import web as web_ui

        problem = web_ui.missing_extra()
        if problem:
            fail(problem, 1)
        sys.exit(web_ui.serve(**options))

    from .mcp import build_mcp_group
    from .plugin import build_plugin_group

    cli.add_command(build_mcp_group())
    cli.add_command(build_plugin_group())
    cli(prog_name="kimi")
