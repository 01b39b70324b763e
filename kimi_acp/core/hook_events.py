"""The hook event names, alone in a module: the early Wire `initialize` answer lists them before
anything else is loaded (a dataclass costs more to import than this whole file)."""

# The events of Kimi Code CLI's `[[hooks]]` (config.py validates the same names).
HOOK_EVENTS: tuple[str, ...] = (
    "PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "Stop", "StopFailure",
    "SessionStart", "SessionEnd", "SubagentStart", "SubagentStop", "PreCompact", "PostCompact",
    "Notification",
)  # fmt: skip
