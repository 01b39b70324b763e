"""Installing and removing plugins (`kimi plugin install | remove`), and `inject`.

A source is a plugin directory, a `.zip` (a file, or an http(s) URL ending in `.zip`), or a git
URL (`https://`, `git@` or `file://`, cloned with `git clone --depth 1`; GitHub / GitLab browser
URLs may name a branch and a subdirectory: `…/tree/<branch>/<dir>`). The plugin is staged in a
dot directory beside the others and moved into place only once it is complete, so a failed
upgrade leaves the installed version alone. Symbolic links (in a directory, a zip or a checkout)
are copied as links, and one that points outside the plugin refuses the install (`links.py`).
`inject` writes host values into the plugin's `config_file` (mode 0600: it then holds a key), at
install and again before each call of its tools, so a refreshed Kimi account token reaches
plugins that read the file.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import subprocess
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from .._version import __version__
from ..util.child_env import child_environment
from ..util.fs import atomic_write_text, private_dir
from .links import check_link, check_links
from .paths import plugins_dir
from .spec import PLUGIN_JSON, PluginError, PluginSpec, parse_plugin_json

HOST = "kimi-acp"
DOWNLOAD_TIMEOUT_S = 60.0


def install(target: str, host_values: dict[str, str], *, say: Callable[[str], None] = lambda _: None,
            directory: Path | None = None) -> PluginSpec:
    """Install the plugin `target` names (replacing an installed one of its name); its spec."""
    root = directory or plugins_dir()
    with _source(target, say) as source:
        check_links(source)  # before anything is read or copied: links stay links, inside the plugin
        spec = parse_plugin_json(source / PLUGIN_JSON)
        dest = _destination(root, spec.name)
        private_dir(root)  # 0700 like the rest of the share dir: the installed specs hold host values
        staging = Path(tempfile.mkdtemp(prefix=f".{spec.name}-", dir=root))
        try:
            staged = staging / spec.name
            shutil.copytree(source, staged, symlinks=True, ignore=shutil.ignore_patterns(".git"))
            inject_config(parse_plugin_json(staged / PLUGIN_JSON), host_values)
            _write_runtime(staged)
            if dest.exists():
                shutil.rmtree(dest)
            staged.rename(dest)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return parse_plugin_json(dest / PLUGIN_JSON)


def remove(name: str, directory: Path | None = None) -> None:
    dest = _destination(directory or plugins_dir(), name)
    if not (dest / PLUGIN_JSON).is_file():
        raise PluginError(f"plugin '{name}' is not installed")
    shutil.rmtree(dest)


def inject_config(spec: PluginSpec, host_values: dict[str, str]) -> bool:
    """Set the plugin's `inject` paths in its config file to the host values; whether it changed."""
    if not spec.inject or not spec.config_file:
        return False
    path = (spec.directory / spec.config_file).resolve()
    if not path.is_relative_to(spec.directory.resolve()):
        raise PluginError(f"plugin '{spec.name}': config_file escapes the plugin directory: {spec.config_file}")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PluginError(f"plugin '{spec.name}': config file not found: {spec.config_file}") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise PluginError(f"plugin '{spec.name}': cannot read {spec.config_file}: {exc}") from None
    if not isinstance(config, dict):
        raise PluginError(f"plugin '{spec.name}': {spec.config_file} is not a JSON object")
    before = json.dumps(config, sort_keys=True)
    for target, source in spec.inject.items():
        if source not in host_values:
            raise PluginError(
                f"plugin '{spec.name}' needs `{source}`, which the default model does not have (run `kimi login`)"
            )
        _set_path(config, target, host_values[source])
    if json.dumps(config, sort_keys=True) == before:
        return False
    atomic_write_text(path, json.dumps(config, ensure_ascii=False, indent=2), mode=0o600)
    return True


def _set_path(obj: dict[str, Any], dotted: str, value: str) -> None:
    *parents, last = dotted.split(".")
    for key in parents:
        if not isinstance(obj.get(key), dict):
            obj[key] = {}
        obj = obj[key]
    obj[last] = value


def _write_runtime(directory: Path) -> None:
    path = directory / PLUGIN_JSON
    data = json.loads(path.read_text(encoding="utf-8"))
    data["runtime"] = {"host": HOST, "host_version": __version__}
    atomic_write_text(path, json.dumps(data, ensure_ascii=False, indent=2))


def _destination(root: Path, name: str) -> Path:
    dest = (root / name).resolve()
    if dest.parent != root.resolve() or name.startswith("."):
        raise PluginError(f"invalid plugin name: {name!r}")
    return dest


@contextlib.contextmanager
def _source(target: str, say: Callable[[str], None]) -> Iterator[Path]:
    """The plugin directory `target` names, unpacked or cloned into a temporary one if need be."""
    parsed = urlparse(target)
    if parsed.scheme in ("http", "https") and parsed.path.lower().endswith(".zip"):
        with tempfile.TemporaryDirectory(prefix="kimi-plugin-") as tmp:
            say(f"Downloading {target}...")
            archive = Path(tmp) / "download.zip"
            _download(target, archive)
            yield _unzip(archive, Path(tmp) / "unpacked")
        return
    if _is_git_url(target):
        with tempfile.TemporaryDirectory(prefix="kimi-plugin-") as tmp:
            yield _clone(target, Path(tmp), say)
        return
    path = Path(target).expanduser()
    if path.is_file() and path.suffix.lower() == ".zip":
        with tempfile.TemporaryDirectory(prefix="kimi-plugin-") as tmp:
            say(f"Extracting {path.name}...")
            yield _unzip(path, Path(tmp) / "unpacked")
        return
    if path.is_dir():
        if not (path / PLUGIN_JSON).is_file():
            raise PluginError(f"no {PLUGIN_JSON} in {path}")
        yield path.resolve()
        return
    raise PluginError(f"{target} is not a plugin directory, a .zip file or URL, or a git URL")


def _is_git_url(target: str) -> bool:
    if target.startswith("git@"):
        return True
    parsed = urlparse(target)
    if parsed.scheme == "file":
        return parsed.path.endswith(".git") or ".git/" in parsed.path
    return parsed.scheme in ("http", "https") and (
        ".git/" in target or target.endswith(".git") or parsed.netloc in ("github.com", "gitlab.com")
    )


def _split_git_url(target: str) -> tuple[str, str | None, str | None]:
    """(clone URL, subdirectory, branch): `repo.git/sub`, or GitHub / GitLab `owner/repo/tree/<branch>/sub`."""
    index = target.find(".git/")
    if index >= 0:
        return target[: index + 4], target[index + 5 :].strip("/") or None, None
    if target.endswith(".git") or target.startswith("git@"):
        return target, None, None
    parsed = urlparse(target)
    segments = [s for s in parsed.path.split("/") if s]
    if len(segments) < 2:
        return target, None, None
    clone = f"{parsed.scheme}://{parsed.netloc}/{segments[0]}/{segments[1]}"
    rest = segments[2:]
    if rest[:1] == ["-"]:  # GitLab's /-/tree/
        rest = rest[1:]
    branch = None
    if len(rest) >= 2 and rest[0] == "tree":
        branch, rest = rest[1], rest[2:]
    return clone, "/".join(rest) or None, branch


def _clone(target: str, tmp: Path, say: Callable[[str], None]) -> Path:
    url, subdir, branch = _split_git_url(target)
    say(f"Cloning {url}...")
    command = ["git", "clone", "--depth", "1", *(["--branch", branch] if branch else []), url, str(tmp / "repo")]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=300,
                              env=child_environment({"GIT_TERMINAL_PROMPT": "0"}))
    except FileNotFoundError:
        raise PluginError("git is not installed (needed for a git URL)") from None
    except subprocess.TimeoutExpired:
        raise PluginError("git clone did not finish within 300 s") from None
    if done.returncode != 0:
        raise PluginError(f"git clone failed: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}")
    repo = (tmp / "repo").resolve()
    source = (repo / subdir).resolve() if subdir else repo
    if not source.is_relative_to(repo):
        raise PluginError(f"the subdirectory escapes the repository: {subdir}")
    if (source / PLUGIN_JSON).is_file():
        return source
    found = sorted(d.name for d in source.iterdir() if d.is_dir() and (d / PLUGIN_JSON).is_file()) if source.is_dir() else []
    if found:
        raise PluginError(f"no {PLUGIN_JSON} at {target}; its plugins: {', '.join(found)} (install <url>/<name>)")
    raise PluginError(f"no {PLUGIN_JSON} in {target}")


def _download(url: str, path: Path) -> None:
    import httpx

    try:
        with httpx.stream("GET", url, follow_redirects=True, timeout=DOWNLOAD_TIMEOUT_S) as response:
            response.raise_for_status()
            with path.open("wb") as f:
                for chunk in response.iter_bytes():
                    f.write(chunk)
    except httpx.HTTPError as exc:
        raise PluginError(f"download failed: {type(exc).__name__}: {exc}") from None


def _unzip(archive: Path, into: Path) -> Path:
    """Unpack `archive` (refusing members that escape it); the directory holding plugin.json.
    Symbolic-link entries (a Unix mode in `external_attr`) become links, made after every file
    so nothing is written through one, and only when they point inside the archive."""
    into.mkdir(parents=True)
    try:
        with zipfile.ZipFile(archive) as zf:
            links: list[tuple[str, str]] = []
            for info in zf.infolist():
                member = info.filename
                if not (into / member).resolve().is_relative_to(into.resolve()):
                    raise PluginError(f"the archive holds an unsafe path: {member}")
                if _is_symlink(info):
                    links.append((member.rstrip("/"), zf.read(info).decode("utf-8", "replace")))
            for member, target in links:
                check_link(into, member, target)
            zf.extractall(into, members=[i for i in zf.infolist() if not _is_symlink(i)])
            for member, target in links:
                (into / member).parent.mkdir(parents=True, exist_ok=True)
                os.symlink(target, into / member)
    except zipfile.BadZipFile as exc:
        raise PluginError(f"not a zip archive: {exc}") from None
    for candidate in [into, *sorted(into.iterdir())]:
        if candidate.is_dir() and (candidate / PLUGIN_JSON).is_file():
            return candidate
    raise PluginError(f"no {PLUGIN_JSON} in the archive (at its top or one level down)")


def _is_symlink(info: zipfile.ZipInfo) -> bool:
    return stat.S_ISLNK(info.external_attr >> 16)
