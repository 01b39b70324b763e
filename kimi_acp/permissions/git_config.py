"""A repository's own git config, read before a git command runs unasked.

A cloned repository can ship (or a command can plant) a `.git/config` naming programs that
`git status`, `git diff` or `git log` run by themselves: `core.fsmonitor`, `diff.<driver>.textconv`,
`filter.<driver>.clean`, `log.showSignature` (gpg), a pager. A git command that runs without a
question (read_only.py, or covered by a session approval) therefore runs with those switched off,
through git's `GIT_CONFIG_COUNT` variables (git 2.31+), which outrank every config file and reach
submodules.

Fail closed: every key of the repository's config files (its `config`, `config.worktree`, the
common dir's, its submodules' under `modules/`, and of any git directory git could discover from
the working directory: each parent's `.git` and a bare repository) must be one this module knows
to be harmless for those commands, or one it switches off; an `include`, a key it does not know, a
file it cannot read or a git older than 2.31 means there is no safe way: the command asks.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from functools import lru_cache
from pathlib import Path

from ..util import process_state
from ..util.regular_file import open_regular

# Keys (section.name, or section.*.name for sections with subsections) that change nothing a
# read-only git command runs: formatting, identities, remotes' names and URLs (reached only by
# fetch and push), branch tracking, and settings of commands that are not read-only.
_HARMLESS = frozenset(
    """
    core.repositoryformatversion core.filemode core.bare core.logallrefupdates core.ignorecase
    core.precomposeunicode core.symlinks core.autocrlf core.eol core.safecrlf core.quotepath core.longpaths
    core.compression core.loosecompression core.bigfilethreshold core.abbrev core.untrackedcache
    core.splitindex core.commitgraph core.multipackindex core.preloadindex core.fscache core.checkstat
    core.trustctime core.sparsecheckout core.sparsecheckoutcone core.whitespace core.notesref
    core.deltabasecachesize core.packedgitlimit core.packedgitwindowsize core.fsync core.fsyncmethod
    core.editor core.excludesfile core.attributesfile core.hookspath core.askpass core.sshcommand
    core.fsmonitorhookversion core.warnambiguousrefs core.protecthfs core.protectntfs core.createobject
    core.sharedrepository core.restrictinheritedhandles core.checkroundtripencoding core.commentchar
    core.commentstring core.filesreflocktimeout core.packedrefstimeout core.gitproxy
    user.name user.email user.signingkey user.useconfigonly author.name author.email committer.name
    committer.email init.defaultbranch
    remote.*.url remote.*.pushurl remote.*.fetch remote.*.push remote.*.mirror remote.*.tagopt
    remote.*.prune remote.*.prunetags remote.*.skipdefaultupdate remote.*.skipfetchall remote.*.proxy
    remote.*.vcs remote.*.receivepack remote.*.uploadpack remote.*.followremotehead
    branch.*.remote branch.*.merge branch.*.rebase branch.*.pushremote branch.*.description
    branch.*.mergeoptions branch.autosetupmerge branch.autosetuprebase branch.sort
    pull.rebase pull.ff pull.twohead pull.octopus push.default push.autosetupremote push.followtags
    push.gpgsign push.recursesubmodules fetch.prune fetch.prunetags fetch.recursesubmodules
    fetch.writecommitgraph fetch.parallel fetch.showforcedupdates
    gc.auto gc.autodetach gc.autopacklimit gc.reflogexpire gc.reflogexpireunreachable gc.pruneexpire
    gc.worktreepruneexpire gc.writecommitgraph maintenance.auto maintenance.strategy
    color.ui color.diff color.status color.branch color.interactive color.grep color.decorate
    column.ui column.branch column.status column.tag
    status.showuntrackedfiles status.short status.branch status.relativepaths status.submodulesummary
    status.showstash status.aheadbehind status.renames status.renamelimit status.displaycommentprefix
    log.abbrevcommit log.date log.decorate log.follow log.graphcolors log.mailmap log.showroot
    log.excludedecoration log.initialdecorationset log.diffmerges
    diff.renames diff.algorithm diff.mnemonicprefix diff.noprefix diff.relative diff.colormoved
    diff.colormovedws diff.context diff.interhunkcontext diff.indentheuristic diff.statgraphwidth
    diff.statnamewidth diff.submodule diff.ignoresubmodules diff.suppressblankempty diff.wordregex
    diff.orderfile diff.dirstat diff.autorefreshindex diff.guitool diff.tool diff.renamelimit
    diff.*.binary diff.*.xfuncname diff.*.funcname diff.*.wordregex
    merge.conflictstyle merge.ff merge.log merge.renames merge.tool merge.verbosity merge.defaulttoupstream
    merge.*.name merge.*.driver merge.*.recursive
    commit.gpgsign commit.template commit.verbose commit.cleanup commit.status tag.gpgsign tag.sort
    tag.forcesignannotated gpg.format rebase.autosquash rebase.autostash
    rebase.updaterefs rebase.instructionformat rerere.enabled rerere.autoupdate
    grep.linenumber grep.column grep.patterntype grep.extendedregexp grep.fullname grep.fallbacktonoindex
    blame.blankboundary blame.coloring blame.date blame.showemail blame.showroot blame.ignorerevsfile
    blame.markunblamablelines blame.markignoredlines advice.* help.autocorrect
    submodule.*.url submodule.*.path submodule.*.branch submodule.*.active submodule.*.update
    submodule.*.ignore submodule.*.fetchrecursesubmodules submodule.recurse submodule.active
    lfs.repositoryformatversion lfs.url lfs.*.access lfs.locksverify lfs.fetchexclude lfs.fetchinclude
    extensions.objectformat extensions.worktreeconfig extensions.refstorage extensions.preciousobjects
    index.version index.threads index.sparse index.skiphash pack.threads pack.windowmemory
    pack.packsizelimit pack.writebitmaps feature.manyfiles feature.experimental fsck.* receive.*
    transfer.fsckobjects http.* https.* protocol.* url.*.insteadof url.*.pushinsteadof credential.*
    alias.* difftool.* mergetool.* interactive.difffilter interactive.singlekey checkout.defaultremote
    checkout.workers clean.requireforce stash.showpatch stash.showstat stash.showincludeuntracked
    worktree.guessremote sparse.expectfilesoutsideofpatterns sendemail.* format.* am.* apply.whitespace
    safe.bareRepository rerere.* notes.* sequence.editor pager.*
    color.* column.* user.* init.* push.* pull.* gc.* maintenance.* rebase.* commit.* tag.* merge.*
    help.* checkout.* clean.* stash.* worktree.* index.* pack.* feature.* status.* branch.* blame.*
    grep.*
    """.lower().split()
)
# Keys that run a program, switched off for the command (key pattern, the value that does it).
_SWITCHES = {
    "core.fsmonitor": "false",
    "core.pager": "cat",
    "log.showsignature": "false",
    "diff.*.textconv": "cat",
    "diff.*.cachetextconv": "false",
    "filter.*.clean": "cat",
    "filter.*.smudge": "cat",
    "filter.*.required": "false",
    "gpg.program": "false",  # `git log --format=%G?` verifies signatures with it
    "gpg.*.program": "false",
}
# Always switched off, whatever the files say (the user's own config included: a command that runs
# unasked runs no program of any config).
_ALWAYS = {"core.fsmonitor": "false", "core.pager": "cat", "log.showsignature": "false"}
_MIN_GIT = (2, 31)  # GIT_CONFIG_COUNT
MAX_CONFIG_BYTES = 1 << 20  # a larger config file is not read: the command asks
_SECTION = re.compile(r'\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\\n]|\\.)*)")?\s*\]')
_KEY = re.compile(r"([A-Za-z][A-Za-z0-9-]*)\s*(?:=|$)")
_GIT_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CONFIG", "GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS",
            "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM")  # fmt: skip


def safe_git_environment(cwd: Path, env: Mapping[str, str]) -> dict[str, str] | None:
    """The variables that switch off every program a git command run in `cwd` could start on its
    own, or None when there is no safe way (see the module docstring)."""
    if any(name in env for name in _GIT_ENV) or not _git_is_new_enough(env.get("PATH", "")):
        return None
    switches = dict(_ALWAYS)
    try:
        for config in _config_files(cwd):
            for key in _keys(config):
                switch = _switch(key)
                if switch is not None:
                    switches[key] = switch
                elif not _harmless(key):
                    return None
    except (OSError, ValueError):  # a config it cannot read (UnicodeDecodeError is one)
        return None
    variables = {"GIT_CONFIG_COUNT": str(len(switches))}
    for index, (key, value) in enumerate(sorted(switches.items())):
        variables[f"GIT_CONFIG_KEY_{index}"] = key
        variables[f"GIT_CONFIG_VALUE_{index}"] = value
    return variables


def _pattern(key: str) -> str:
    """`diff.foo.textconv` → `diff.*.textconv`."""
    section, _, rest = key.partition(".")
    if "." in rest:
        return f"{section}.*.{rest.rsplit('.', 1)[1]}"
    return key


def _harmless(key: str) -> bool:
    section = key.split(".", 1)[0]
    return key in _HARMLESS or _pattern(key) in _HARMLESS or f"{section}.*" in _HARMLESS


def _switch(key: str) -> str | None:
    return _SWITCHES.get(key) or _SWITCHES.get(_pattern(key)) or (
        "false" if key.startswith("pager.") else None
    )


# ---------------------------------------------------------------------------- finding configs


def _config_files(cwd: Path) -> Iterator[Path]:
    """Every config file of every git directory git could use from `cwd`."""
    seen: set[Path] = set()
    for directory in [cwd, *cwd.parents]:
        for git_dir in _git_dirs_at(directory):
            real = Path(os.path.realpath(git_dir))
            if real in seen:
                continue
            seen.add(real)
            yield from _configs_of(real)


def _git_dirs_at(directory: Path) -> Iterator[Path]:
    dot_git = directory / ".git"
    if dot_git.is_dir():
        yield dot_git
    elif dot_git.exists():
        yield _gitdir_file(dot_git)
    if (directory / "HEAD").is_file() and (directory / "objects").is_dir() and (directory / "refs").is_dir():
        yield directory  # a bare repository: git uses it when run inside it


def _text(path: Path) -> str:
    """A file of git's, read only if it is a regular file (a FIFO planted as `.git/commondir`
    would otherwise hold the agent up; OSError, and so no unasked command, instead)."""
    with open_regular(path) as file:
        data = file.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        raise ValueError(f"{path} is larger than the agent reads")
    return data.decode("utf-8")


def _gitdir_file(path: Path) -> Path:
    text = _text(path).strip()
    if not text.startswith("gitdir:"):
        raise ValueError(f"{path} is not a gitdir file")
    target = Path(text[len("gitdir:") :].strip())
    return target if target.is_absolute() else path.parent / target


def _configs_of(git_dir: Path) -> Iterator[Path]:
    common = git_dir
    commondir = git_dir / "commondir"
    if commondir.exists():
        target = Path(_text(commondir).strip())
        common = target if target.is_absolute() else git_dir / target
    for candidate in (common / "config", git_dir / "config", git_dir / "config.worktree", common / "config.worktree"):
        if candidate.exists():
            yield candidate
    for root in {git_dir / "modules", common / "modules"}:
        if root.is_dir():
            for dirpath, _, files in os.walk(root):
                if "config" in files:
                    yield Path(dirpath) / "config"


def _keys(config: Path) -> Iterator[str]:
    """`section.name` / `section.subsection.name` of each key of a git config file (lowercased
    section and name; an `include` or a line this cannot read raises ValueError)."""
    section: str | None = None
    lines = _text(config).splitlines()
    continued = False
    for raw in lines:
        line = raw.strip()
        if continued:
            continued = line.endswith("\\")
            continue
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            match = _SECTION.match(line)
            if match is None:
                raise ValueError(f"{config}: {line[:40]}")
            name, sub = match.group(1).lower(), match.group(2)
            if sub is None and "." in name:  # [section.subsection], the old spelling
                name, _, sub = name.partition(".")
            section = f"{name}.{sub}" if sub is not None else name
            rest = line[match.end() :].strip()
            if not rest or rest[0] in "#;":
                continue
            line = rest
        key = _KEY.match(line)
        if section is None or key is None:
            raise ValueError(f"{config}: {line[:40]}")
        if section.split(".", 1)[0] in ("include", "includeif"):
            raise ValueError(f"{config} includes other files")
        continued = line.endswith("\\")
        prefix, _, subsection = section.partition(".")
        yield f"{prefix}.{subsection}.{key.group(1).lower()}" if subsection else f"{prefix}.{key.group(1).lower()}"


@process_state.cache  # the git on this process's PATH
@lru_cache(maxsize=4)
def _git_is_new_enough(path: str) -> bool:
    git = shutil.which("git", path=path or None)
    if git is None:
        return True  # no git: nothing runs
    try:
        out = subprocess.run([git, "--version"], capture_output=True, text=True, timeout=5, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    found = re.search(r"(\d+)\.(\d+)", out)
    return found is not None and (int(found.group(1)), int(found.group(2))) >= _MIN_GIT
