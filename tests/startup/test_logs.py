"""The log file rotates as logging.handlers.RotatingFileHandler would (kimi_acp/startup/logs.py)."""

from __future__ import annotations

import logging
import subprocess
import sys

from kimi_acp.startup.logs import RotatingLogFile


def _logger(handler: logging.Handler) -> logging.Logger:
    log = logging.getLogger(f"test_logs.{id(handler)}")
    log.propagate = False
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    return log


def test_a_full_file_moves_to_dot_1_and_older_ones_shift_up_to_the_backup_count(tmp_path):
    path = tmp_path / "kimi.log"
    handler = RotatingLogFile(path, max_bytes=100, backups=2)
    log = _logger(handler)
    for index in range(10):
        log.info("record %02d %s", index, "x" * 30)  # 40 characters a line: two fit in 100 bytes
    handler.close()
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["kimi.log", "kimi.log.1", "kimi.log.2"]
    assert path.read_text().splitlines() == [f"record 08 {'x' * 30}", f"record 09 {'x' * 30}"]
    assert (tmp_path / "kimi.log.1").read_text().splitlines()[0].startswith("record 06")
    assert (tmp_path / "kimi.log.2").read_text().splitlines()[0].startswith("record 04")
    assert all(p.stat().st_size < 100 for p in tmp_path.iterdir())


def test_records_append_to_an_existing_file_and_one_larger_than_the_limit_is_kept_whole(tmp_path):
    path = tmp_path / "kimi.log"
    path.write_text("earlier\n")
    handler = RotatingLogFile(path, max_bytes=50, backups=1)
    log = _logger(handler)
    log.info("%s", "y" * 80)
    log.info("%s", "z" * 80)
    handler.close()
    assert (tmp_path / "kimi.log.1").read_text() == f"{'y' * 80}\n"
    assert path.read_text() == f"{'z' * 80}\n"  # the earlier file went to .1, then was replaced


def test_setting_up_the_log_does_not_import_logging_handlers(tmp_path):
    probe = (
        "import sys; from kimi_acp.startup.logs import setup_logging; setup_logging('acp'); "
        "print('logging.handlers' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
        env={"KIMI_SHARE_DIR": str(tmp_path), "PATH": ""},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
    assert "acp starting" in (tmp_path / "logs" / "kimi.log").read_text()


def test_the_same_files_as_the_standard_librarys_rotating_handler(tmp_path):
    import logging.handlers

    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    ours.mkdir()
    theirs.mkdir()
    handlers = [
        RotatingLogFile(ours / "kimi.log", max_bytes=120, backups=3),
        logging.handlers.RotatingFileHandler(theirs / "kimi.log", maxBytes=120, backupCount=3, encoding="utf-8", delay=True),
    ]
    for handler in handlers:
        log = _logger(handler)
        for index in range(25):
            log.info("entry %d %s", index, "é" * (index % 7) * 5)
        handler.close()
    contents = [{p.name: p.read_text() for p in d.iterdir()} for d in (ours, theirs)]
    assert contents[0] == contents[1]


def test_a_log_deleted_while_open_comes_back_at_the_next_rotation(tmp_path):
    path = tmp_path / "kimi.log"
    handler = RotatingLogFile(path, max_bytes=100, backups=2)
    log = _logger(handler)
    log.info("first %s", "a" * 40)
    path.unlink()  # e.g. someone cleaning up the logs directory
    for index in range(4):
        log.info("after %d %s", index, "b" * 40)
    handler.close()
    assert path.exists() and "after 3" in path.read_text()
