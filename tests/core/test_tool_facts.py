"""core/tool_facts.py: every built-in tool has its facts, they agree with the tool's code, and the
table is read without importing any tool (a session's built-ins stay deferred)."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

from kimi_acp.core.tool_facts import TOOL_FACTS, UNKNOWN_TOOL, ToolFacts, tool_facts
from kimi_acp.tools import BUILTIN_TOOL_NAMES, BUILTIN_TOOLS, builtin_tools

# The calls through which a tool's code asks for approval (tools/base.py, tools/permits.py).
ASKING_CALLS = ("ctx.approve(", "permit_edit(", "permit_fetch(", "permit_read(", "_approve(")


def test_every_builtin_tool_has_its_facts_and_nothing_else_does():
    """A new tool in tools/__init__.py BUILTIN_TOOLS fails here until its row is written."""
    assert list(TOOL_FACTS) == list(BUILTIN_TOOL_NAMES)


def test_the_facts_agree_with_the_tools_code():
    for tool in builtin_tools():
        facts = TOOL_FACTS[tool.name]
        module = inspect.getmodule(type(tool))
        shared = sum(inspect.getmodule(type(t)) is module for t in builtin_tools()) > 1  # e.g. tools/tasks.py
        source = inspect.getsource(type(tool) if shared else module)
        assert facts.asks == any(call in source for call in ASKING_CALLS), tool.name
        fields = tool.params.model_fields
        for argument in (facts.subject, facts.path):
            assert argument is None or argument in fields, (tool.name, argument)


def test_a_tool_not_built_in_gets_the_defaults():
    assert tool_facts("mcp__github__create_issue") is UNKNOWN_TOOL == ToolFacts()
    assert UNKNOWN_TOOL.asks and UNKNOWN_TOOL.kind == "other" and UNKNOWN_TOOL.subject is None and UNKNOWN_TOOL.output == "text"


def test_reading_the_facts_and_mapping_acp_cards_import_no_tool():
    modules = sorted({f"kimi_acp.tools.{module}" for _, module, _ in BUILTIN_TOOLS})
    probe = (
        "import json, sys\n"
        "import kimi_acp.tools\n"  # the registry of built-ins: the probe sees what it looks for
        "from kimi_acp.core.tool_facts import tool_facts\n"
        "from kimi_acp.frontends.acp.updates import UpdateMapper\n"
        "from kimi_acp.frontends.acp.convert import result_content\n"
        "tool_facts('Shell')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('kimi_acp.tools'))))\n"
    )
    loaded = json.loads(subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout)
    assert "kimi_acp.tools" in loaded
    assert [m for m in loaded if m in modules] == []
