"""What a session without web or HTTP use never loads: creating the built-in tools (as every
`session/new` does) imports no httpx; the web tools load it when they run (issue #13)."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
from kimi_acp.acp import server
from kimi_acp.tools import builtin_tools
from kimi_acp.early import warm_up_core
builtin_tools()
warm_up_core()  # the tool schemas too
print(sorted(m for m in sys.modules if m == "httpx" or m.startswith(("httpx.", "httpcore"))))
"""


def test_building_the_tools_imports_no_http_stack():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
