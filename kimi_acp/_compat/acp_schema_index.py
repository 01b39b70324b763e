"""Building the index of acp/schema.py that acp_lazy_schema.py creates models from (see there).

Separate because it needs `ast` and a slow parse and compile, once per SDK install, after the
first session; start-up only reads the result (figures: docs/performance.md, Figures that used
to live in the code).
"""

from __future__ import annotations
import __future__

import ast
import logging
import os
import re
import types
from pathlib import Path

from ..util.fs import private_dir
from .acp_lazy_schema import Definition, Index, dump, index_file, read_index, schema_file

log = logging.getLogger(__name__)

# Imported names that become definitions, created when first needed, instead of being imported at
# once: `AnyUrl` is only in annotations (4 models), and importing it runs `pydantic.networks`
# (which imports importlib.metadata and ipaddress, on every start).
LAZY_IMPORTS = frozenset({("pydantic", "AnyUrl")})


def build_index(path: Path) -> Index:
    """Split and compile acp/schema.py."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, str(path))
    flags = __future__.annotations.compiler_flag
    imports: list[types.CodeType] = []
    definitions: list[Definition] = []
    defaults: set[str] = set()
    for statement in tree.body:
        if isinstance(statement, ast.ImportFrom):
            statement, lazy = _split_lazy_imports(statement)
            for alias in lazy:
                lazy_import = ast.ImportFrom(statement.module, [alias], 0, lineno=statement.lineno, col_offset=0)
                code = compile(ast.Module([lazy_import], []), str(path), "exec", flags=flags, dont_inherit=True)
                definitions.append(Definition((alias.asname or alias.name,), (), (), code))
            if not statement.names:
                continue
        code = compile(ast.Module([statement], []), str(path), "exec", flags=flags, dont_inherit=True)
        names = _bound_names(statement)
        if names is None:
            imports.append(code)
            continue
        needs, mentions = _names_used(statement)
        defaults |= _instantiated(statement)
        definitions.append(Definition(names, tuple(sorted(needs - set(names))), tuple(sorted(mentions - needs)), code))
    bound = {name for d in definitions for name in d.names}
    if len(bound) != sum(len(d.names) for d in definitions):
        raise ValueError("a name is bound twice in acp/schema.py")
    return Index(tuple(imports), tuple(definitions), frozenset(defaults & bound))


def _split_lazy_imports(statement: ast.ImportFrom) -> tuple[ast.ImportFrom, list[ast.alias]]:
    """The statement without its LAZY_IMPORTS names, and those names."""
    lazy = [a for a in statement.names if statement.level == 0 and (statement.module, a.name) in LAZY_IMPORTS]
    if not lazy:
        return statement, []
    rest = [a for a in statement.names if a not in lazy]
    return ast.ImportFrom(statement.module, rest, statement.level, lineno=statement.lineno, col_offset=0), lazy


def _bound_names(statement: ast.stmt) -> tuple[str, ...] | None:
    """The names a definition binds; None for imports (run at once). Anything else is refused."""
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return None
    if isinstance(statement, ast.ClassDef):
        return (statement.name,)
    if isinstance(statement, ast.Assign):
        names = [t.id for t in statement.targets if isinstance(t, ast.Name)]
        if len(names) == len(statement.targets):  # names only (no attribute, item or unpacking)
            return tuple(names)
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        return (statement.target.id,)
    raise ValueError(f"unexpected statement at line {statement.lineno} of acp/schema.py")


def _names_used(statement: ast.stmt) -> tuple[set[str], set[str]]:
    """(names loaded when it runs or when its functions run, names in its annotations)."""
    needs: set[str] = set()
    mentions: set[str] = set()

    def names_in(node: ast.AST | None, into: set[str]) -> None:
        if node is None:
            return
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name):
                into.add(sub.id)
            elif into is mentions and isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                into.update(_identifiers(sub.value))  # a quoted forward reference

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.AnnAssign):
            names_in(node.annotation, mentions)
            names_in(node.value, needs)
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                names_in(decorator, needs)
            for default in [*node.args.defaults, *node.args.kw_defaults]:
                names_in(default, needs)
            for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs, node.args.vararg, node.args.kwarg]:
                if arg is not None:
                    names_in(arg.annotation, mentions)
            names_in(node.returns, mentions)
            for inner in node.body:
                names_in(inner, needs)
            return
        if isinstance(node, ast.ClassDef):
            for part in [*node.bases, *node.keywords, *node.decorator_list]:
                names_in(part, needs)
            for inner in node.body:
                visit(inner)
            return
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            return  # a docstring
        names_in(node, needs)

    visit(statement)
    return needs, mentions


def _instantiated(statement: ast.stmt) -> set[str]:
    """Names called in a class body's default values (`field: X = X()`)."""
    found: set[str] = set()
    if isinstance(statement, ast.ClassDef):
        for inner in statement.body:
            value = getattr(inner, "value", None) if isinstance(inner, (ast.AnnAssign, ast.Assign)) else None
            for sub in ast.walk(value) if value is not None else ():
                if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name):
                    found.add(sub.func.id)
    return found


def _identifiers(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", text))


def write_index() -> Path | None:
    """Build and cache the index of the installed acp/schema.py unless it is cached (after the
    first session; atomic, so concurrent servers never read half a file). Errors are logged."""
    path = schema_file()
    if path is None:
        return None
    try:
        target = index_file(path)
        if read_index(path) is not None:
            return target  # cached and readable (a torn or foreign file is written again)
        data = dump(build_index(path))
        private_dir(target.parent)  # 0700, and the share dir too if this made it
        temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        temporary.write_bytes(data)
        os.replace(temporary, target)
        log.info("cached the ACP schema index in %s", target)
        return target
    except (OSError, SyntaxError, ValueError) as exc:
        log.info("ACP schema index not cached: %s", exc)
        return None


