from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pydantic
import pytest

from kimi_acp.tools.base import ToolContext
from kimi_acp.tools.grep import Grep
from kimi_acp.util.globs import glob_to_regex

if TYPE_CHECKING:
    from .conftest import Call

RG = shutil.which("rg")
needs_rg = pytest.mark.requires_tool("rg")  # skipped without ripgrep, but a failure in CI (tests/conftest.py)

FILES = {
    "src/app.py": "import os\n\ndef main():\n    print('Hello')\n    return 0\n",
    "src/util.py": "def helper():\n    return 'hello world'\n",
    "src/web/index.ts": "const hello = 1;\nexport default hello;\n",
    "src/web/view.tsx": "export const View = () => <div>HELLO</div>;\n",
    "docs/guide.md": "# Guide\nSay hello.\n",
    "build/out.py": "hello = 'ignored build output'\n",
    "debug.log": "hello from log\n",
    ".hidden/secret.py": "hello = 'hidden'\n",
    ".gitignore": "build/\n*.log\n",
}


@pytest.fixture
def tree(work_dir: Path) -> Path:
    for rel, text in FILES.items():
        path = work_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (work_dir / ".git").mkdir()
    (work_dir / ".git" / "HEAD.py").write_text("hello = 'git internals'\n")
    (work_dir / "src" / "image.bin").write_bytes(b"hello\x00\x01\x02")
    return work_dir


@pytest.fixture
def grep(call: Call) -> Any:
    """Run Grep with the pure-Python fallback (ripgrep disabled)."""

    async def _grep(**arguments: Any) -> Any:
        return await call(Grep(ripgrep_path=None), **arguments)

    return _grep


async def test_files_with_matches_default(grep: Any, tree: Path) -> None:
    result = await grep(pattern="hello")
    assert not result.is_error
    assert result.output == "docs/guide.md\nsrc/util.py\nsrc/web/index.ts"
    assert result.message == "Found 3 file(s) with matches."


async def test_ignore_case(grep: Any, tree: Path) -> None:
    result = await grep(pattern="hello", **{"-i": True})
    assert result.output == "docs/guide.md\nsrc/app.py\nsrc/util.py\nsrc/web/index.ts\nsrc/web/view.tsx"


async def test_content_mode(grep: Any, tree: Path) -> None:
    result = await grep(pattern="hello", output_mode="content")
    assert result.output == (
        "docs/guide.md:2:Say hello.\n"
        "src/util.py:2:    return 'hello world'\n"
        "src/web/index.ts:1:const hello = 1;\n"
        "src/web/index.ts:2:export default hello;"
    )
    result = await grep(pattern="hello", output_mode="content", **{"-n": False}, path="src/web")
    assert result.output == "src/web/index.ts:const hello = 1;\nsrc/web/index.ts:export default hello;"


async def test_count_matches(grep: Any, tree: Path) -> None:
    (tree / "src" / "many.py").write_text("hello hello\nhello\n")
    result = await grep(pattern="hello", output_mode="count_matches", path="src")
    assert result.output == "src/many.py:3\nsrc/util.py:1\nsrc/web/index.ts:2"


async def test_context_lines(grep: Any, tree: Path) -> None:
    result = await grep(pattern="print", output_mode="content", path="src/app.py", **{"-C": 1})
    assert (
        result.output
        == "src/app.py-3-def main():\nsrc/app.py:4:    print('Hello')\nsrc/app.py-5-    return 0"
    )
    result = await grep(pattern="import|return", output_mode="content", path="src/app.py", **{"-A": 1})
    assert result.output == "src/app.py:1:import os\nsrc/app.py-2-\n--\nsrc/app.py:5:    return 0"
    result = await grep(pattern="return", output_mode="content", path="src/app.py", **{"-B": 1})
    assert result.output == "src/app.py-4-    print('Hello')\nsrc/app.py:5:    return 0"


async def test_context_separator_between_files(grep: Any, tree: Path) -> None:
    result = await grep(pattern="^def", output_mode="content", path="src", **{"-A": 0, "-B": 1})
    assert result.output == "src/app.py-2-\nsrc/app.py:3:def main():\n--\nsrc/util.py:1:def helper():"


async def test_glob_filter(grep: Any, tree: Path) -> None:
    result = await grep(pattern="hello", glob="*.{ts,tsx}", **{"-i": True})
    assert result.output == "src/web/index.ts\nsrc/web/view.tsx"
    result = await grep(pattern="hello", glob="src/*.py", **{"-i": True})
    assert result.output == "src/app.py\nsrc/util.py"
    result = await grep(pattern="hello", glob="!*.py", **{"-i": True})
    assert result.output == "docs/guide.md\nsrc/web/index.ts\nsrc/web/view.tsx"


async def test_type_filter(grep: Any, tree: Path) -> None:
    result = await grep(pattern="hello", type="ts", **{"-i": True})
    assert result.output == "src/web/index.ts\nsrc/web/view.tsx"
    result = await grep(pattern="hello", type="md")
    assert result.output == "docs/guide.md"
    result = await grep(pattern="hello", type="cobol")
    assert result.is_error and "Unknown file type" in result.message


async def test_gitignore_hidden_git_and_binary(grep: Any, tree: Path) -> None:
    result = await grep(pattern="hello", include_ignored=True)
    assert result.output == (
        ".hidden/secret.py\nbuild/out.py\ndebug.log\ndocs/guide.md\nsrc/util.py\nsrc/web/index.ts"
    )
    assert ".git/" not in result.output and "image.bin" not in result.output


async def test_gitignore_negation_and_anchoring(grep: Any, tree: Path) -> None:
    (tree / ".gitignore").write_text("*.md\n!docs/guide.md\n/src/web/\n")
    result = await grep(pattern="hello")
    assert result.output == "build/out.py\ndebug.log\ndocs/guide.md\nsrc/util.py"


async def test_explicit_file_is_searched_even_if_ignored(grep: Any, tree: Path) -> None:
    result = await grep(pattern="hello", path="debug.log", output_mode="content")
    assert result.output == "debug.log:1:hello from log"


async def test_head_limit_and_offset(grep: Any, tree: Path) -> None:
    (tree / "many.txt").write_text("".join(f"match {i}\n" for i in range(1, 11)))
    result = await grep(pattern="match", path="many.txt", output_mode="content", head_limit=3)
    assert result.output == "many.txt:1:match 1\nmany.txt:2:match 2\nmany.txt:3:match 3"
    assert "Results truncated to 3 lines; use offset=3 to see more." in result.message
    result = await grep(pattern="match", path="many.txt", output_mode="content", head_limit=3, offset=8)
    assert result.output == "many.txt:9:match 9\nmany.txt:10:match 10"
    assert "truncated" not in result.message and "Showing lines 9-10 of 10." in result.message
    result = await grep(pattern="match", path="many.txt", output_mode="content", head_limit=0)
    assert isinstance(result.output, str) and len(result.output.splitlines()) == 10
    result = await grep(pattern="match", path="many.txt", output_mode="content", offset=50)
    assert result.output == "" and "only 10 result lines" in result.message


async def test_multiline(grep: Any, tree: Path) -> None:
    result = await grep(pattern=r"def main\(\):.*print", multiline=True, output_mode="content", path="src")
    assert result.output == "src/app.py:3:def main():\nsrc/app.py:4:    print('Hello')"
    result = await grep(pattern=r"def main\(\):.*print", path="src")
    assert result.output == "" and result.message == "No matches found."


async def test_invalid_regex_and_missing_path(grep: Any, tree: Path) -> None:
    result = await grep(pattern="foo(")
    assert result.is_error and "Invalid regex" in result.message
    result = await grep(pattern="x", path="nope")
    assert result.is_error and "does not exist" in result.message
    result = await grep(pattern="x", path="../..")
    assert result.is_error and "absolute path" in result.message


def test_aliases_are_the_param_names() -> None:
    params = Grep.params.model_validate({"pattern": "x", "-A": 2, "-B": 1, "-C": 3, "-n": False, "-i": True})
    assert (params.after_context, params.before_context, params.context) == (2, 1, 3)  # type: ignore[attr-defined]
    with pytest.raises(pydantic.ValidationError):
        Grep.params.model_validate({"pattern": "x", "after_context": 2})
    with pytest.raises(pydantic.ValidationError):
        Grep.params.model_validate({"pattern": "x", "output_mode": "lines"})


@pytest.mark.parametrize(
    ("glob", "path", "matches"),
    [
        ("*.py", "a.py", True),
        ("*.py", "a/b.py", False),
        ("src/**/*.py", "src/a/b/c.py", True),
        ("src/**/*.py", "src/c.py", True),
        ("*.{ts,tsx}", "x.tsx", True),
        ("file[0-9].txt", "file7.txt", True),
        ("file[!0-9].txt", "file7.txt", False),
        ("a?c", "abc", True),
        ("a?c", "a/c", False),
    ],
)
def test_glob_to_regex(glob: str, path: str, matches: bool) -> None:
    import re

    assert bool(re.fullmatch(glob_to_regex(glob), path)) is matches


async def test_absolute_path_outside_work_dir(ctx: ToolContext, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "f.txt").write_text("needle\n")
    tool = Grep(ripgrep_path=None)
    result = await tool.run(tool.params.model_validate({"pattern": "needle", "path": str(other)}), ctx)
    assert result.output == str(other / "f.txt")


# --------------------------------------------------------------------------- ripgrep backend


@needs_rg
async def test_rg_matches_fallback(call: Call, tree: Path) -> None:
    cases: list[dict[str, Any]] = [
        {"pattern": "hello"},
        {"pattern": "hello", "-i": True, "output_mode": "content"},
        {"pattern": "hello", "output_mode": "count_matches", "path": "src"},
        {"pattern": "hello", "glob": "*.{ts,tsx}", "-i": True},
        {"pattern": "hello", "type": "py", "include_ignored": True},
        {"pattern": "import|return", "output_mode": "content", "path": "src/app.py", "-A": 1},
        {"pattern": "^def", "output_mode": "content", "path": "src", "-A": 0, "-B": 1},
        {"pattern": "hello", "output_mode": "content", "-n": False, "path": "src/web"},
        {"pattern": "hello", "glob": "!*.py", "-i": True},
        {"pattern": "hello", "glob": "src/*.py", "-i": True},
        {"pattern": "hello", "path": "debug.log", "output_mode": "count_matches"},
        {"pattern": r"def main\(\):.*print", "multiline": True, "output_mode": "content", "path": "src"},
        {"pattern": "hello", "output_mode": "content", "head_limit": 2, "offset": 1},
        {"pattern": "nothing-matches-this"},
    ]
    for case in cases:
        with_rg = await call(Grep(ripgrep_path=RG), **case)
        without = await call(Grep(ripgrep_path=None), **case)
        assert (with_rg.output, with_rg.is_error, with_rg.message) == (
            without.output,
            without.is_error,
            without.message,
        ), case


@needs_rg
async def test_rg_invalid_regex(call: Call, tree: Path) -> None:
    result = await call(Grep(ripgrep_path=RG), pattern="foo(")
    assert result.is_error and "ripgrep failed" in result.message
