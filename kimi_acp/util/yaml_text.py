"""YAML from our users' files (SKILL.md front matter, agent files), with errors a person can act on.

PyYAML is imported only here and only when called: most front matter never needs it
(figures: docs/performance.md, Figures that used to live in the code).
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError


class YamlTextError(ConfigError, ValueError):
    """Invalid YAML: `problem` is the parser's one-line reason, `line` its 1-based line (if known)."""

    def __init__(self, problem: str, line: int | None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.line = line


def load_yaml(text: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise YamlTextError(problem, mark.line + 1 if mark is not None else None) from None
