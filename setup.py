"""Only what pyproject.toml cannot say: the user docs (docs/*.md) go into the wheel as
`kimi_acp/_docs/`, so `kimi help TOPIC` can show them in an install that has no checkout
(pipx, uv tool). Everything else about the package is in pyproject.toml."""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DOCS = Path(__file__).resolve().parent / "docs"


class BuildWithDocs(build_py):
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "kimi_acp" / "_docs"
        target.mkdir(parents=True, exist_ok=True)
        for doc in sorted(DOCS.glob("*.md")):
            shutil.copy2(doc, target / doc.name)


setup(cmdclass={"build_py": BuildWithDocs})
