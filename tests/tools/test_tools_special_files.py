"""Only regular files are read or written as files (issue #30, item 5): a FIFO, a device or a socket
given to ReadFile, ReadMediaFile, WriteFile or StrReplaceFile is refused at once with an error that
names what it is, never read on (a FIFO without a writer waits forever; `/dev/zero` never ends and
reports size 0). So are a repository's AGENTS.md and SKILL.md in such a form. The same through a
real `kimi acp` process, with another session streaming meanwhile: tests/e2e/test_acp_special_files.py."""

from __future__ import annotations

import asyncio
import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from kimi_acp.core.prompt import read_agents_md
from kimi_acp.kaos.local import LocalKaos
from kimi_acp.skills.provider import SkillProvider
from kimi_acp.skills.sources import SkillSources
from kimi_acp.tools.media import ReadMediaFile
from kimi_acp.tools.read import ReadFile
from kimi_acp.tools.replace import StrReplaceFile
from kimi_acp.tools.write import WriteFile
from kimi_acp.util import regular_file
from kimi_acp.util.regular_file import NotRegularFileError, open_regular
from tests.tools.conftest import Call

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs and Unix sockets are POSIX's")
PROMPT_S = 5.0  # "at once": far below this; a read of the FIFO itself would never return


@pytest.fixture
def specials(work_dir: Path) -> Iterator[dict[str, tuple[Path, str]]]:
    """A FIFO and a Unix socket in the work dir, and a character device (`/dev/zero`: size 0,
    endless); each with the words its error names it by."""
    os.mkfifo(work_dir / "pipe")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(work_dir / "socket.txt"))
    try:
        yield {
            "fifo": (work_dir / "pipe", "a FIFO (named pipe)"),
            "socket": (work_dir / "socket.txt", "a socket"),
            "device": (Path("/dev/zero"), "a character device"),
        }
    finally:
        server.close()


def refused(result: object, path: Path, kind: str) -> None:
    assert result.is_error is True, result
    text = f"{result.message} {result.output}"
    assert f"`{path}` is {kind}, not a regular file" in text, text


@pytest.mark.parametrize("which", ["fifo", "socket", "device"])
async def test_read_file_refuses_at_once(call: Call, specials: dict[str, tuple[Path, str]], which: str) -> None:
    path, kind = specials[which]
    refused(await asyncio.wait_for(call(ReadFile(), path=str(path)), PROMPT_S), path, kind)


@pytest.mark.parametrize("which", ["fifo", "socket", "device"])
async def test_read_media_file_refuses_at_once(call: Call, specials: dict[str, tuple[Path, str]], which: str) -> None:
    tool = ReadMediaFile()
    tool.model_capabilities = lambda: frozenset({"image_in"})
    path, kind = specials[which]
    refused(await asyncio.wait_for(call(tool, path=str(path)), PROMPT_S), path, kind)


@pytest.mark.parametrize("which", ["fifo", "socket", "device"])
@pytest.mark.parametrize("mode", ["overwrite", "append"])
async def test_write_file_refuses_at_once(call: Call, specials: dict[str, tuple[Path, str]], which: str, mode: str) -> None:
    path, kind = specials[which]
    refused(await asyncio.wait_for(call(WriteFile(), path=str(path), content="x", mode=mode), PROMPT_S), path, kind)
    assert not stat.S_ISREG(path.stat().st_mode)  # still what it was: not replaced by a file


@pytest.mark.parametrize("which", ["fifo", "socket", "device"])
async def test_str_replace_file_refuses_at_once(call: Call, specials: dict[str, tuple[Path, str]], which: str) -> None:
    path, kind = specials[which]
    result = await asyncio.wait_for(call(StrReplaceFile(), path=str(path), edit={"old": "a", "new": "b"}), PROMPT_S)
    refused(result, path, kind)


async def test_a_file_swapped_for_a_fifo_after_it_was_looked_at_is_refused_without_waiting(
    work_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race: `stat` saw a regular file, the FIFO is what gets opened. Opened non-blocking and
    looked at again through the descriptor, it is refused, and no descriptor is left open."""
    fifo = work_dir / "swapped"
    os.mkfifo(fifo)
    regular = work_dir / "plain.txt"
    regular.write_text("x")
    looked_at, real_stat = os.stat(regular), os.stat

    def stat_before_the_swap(path: object, **kwargs: object) -> os.stat_result:
        return looked_at if str(path) == str(fifo) else real_stat(path, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(regular_file.os, "stat", stat_before_the_swap)
    before = len(os.listdir("/proc/self/fd")) if Path("/proc/self/fd").exists() else None
    with pytest.raises(NotRegularFileError, match="FIFO"):
        await asyncio.wait_for(asyncio.to_thread(open_regular, fifo), PROMPT_S)
    if before is not None:
        assert len(os.listdir("/proc/self/fd")) == before


async def test_the_kaos_answers_other_calls_while_refusing(work_dir: Path, specials: dict[str, tuple[Path, str]]) -> None:
    """The event loop is never held: a read of a FIFO and of a plain file, side by side."""
    (work_dir / "plain.txt").write_text("hello\n")
    kaos = LocalKaos()
    fifo = asyncio.ensure_future(kaos.read_bytes(specials["fifo"][0]))
    assert await asyncio.wait_for(kaos.read_text(work_dir / "plain.txt"), PROMPT_S) == "hello\n"
    with pytest.raises(NotRegularFileError):
        await asyncio.wait_for(fifo, PROMPT_S)


def test_a_repositorys_agents_md_or_skill_md_as_a_fifo_is_skipped_at_once(work_dir: Path, tmp_path: Path) -> None:
    os.mkfifo(work_dir / "AGENTS.md")
    assert read_agents_md(work_dir) == ""
    skill = work_dir / ".kimi" / "skills" / "trap"
    skill.mkdir(parents=True)
    os.mkfifo(skill / "SKILL.md")
    provider = SkillProvider(SkillSources(work_dir, home=tmp_path / "home", builtin=False))
    provider.refresh()
    assert [s.name for s in provider.skills_found] == []
    (problem,) = provider.problems
    assert "FIFO" in problem.reason
