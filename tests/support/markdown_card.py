"""A card's Markdown as a CommonMark renderer (an IDE) reads it: its code blocks and code spans, what
it would hide (raw HTML), and its plain text. Tests use it to check a card shows what runs."""

from __future__ import annotations

from dataclasses import dataclass, field

from markdown_it import MarkdownIt

_PARSER = MarkdownIt("commonmark")


@dataclass
class Rendered:
    code_blocks: list[str] = field(default_factory=list)  # the content of each fenced or indented block
    code_spans: list[str] = field(default_factory=list)
    html: list[str] = field(default_factory=list)  # raw HTML a renderer would hide or interpret
    markup: list[str] = field(default_factory=list)  # emphasis, links, images, headings the text made
    text: str = ""  # the plain text outside code
    blocks: list[str] = field(default_factory=list)  # the block structure: ["paragraph_open", ...]


def render(markdown: str) -> Rendered:
    seen = Rendered()
    texts: list[str] = []
    for token in _PARSER.parse(markdown):
        if token.nesting == 1 or token.type in ("fence", "code_block", "html_block", "hr"):
            seen.blocks.append(token.type)
        if token.type in ("fence", "code_block"):
            seen.code_blocks.append(token.content)
        elif token.type == "html_block":
            seen.html.append(token.content)
        elif token.type.startswith("heading"):
            seen.markup.append(token.type)
        for child in token.children or []:
            if child.type == "code_inline":
                seen.code_spans.append(child.content)
            elif child.type == "html_inline":
                seen.html.append(child.content)
            elif child.type == "text":
                texts.append(child.content)
            elif child.type.endswith("_open") or child.type == "image":
                seen.markup.append(child.type)
    seen.text = " ".join(texts)
    return seen
