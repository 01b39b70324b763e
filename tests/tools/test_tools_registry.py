from __future__ import annotations

import subprocess
import sys

from kimi_acp.tools import builtin_tools


def test_order_and_specs() -> None:
    tools = builtin_tools()
    assert [t.name for t in tools] == [
        "Agent",
        "AskUserQuestion",
        "SetTodoList",
        "Shell",
        "TaskList",
        "TaskOutput",
        "TaskStop",
        "ReadFile",
        "ReadMediaFile",
        "Glob",
        "Grep",
        "WriteFile",
        "StrReplaceFile",
        "SearchWeb",
        "FetchURL",
        "ExitPlanMode",
        "EnterPlanMode",
    ]
    for tool in tools:
        spec = tool.spec()
        assert spec.description and spec.parameters["type"] == "object"
        assert "title" not in spec.parameters
    grep = next(t for t in tools if t.name == "Grep").spec().parameters["properties"]
    assert {"-A", "-B", "-C", "-n", "-i"} <= set(grep)


def test_package_import_is_cheap() -> None:
    modules = ("shell", "read", "write", "replace", "glob", "grep", "todo", "question", "plan", "fetch", "media", "search", "web_service")
    names = ", ".join(repr(f"kimi_acp.tools.{m}") for m in modules)
    code = f"import sys, kimi_acp.tools; print(any(m in sys.modules for m in ({names})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
