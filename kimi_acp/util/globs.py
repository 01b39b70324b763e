"""Glob patterns as ripgrep and .gitignore write them, as regular expressions (Grep's fallback,
the `[permissions]` rules)."""

from __future__ import annotations

import re


def glob_to_regex(pattern: str) -> str:
    """Translate a gitignore/ripgrep-style glob to a regex: `*`/`?` stop at `/`, `**` crosses it,
    `{a,b}` alternates, `[...]` is a character class."""
    out: list[str] = []
    i, n, depth = 0, len(pattern), 0
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = i + 1
            if j < n and pattern[j] in "!^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            close = pattern.find("]", j)
            if close == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : close]
                negate = body[:1] in ("!", "^")
                body = "".join("\\" + ch if ch in "\\[]&~|^" else ch for ch in body[negate:])
                out.append("[" + ("^" if negate else "") + body + "]")
                i = close
        elif c == "{":
            depth += 1
            out.append("(?:")
        elif c == "}" and depth:
            depth -= 1
            out.append(")")
        elif c == "," and depth:
            out.append("|")
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    out.extend(")" * depth)
    return "".join(out)
