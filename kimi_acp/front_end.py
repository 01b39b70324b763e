"""What the front end driving a session supports, said once when its core is built.

Each front end describes itself in one frozen `FrontEnd` and hands it to `root_core.build_root_core`
(or `AgentCore.open`): which questions it can show, whether it serves plan mode, and the modes
this process starts the session in (`--afk`, `--sandbox`, `--yolo`, `--always-ask`). The core
builds its approvals and sandbox from it, and its tools read it from their context
(`tools/base.ToolEnv`), so nothing is set on a core or a tool after it is built. Only a Wire client
may change what it can show later (its `initialize` comes when it likes): the description is then
replaced whole (`AgentCore.client_declared`), never patched field by field.

Standard library only: every layer reads it, the front ends without importing `tools/`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# What a front end can show of AskUserQuestion (tools/question.py):
# - "full": any 1-4 questions, single- or multi-select (Wire with `supports_question`, ACP with
#   form elicitation, the web page, the Python API);
# - "single_choice": one single-select question (an ACP client without forms: a permission prompt);
# - "none": the tool is not offered, and a call is told not to try again (a Wire client without
#   `supports_question`).
QuestionSupport = Literal["full", "single_choice", "none"]


@dataclass(frozen=True)
class FrontEnd:
    """What a session's front end supports, and the modes it starts the session in.

    The modes are this process's only, never saved: a session's own choice (state.json) wins over
    `sandbox` and `always_ask`; `yolo` and `afk` add to the session's own (either one on is on)."""

    questions: QuestionSupport = "full"
    plan_mode: bool = True  # EnterPlanMode / ExitPlanMode are offered (a Wire client must declare it)
    afk: bool = False  # `--afk`: tool calls approved, questions dismissed
    sandbox: str | None = None  # `--sandbox MODE`: for a session that chose no mode itself
    yolo: bool | None = None  # `--yolo`; None: the config's `default_yolo`
    always_ask: bool | None = None  # `--always-ask`; None: the config's `[permissions] always_ask`


DEFAULT_FRONT_END = FrontEnd()
