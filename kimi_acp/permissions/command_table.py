"""The commands the agent understands: the read-only table, and the programs that run others.

Data only; command_forms.py reads it. Each form is a program (and subcommand) that neither runs
code nor writes a file its arguments name, with the options it may take: anything not listed
here (another option, another subcommand) is not this form, so it is judged as an unknown command
(asks; "approve for this session" remembers it exactly). A form's command:

- runs without a question when every file it names lies in the workspace or the temp dir and none
  holds credentials or is protected (read_only.py), unless the user chose "always ask";
- is remembered by its program (and subcommand) when approved for the session (`cat …`,
  `git log …`), and that covers later commands of the same form only.

Each entry says why it is safe. Options are written as the program spells them: `flags` take no
value, `valued` take one (`--name=value`, `--name value`, `-n5`, `-n 5`), `paths` are the valued
options whose value is a file the command reads; `letters` are the short flags that may be
bundled (`ls -la`). `numbers`: `-5` is a count (`head -5`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Operands = Literal[
    "paths",  # every operand is a file or directory it reads
    "pattern+paths",  # a pattern, then files (none of them when -e / -f gave the pattern)
    "script+paths",  # sed: a script, then files (none when -e gave the script)
    "text",  # operands are text it prints or transforms (echo, printf, tr)
    "none",  # no operands
    "revisions+paths",  # git: revisions and, after them or after `--`, paths
    "find",  # find: starting points, then an expression of the allowed primaries
]


@dataclass(frozen=True)
class Form:
    words: tuple[str, ...]  # ("git", "log"), ("cat",)
    reason: str
    operands: Operands = "paths"
    flags: frozenset[str] = frozenset()
    valued: frozenset[str] = frozenset()
    paths: frozenset[str] = frozenset()  # of `valued`: values that are files it reads
    letters: str = ""
    numbers: bool = False
    max_operands: int | None = None
    recursive: frozenset[str] = frozenset()  # options that make it read whole directories
    always_recursive: bool = False  # reads whole directories given as operands (rg, git grep)
    follows: frozenset[str] = frozenset()  # options that follow symbolic links while recursing
    operands_only_with: frozenset[str] = frozenset()  # operands are allowed only with one of these


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Options shared by git's commands that show history and differences (git-log(1), git-diff(1)):
# formatting, limiting and diff options; none runs a program or writes a file. Left out on
# purpose: --output (writes a file), --ext-diff and --textconv (run programs of the repository's
# config), -O (reads an order file), --show-signature (runs gpg), --no-index (compares any files).
_GIT_DIFF_FLAGS = _set(
    """
    -p -u --patch -s --no-patch --raw --patch-with-raw --patch-with-stat --stat --numstat --shortstat
    --compact-summary --summary --name-only --name-status --check --full-index --binary --no-renames
    --minimal --patience --histogram --ignore-space-at-eol --ignore-space-change --ignore-all-space
    --ignore-blank-lines --ignore-cr-at-eol -b -w --function-context -W --exit-code --quiet -R
    --text -a --no-color --color --color-words --word-diff --no-prefix --default-prefix --relative
    --no-relative --cached --staged --merge-base --no-ext-diff --no-textconv --ita-invisible-in-index
    --find-renames --find-copies --find-copies-harder -M -C -B -D --irreversible-delete --pickaxe-all
    --pickaxe-regex --indent-heuristic --no-indent-heuristic -z --abbrev --no-abbrev --full-history
    --color-moved --no-color-moved --dirstat --cumulative -1 -2 -3 -0 --ours --theirs --base
    --submodule --ignore-submodules --no-notes --notes --show-notes
    """
)
_GIT_DIFF_VALUED = _set(
    """
    -U --unified --inter-hunk-context --stat-width --stat-name-width --stat-count --stat-graph-width
    --diff-filter --diff-algorithm --anchored --color --color-words --word-diff --word-diff-regex
    --color-moved --color-moved-ws --src-prefix --dst-prefix --line-prefix --relative --abbrev -S -G
    --find-object --break-rewrites --find-renames --find-copies -l --dirstat --submodule
    --ignore-submodules --ws-error-highlight --ignore-matching-lines -I --output-indicator-new
    --output-indicator-old --output-indicator-context
    """
)
_GIT_LOG_FLAGS = _GIT_DIFF_FLAGS | _set(
    """
    --oneline --graph --decorate --no-decorate --abbrev-commit --no-abbrev-commit --all --branches
    --tags --remotes --no-merges --merges --first-parent --reverse --follow --left-right --cherry-pick
    --cherry-mark --cherry --boundary --ancestry-path --simplify-by-decoration --parents --children
    --topo-order --date-order --author-date-order --relative-date --walk-reflogs -g -i
    --regexp-ignore-case --basic-regexp -E --extended-regexp -F --fixed-strings -P --perl-regexp
    --all-match --invert-grep --no-walk --do-walk --source --use-mailmap --mailmap --no-mailmap
    --full-diff --log-size --expand-tabs --no-expand-tabs --show-linear-break --dense --sparse
    --simplify-merges --remove-empty --no-min-parents --no-max-parents --single-worktree --bisect
    --stdin --show-pulls -m -c --cc --dd --combined-all-paths --no-diff-merges --remerge-diff
    """
)
_GIT_LOG_VALUED = _GIT_DIFF_VALUED | _set(
    """
    -n --max-count --skip --since --after --until --before --author --committer --grep --grep-reflog
    --format --pretty --date --decorate --decorate-refs --decorate-refs-exclude --min-parents
    --max-parents --branches --tags --remotes --glob --exclude --encoding --expand-tabs --no-walk
    --since-as-filter --diff-merges -L --show-linear-break --notes --show-notes
    """
)

FORMS: tuple[Form, ...] = (
    # ------------------------------------------------------------------ listing and reading files
    Form(
        ("ls",),
        "lists directories; writes nothing, runs nothing",
        letters="aAbBcCdfFgGhHiklLmnNopqQrRsStuUvxXZ1",
        flags=_set(
            """--all --almost-all --author --escape --directory --classify --file-type --full-time
            --group-directories-first --no-group --human-readable --si --dereference --dereference-command-line
            --dereference-command-line-symlink-to-dir --inode --kibibytes --literal --numeric-uid-gid
            --hide-control-chars --show-control-chars --quote-name --reverse --recursive --size --context
            --zero --color --classify"""
        ),
        valued=_set(
            """--color --colour --sort --time --time-style --format --indicator-style --quoting-style
            --width -w --tabsize -T --block-size --ignore -I --hide --hyperlink"""
        ),
    ),
    Form(
        ("cat",),
        "prints files",
        letters="AbeEnstTuv",
        flags=_set("--show-all --number-nonblank --show-ends --number --squeeze-blank --show-tabs --show-nonprinting"),
    ),
    Form(
        ("head",),
        "prints the start of files",
        letters="qvz",
        numbers=True,
        flags=_set("--quiet --silent --verbose --zero-terminated"),
        valued=_set("-n --lines -c --bytes"),
    ),
    Form(
        ("tail",),
        "prints the end of files (with -f, until the command's timeout)",
        letters="fFqvz",
        numbers=True,
        flags=_set("--follow --retry --quiet --silent --verbose --zero-terminated"),
        valued=_set("-n --lines -c --bytes -s --sleep-interval --pid --follow --max-unchanged-stats"),
    ),
    Form(
        ("wc",),
        "counts lines, words and bytes",
        letters="clmwL",
        flags=_set("--bytes --chars --lines --words --max-line-length"),
        valued=_set("--files0-from --total"),
        paths=_set("--files0-from"),
    ),
    Form(("pwd",), "prints the working directory", operands="none", letters="LP"),
    Form(("cd",), "moves the rest of the line to a directory (the files it names later are read from there)",
         letters="LPe@", max_operands=1),
    Form(("echo",), "prints its arguments", operands="text", letters="neE"),
    Form(("printf",), "prints its arguments (without -v, which sets a variable)", operands="text"),
    Form(("true",), "does nothing", operands="text"),
    Form(("false",), "does nothing", operands="text"),
    Form(("basename",), "prints a name's last part", operands="text", letters="asz", valued=_set("-s --suffix"),
         flags=_set("--multiple --zero")),
    Form(("dirname",), "prints a name's directory part", operands="text", letters="z", flags=_set("--zero")),
    Form(
        ("realpath",),
        "prints where paths lead",
        letters="eLmPqsz",
        flags=_set("--canonicalize-existing --canonicalize-missing --logical --physical --quiet --strip --no-symlinks --zero"),
        valued=_set("--relative-to --relative-base"),
        paths=_set("--relative-to --relative-base"),
    ),
    Form(
        ("readlink",),
        "prints where symbolic links lead",
        letters="femnqsvz",
        flags=_set("--canonicalize --canonicalize-existing --canonicalize-missing --no-newline --quiet --silent --verbose --zero"),
    ),
    Form(("which",), "finds programs on the PATH", operands="text", letters="a"),
    Form(
        ("stat",),
        "prints files' metadata",
        letters="fLt",
        flags=_set("--dereference --file-system --terse"),
        valued=_set("-c --format --printf --cached"),
    ),
    Form(
        ("file",),
        "guesses files' types (without -C, which writes a compiled magic file, or -m)",
        letters="bcEhiLkNnprsvz0",
        flags=_set(
            """--brief --debug --extension --mime --mime-type --mime-encoding --keep-going --no-dereference
            --dereference --no-pad --no-buffer --preserve-date --raw --special-files --uncompress --print0"""
        ),
        valued=_set("-F --separator -f --files-from -e --exclude -P --parameter"),
        paths=_set("-f --files-from"),
    ),
    Form(
        ("du",),
        "sums disk usage",
        letters="0abcDhHklLmPsSx",
        flags=_set(
            """--null --all --apparent-size --bytes --total --dereference-args --human-readable --inodes
            --dereference --count-links --no-dereference --separate-dirs --si --summarize --one-file-system --time"""
        ),
        valued=_set("-d --max-depth -B --block-size -t --threshold --exclude --time --time-style"),
    ),
    Form(
        ("df",),
        "shows file systems' free space",
        letters="ahHiklPTv",
        flags=_set("--all --human-readable --si --inodes --local --no-sync --sync --portability --print-type --total"),
        valued=_set("-B --block-size --output -t --type -x --exclude-type"),
    ),
    Form(
        ("tree",),
        "lists a directory tree (without -o, which writes a file)",
        letters="adlfxiqNQprugsDFvtcUJXhCnS",
        flags=_set("--noreport --dirsfirst --filesfirst --du --si --prune --gitignore --inodes --device --fromfile"),
        valued=_set("-L -P -I --charset --filelimit --timefmt --sort -H --ignore-case --matchdirs"),
    ),
    Form(
        ("sort",),
        "sorts lines (without -o, which writes a file, or --compress-program)",
        letters="bdfgiMhnRrVcCmsuz",
        flags=_set(
            """--ignore-leading-blanks --dictionary-order --ignore-case --general-numeric-sort
            --ignore-nonprinting --month-sort --human-numeric-sort --numeric-sort --random-sort --reverse
            --version-sort --check --merge --stable --unique --zero-terminated --debug"""
        ),
        valued=_set("-k --key -t --field-separator -S --buffer-size --parallel --sort --files0-from --random-source"),
        paths=_set("--files0-from --random-source"),
    ),
    Form(
        ("uniq",),
        "drops repeated lines (one input at most: a second operand is a file it writes)",
        letters="cdDiuz",
        flags=_set("--count --repeated --ignore-case --unique --zero-terminated"),
        valued=_set("-f --skip-fields -s --skip-chars -w --check-chars --all-repeated --group"),
        max_operands=1,
    ),
    Form(
        ("cut",),
        "prints parts of lines",
        letters="snz",
        flags=_set("--complement --only-delimited --zero-terminated"),
        valued=_set("-b --bytes -c --characters -f --fields -d --delimiter --output-delimiter"),
    ),
    Form(("tr",), "changes characters of its input", operands="text", letters="cdstC",
         flags=_set("--complement --delete --squeeze-repeats --truncate-set1")),
    Form(
        ("diff",),
        "compares files",
        letters="iEZbwBaNTtlrsquyncpPd",
        numbers=True,
        flags=_set(
            """--normal --brief --report-identical-files --context --unified --ed --rcs --side-by-side
            --left-column --suppress-common-lines --show-c-function --expand-tabs --initial-tab
            --suppress-blank-empty --recursive --no-dereference --new-file --unidirectional-new-file
            --ignore-file-name-case --no-ignore-file-name-case --ignore-case --ignore-tab-expansion
            --ignore-trailing-space --ignore-space-change --ignore-all-space --ignore-blank-lines --text
            --strip-trailing-cr --minimal --speed-large-files --color"""
        ),
        valued=_set(
            """-C -U --context --unified -W --width --tabsize -x --exclude -X --exclude-from -S
            --starting-file --from-file --to-file -I --ignore-matching-lines --label -F
            --show-function-line --color --palette --horizon-lines --line-format
            --old-line-format --new-line-format --unchanged-line-format"""
        ),
        paths=_set("-X --exclude-from --from-file --to-file"),
        recursive=_set("-r --recursive"),
    ),
    Form(("cmp",), "compares files byte by byte", letters="blsz", flags=_set("--print-bytes --verbose --quiet --silent"),
         valued=_set("-i --ignore-initial -n --bytes")),
    Form(("comm",), "compares sorted files", letters="123z", flags=_set("--check-order --nocheck-order --total --zero-terminated"),
         valued=_set("--output-delimiter")),
    # ------------------------------------------------------------------ searching
    *(
        Form(
            (grep,),
            "searches files",
            operands="pattern+paths",
            letters="EFGPiywxvcLlmoqsbHhnTZzrRUaIV",
            numbers=True,
            flags=_set(
                """--extended-regexp --fixed-strings --basic-regexp --perl-regexp --ignore-case --no-ignore-case
                --word-regexp --line-regexp --invert-match --count --files-without-match --files-with-matches
                --only-matching --quiet --silent --no-messages --byte-offset --with-filename --no-filename
                --line-number --initial-tab --null --null-data --recursive --dereference-recursive --text
                --line-buffered --color --colour"""
            ),
            valued=_set(
                """-e --regexp -f --file -m --max-count -A --after-context -B --before-context -C --context
                --include --exclude --exclude-dir --exclude-from --label --binary-files -d --directories
                -D --devices --color --colour --group-separator"""
            ),
            paths=_set("-f --file --exclude-from"),
            recursive=_set("-r -R --recursive --dereference-recursive"),
            follows=_set("-R --dereference-recursive"),
        )
        for grep in ("grep", "egrep", "fgrep")
    ),
    Form(
        ("rg",),
        "searches files (without --pre or --hostname-bin, which run programs, or -z)",
        operands="pattern+paths",
        always_recursive=True,
        letters="iswxvclnNHIopqubFLUP0aSV.",
        numbers=False,
        flags=_set(
            """--ignore-case --smart-case --case-sensitive --word-regexp --line-regexp --invert-match --count
            --count-matches --files-with-matches --files-without-match --files --line-number --no-line-number
            --with-filename --no-filename --only-matching --pretty --quiet --unrestricted --byte-offset
            --fixed-strings --follow --multiline --multiline-dotall --pcre2 --null --null-data --text --hidden
            --no-hidden --no-ignore --no-ignore-vcs --no-ignore-parent --no-ignore-dot --no-ignore-global
            --no-ignore-exclude --no-ignore-files --no-config --no-messages --no-heading --heading --column
            --no-column --json --no-json --vimgrep --trim --stats --passthru --sort-files --binary
            --one-file-system --crlf --glob-case-insensitive --type-list --debug --trace --no-unicode
            --no-require-git --invert-match --search-zip-off --no-search-zip --block-buffered --line-buffered
            --max-columns-preview --include-zero --no-include-zero --auto-hybrid-regex --no-pcre2-unicode"""
        ),
        valued=_set(
            """-e --regexp -f --file -g --glob --iglob -t --type -T --type-not --type-add --type-clear -A
            --after-context -B --before-context -C --context -m --max-count -M --max-columns -d --max-depth
            --max-filesize -j --threads --sort --sortr --color --colors --context-separator
            --field-match-separator --field-context-separator --path-separator -E --encoding --engine
            --ignore-file -r --replace --dfa-size-limit --regex-size-limit --hyperlink-format
            --ignore-file-case-insensitive"""
        ),
        paths=_set("-f --file --ignore-file"),
        follows=_set("-L --follow"),
    ),
    Form(
        ("find",),
        "lists files (only the tests and printing actions of find-expressions.md; no -exec, -delete or -fprint)",
        operands="find",
        letters="HLP",
        follows=_set("-L -H -follow"),
    ),
    Form(
        ("sed",),
        "prints edited lines (without -i or -f; a script of printing commands only: no e, r, R, w, W)",
        operands="script+paths",
        letters="nErsuz",
        flags=_set("--quiet --silent --regexp-extended --separate --unbuffered --null-data --posix --debug --sandbox"),
        valued=_set("-e --expression -l --line-length"),
    ),
    # ------------------------------------------------------------------ git
    Form(
        ("git", "status"),
        "shows the work tree's state",
        letters="sbuvz",
        flags=_set(
            """--short --branch --show-stash --porcelain --long --verbose --untracked-files --ignored
            --no-renames --renames --ahead-behind --no-ahead-behind --column --no-column --null"""
        ),
        valued=_set("--porcelain --untracked-files -u --ignored --ignore-submodules --column --find-renames"),
    ),
    Form(("git", "log"), "shows history", operands="revisions+paths", numbers=True, flags=_GIT_LOG_FLAGS, valued=_GIT_LOG_VALUED),
    Form(("git", "show"), "shows commits and objects", operands="revisions+paths", numbers=True, flags=_GIT_LOG_FLAGS,
         valued=_GIT_LOG_VALUED),
    Form(("git", "diff"), "shows changes", operands="revisions+paths", flags=_GIT_DIFF_FLAGS, valued=_GIT_DIFF_VALUED),
    Form(("git", "shortlog"), "sums up history", operands="revisions+paths", letters="nsec",
         flags=_set("--numbered --summary --email --committer --all --no-merges --merges"),
         valued=_set("--format --group -w --since --until --author")),
    Form(
        ("git", "branch"),
        "lists branches (with only listing options; naming a branch without --list would create it)",
        operands="text",
        operands_only_with=_set("-l --list"),
        letters="arvil",
        flags=_set("--all --remotes --verbose --list --ignore-case --show-current --omit-empty --no-column --column"),
        valued=_set("--contains --no-contains --merged --no-merged --points-at --sort --format --abbrev --color --column"),
    ),
    Form(("git", "tag"), "lists tags (only with -l / --list; a name without it creates one)", operands="text",
         operands_only_with=_set("-l --list"), letters="ln", numbers=True, flags=_set("--list --ignore-case --column --no-column"),
         valued=_set("--contains --no-contains --merged --no-merged --points-at --sort --format --color")),
    Form(("git", "rev-parse"), "resolves names to commits and paths", operands="text",
         flags=_set("""--show-toplevel --show-prefix --show-cdup --git-dir --git-common-dir --absolute-git-dir
         --is-inside-work-tree --is-inside-git-dir --is-bare-repository --is-shallow-repository --abbrev-ref
         --symbolic --symbolic-full-name --verify --quiet -q --short --all --branches --tags --remotes
         --show-superproject-working-tree --show-object-format"""),
         valued=_set("--short --abbrev-ref --path-format --default")),
    Form(("git", "ls-files"), "lists tracked files", letters="cdmoiskuvfteztz",
         flags=_set("""--cached --deleted --modified --others --ignored --stage --killed --unmerged --directory
         --no-empty-directory --eol --full-name --recurse-submodules --error-unmatch --exclude-standard
         --sparse --deduplicate --debug"""),
         valued=_set("-x --exclude -X --exclude-from --exclude-per-directory --abbrev --format --with-tree"),
         paths=_set("-X --exclude-from")),
    Form(("git", "ls-tree"), "lists a tree's entries", operands="revisions+paths", letters="dlrtz",
         flags=_set("--long --name-only --name-status --object-only --full-name --full-tree"),
         valued=_set("--abbrev --format")),
    Form(("git", "blame"), "shows who changed each line (without --contents or -S, which read other files)",
         operands="revisions+paths", letters="bcflnpsteMCw", numbers=False,
         flags=_set("""--root --show-stats --score-debug --show-name --show-number --porcelain --line-porcelain
         --incremental --show-email --minimal --abbrev"""),
         valued=_set("-L --since --abbrev --date --ignore-rev --color-lines --color-by-age")),
    Form(
        ("git", "grep"),
        "searches tracked files (without -O / --open-files-in-pager, which runs a program)",
        operands="pattern+paths",
        always_recursive=True,
        letters="aiIwvhHEGPFnlLcqzorWp",
        numbers=False,
        flags=_set(
            """--cached --exclude-standard --recurse-submodules
            --text --no-textconv --ignore-case --word-regexp --invert-match --full-name
            --extended-regexp --basic-regexp --perl-regexp --fixed-strings --line-number --column
            --files-with-matches --name-only --files-without-match --null --only-matching --count --color
            --no-color --break --heading --show-function --function-context --all-match --quiet"""
        ),
        valued=_set("-e -f -m --max-count --max-depth -A -B -C --after-context --before-context --context --threads --color"),
        paths=_set("-f"),
    ),
    Form(("git", "describe"), "names a commit by its tags", operands="text",
         flags=_set("--all --tags --contains --long --always --first-parent --exact-match --dirty --broken"),
         valued=_set("--abbrev --candidates --match --exclude --dirty --broken")),
    Form(("git", "cat-file"), "prints objects (without --textconv or --filters, which run programs)", operands="text",
         letters="tspe", flags=_set("--allow-unknown-type --mailmap --no-mailmap")),
    Form(("git", "rev-list"), "lists commits", operands="revisions+paths", numbers=True,
         flags=_GIT_LOG_FLAGS | _set("--count --objects --reverse"), valued=_GIT_LOG_VALUED),
    Form(("git", "merge-base"), "finds a common ancestor", operands="text",
         flags=_set("--all --octopus --independent --is-ancestor --fork-point"), letters="a"),
    Form(("git", "show-ref"), "lists references", operands="text",
         flags=_set("--head --heads --tags --branches --dereference --hash --verify --quiet --abbrev"),
         valued=_set("--hash --abbrev"), letters="dsq"),
    Form(("git", "for-each-ref"), "lists references", operands="text",
         flags=_set("--shell --perl --python --tcl --ignore-case --omit-empty --include-root-refs"),
         valued=_set("--count --sort --format --points-at --merged --no-merged --contains --no-contains --exclude")),
    Form(("git", "remote"), "lists remotes (with -v at most: its subcommands change them or reach the network)",
         operands="none", letters="v", flags=_set("--verbose")),
    Form(("git", "stash", "list"), "lists stashes", operands="revisions+paths", flags=_GIT_LOG_FLAGS, valued=_GIT_LOG_VALUED),
    Form(("git", "reflog"), "shows the reference log", operands="text", numbers=True, flags=_GIT_LOG_FLAGS,
         valued=_GIT_LOG_VALUED),
    Form(("git", "reflog", "show"), "shows the reference log", operands="text", numbers=True, flags=_GIT_LOG_FLAGS,
         valued=_GIT_LOG_VALUED),
    Form(("git", "check-ignore"), "tells whether paths are ignored", letters="qvnz",
         flags=_set("--quiet --verbose --non-matching --no-index")),
    Form(("git", "count-objects"), "counts objects", operands="none", letters="vH", flags=_set("--verbose --human-readable")),
    Form(("git", "version"), "prints git's version", operands="none", flags=_set("--build-options")),
)

# git's own options before the subcommand that change nothing of what it runs; `-C DIR` moves
# where it runs (DIR is read as a path).
GIT_GLOBAL_FLAGS = _set(
    "--no-pager -P --no-optional-locks --literal-pathspecs --glob-pathspecs --noglob-pathspecs --icase-pathspecs"
)
GIT_GLOBAL_DIRECTORY = "-C"

# find's expression (find(1)): primaries that only test or print, with how many arguments each
# takes. `-newer` and `-samefile` name a file they read the metadata of. Not here on purpose:
# -exec, -execdir, -ok, -okdir, -delete, -fprint, -fprint0, -fprintf, -fls (run or write).
FIND_PRIMARIES: dict[str, int] = {
    **dict.fromkeys(
        """-name -iname -path -ipath -wholename -iwholename -regex -iregex -lname -ilname -type -xtype
        -maxdepth -mindepth -mtime -atime -ctime -mmin -amin -cmin -newer -anewer -cnewer -size -perm
        -user -group -uid -gid -links -inum -samefile -regextype -printf -used -fstype -context""".split(),
        1,
    ),
    **dict.fromkeys(
        """-empty -readable -writable -executable -nouser -nogroup -print -print0 -prune -quit -true -false
        -depth -xdev -mount -noleaf -follow -ls -daystart -ignore_readdir_race -noignore_readdir_race -not
        ! -a -and -o -or ( ) ,""".split(),
        0,
    ),
}
FIND_FILE_ARGUMENTS = frozenset({"-newer", "-anewer", "-cnewer", "-samefile"})

# sed scripts (sed(1)): the commands that print, select or move text in memory. Not here: e, r,
# R, w, W (run a program, read or write a file), a, i, c, b, t, T and labels (not needed to read).
SED_COMMANDS = frozenset("pPlL=dDnNgGhHxzqQF{}")
SED_SUBSTITUTE_FLAGS = frozenset("gpiImM0123456789")

# Programs that run whatever their arguments say: approving one never covers another run of it,
# so "approve for this session" is not offered for them and they ask each time (command_keys.py).
RUNNERS = frozenset(
    {
        "eval", "source", ".", "exec", "command", "builtin", "env", "sudo", "doas", "su", "runuser",
        "pkexec", "nohup", "timeout", "nice", "ionice", "time", "stdbuf", "setsid", "chrt", "taskset",
        "unbuffer", "watch", "flock", "chroot", "xargs", "parallel", "script", "busybox", "strace",
        "ltrace", "gdb", "valgrind", "uvx", "npx", "bunx", "pnpx", "trap", "fc", "coproc",
    }
)  # fmt: skip
# (program, subcommand) pairs that run another program.
RUNNER_SUBCOMMANDS = frozenset(
    {
        ("uv", "run"), ("uv", "tool"), ("poetry", "run"), ("pipx", "run"), ("npm", "exec"), ("npm", "x"),
        ("pnpm", "exec"), ("pnpm", "dlx"), ("yarn", "dlx"), ("yarn", "exec"), ("bun", "x"), ("go", "run"),
        ("cargo", "run"), ("docker", "run"), ("docker", "exec"), ("podman", "run"), ("podman", "exec"),
        ("kubectl", "exec"), ("kubectl", "run"), ("conda", "run"), ("pdm", "run"), ("hatch", "run"),
        ("bundle", "exec"), ("nix", "run"), ("nix", "shell"), ("nix-shell", "--run"), ("direnv", "exec"),
        ("mise", "exec"), ("mise", "x"), ("asdf", "exec"), ("rye", "run"), ("pixi", "run"), ("deno", "eval"),
        ("git", "submodule"), ("git", "difftool"), ("git", "mergetool"), ("git", "bisect"), ("git", "rebase"),
        ("git", "filter-branch"), ("gh", "extension"), ("dotnet", "run"),
    }
)  # fmt: skip
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "pwsh", "powershell"})
# Interpreters, with the short letters and long options that take code to run.
INLINE_CODE: dict[str, tuple[str, tuple[str, ...]]] = {
    "python": ("c", ()), "node": ("ep", ("--eval", "--print")), "bun": ("ep", ("--eval", "--print")),
    "deno": ("", ("--eval",)), "perl": ("eE", ()), "ruby": ("e", ()), "php": ("rB", ("--run",)), "lua": ("e", ()),
    "osascript": ("e", ()), "awk": ("", ()), "Rscript": ("e", ()), "julia": ("e", ("--eval",)),
}  # fmt: skip
# git options anywhere before the subcommand that run or load a program.
GIT_CODE_OPTIONS = ("-c", "--config-env", "--exec-path")
