"""StrReplaceFile: exact string replacements in an existing file, all-or-nothing."""

from __future__ import annotations

from pydantic import Field

from ..wire.types import ToolReturnValue
from .base import Params, Tool, ToolContext, tool_error, tool_ok
from .diff import make_diff_blocks
from .permits import permit_edit
from .read import read_text_or_error, resolve_path
from .write import edit_description, write_or_error

NOT_FOUND_MESSAGE = "No replacements were made. The old string was not found in the file."


class Edit(Params):
    old: str = Field(description="The exact text to replace, including whitespace and indentation.")
    new: str = Field(description="The replacement text.")
    replace_all: bool = Field(
        default=False,
        description="Replace every occurrence. When false only the first occurrence is replaced.",
    )


class StrReplaceFileParams(Params):
    path: str = Field(
        description="Absolute path of the file, or a path relative to the working directory (inside it)."
    )
    edit: Edit | list[Edit] = Field(
        description=(
            "One edit or a list of edits, applied in order (each to the result of the previous ones)."
        )
    )


class StrReplaceFile(Tool[StrReplaceFileParams]):
    name = "StrReplaceFile"
    description = (
        "Edit an existing text file by exact string replacement. Each edit replaces `old` with `new`: the "
        "first occurrence only, or every occurrence with `replace_all: true`. Give one edit or a list; "
        "edits apply in order, each to the result of the previous one, and if any `old` is not found "
        "nothing is written. `old` must match the file exactly (whitespace and indentation included), "
        "so read the file first and include enough surrounding lines to make it unique. The user approves "
        "the resulting diff. Use WriteFile to create files or rewrite them completely."
    )
    params = StrReplaceFileParams

    async def run(self, params: StrReplaceFileParams, ctx: ToolContext) -> ToolReturnValue:
        path = resolve_path(ctx, params.path)
        if isinstance(path, ToolReturnValue):
            return path
        edits = params.edit if isinstance(params.edit, list) else [params.edit]
        if not edits:
            return tool_error("No edits given: `edit` must be an edit or a non-empty list of edits.")
        empty = [i + 1 for i, e in enumerate(edits) if not e.old]
        if empty:
            where = "" if len(edits) == 1 else f" ({_edits(empty)}, counting from 1)"
            return tool_error(
                f"The old string must not be empty{where}. Use WriteFile to write a whole file."
            )

        old_text = await read_text_or_error(ctx, path, what="edited")
        if isinstance(old_text, ToolReturnValue):
            return old_text

        text = old_text
        replacements = 0
        missing: list[int] = []
        notes: list[str] = []
        for index, edit in enumerate(edits, start=1):
            found = text.count(edit.old)
            if found == 0:
                missing.append(index)
                continue
            if edit.replace_all:
                text = text.replace(edit.old, edit.new)
                replacements += found
            else:
                text = text.replace(edit.old, edit.new, 1)
                replacements += 1
                if found > 1:
                    label = "The old string" if len(edits) == 1 else f"The old string of edit {index}"
                    notes.append(
                        f" Note: {label} occurs {found} times; only the first occurrence was replaced "
                        "(set replace_all to replace all)."
                    )
        if missing:
            if len(missing) == len(edits):
                return tool_error(NOT_FOUND_MESSAGE, brief="No replacements made")
            return tool_error(
                f"No replacements were made: the old string of {_edits(missing)} (of {len(edits)}, "
                "counting from 1) was not found in the file after applying the edits before it. The file was "
                "not changed; fix the failing edit(s) and send all edits again.",
                brief="No replacements made",
            )

        blocks = make_diff_blocks(str(path), old_text, text)
        description = edit_description(ctx, "Edit file", path)
        await permit_edit(ctx, path, description, blocks)
        size = await write_or_error(ctx, path, text)
        if isinstance(size, ToolReturnValue):
            return size
        message = f"File successfully edited. Applied {len(edits)} edit(s)"
        message += f" with {replacements} total replacement(s)."
        return tool_ok("", message=message + "".join(notes), display=blocks)


def _edits(numbers: list[int]) -> str:
    label = "edit" if len(numbers) == 1 else "edits"
    return f"{label} {', '.join(str(n) for n in numbers)}"
