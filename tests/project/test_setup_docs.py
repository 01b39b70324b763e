"""The first-try path of the README and the IDE examples: the steps a new user copies must work as
written (PEP 668 systems, IDEs that do not search the shell's PATH, tests after their install)."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def code_blocks(markdown: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", markdown, flags=re.DOTALL)


def test_ide_examples_use_an_absolute_command() -> None:
    for name in ("zed-settings.example.json", "jetbrains-acp.example.json"):
        server = json.loads((ROOT / name).read_text())["agent_servers"]["Kimi"]
        assert server["command"].startswith("/"), name  # a bare `kimi` is not found for venv/pipx installs
        assert server["args"] == ["acp"]


def test_acp_doc_shows_the_zed_example_file_verbatim() -> None:
    example = json.loads((ROOT / "zed-settings.example.json").read_text())
    shown = [json.loads(block) for block in code_blocks((ROOT / "docs/acp.md").read_text(), "json")]
    assert example in shown


def test_readme_install_works_on_externally_managed_pythons() -> None:
    blocks = code_blocks((ROOT / "README.md").read_text(), "sh")
    shell = "\n".join(blocks)
    assert "pipx install ." in shell and "uv tool install ." in shell
    assert "python3 -m venv .venv" in shell
    for block in blocks:
        lines = [line.split("#")[0].strip() for line in block.splitlines()]
        for i, command in enumerate(lines):
            if re.match(r"pip3? install", command):  # a bare pip only inside an activated venv
                assert ". .venv/bin/activate" in lines[:i], block


def test_readme_sets_up_in_two_commands_and_ci_runs_its_test_command() -> None:
    """One command installs and sets up the agent, one runs the whole suite from a fresh checkout
    (making its own virtualenv); CI runs exactly that command."""
    readme = (ROOT / "README.md").read_text()
    (setup,) = code_blocks(readme[readme.index("## Set up") : readme.index("## Install")], "sh")
    commands = [line.split("#")[0].strip() for line in setup.splitlines() if line.strip()]
    assert commands == ["pipx install . && kimi login", "scripts/test"]
    tests = readme[readme.index("## Run the tests") :]
    assert [b.strip() for b in code_blocks(tests, "sh")][0] == "scripts/test"
    script = (ROOT / "scripts" / "test").read_text()
    steps = ["python3 -m venv .venv", ". .venv/bin/activate", "pip install --quiet -e '.[dev]'", "python -m pytest \"$@\""]
    assert [script.index(step) for step in steps] == sorted(script.index(step) for step in steps)
    assert (ROOT / "scripts" / "test").stat().st_mode & 0o111  # runnable as written
    ci = [line.split("#")[0].strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert "scripts/test" in ci and not [line for line in ci if line.startswith("python -m pytest")]
    assert ci.index("scripts/test") < ci.index(". .venv/bin/activate")  # the smoke jobs run in its venv


def test_readme_says_how_to_replace_kimi_code_clis_kimi() -> None:
    """With Kimi Code CLI installed, a plain install leaves its `kimi` in place (uv refuses, pipx
    reports success): the README gives the forcing commands and how to check which `kimi` runs."""
    readme = (ROOT / "README.md").read_text()
    install = readme[readme.index("## Install") : readme.index("## Give it a model")]
    shell = "\n".join(code_blocks(install, "sh"))
    assert "pipx install --force ." in shell and "uv tool install --force ." in shell
    assert "kimi --version" in shell and "kimi-acp, version" in install
    assert "error: Executable already exists: kimi" in install
    assert re.search(r"pip(x)? install[^\n]* uv\b", install)  # how to get uv
