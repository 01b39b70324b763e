"""Tool naming (clash rules) and the mapping of MCP results, on SDK result objects."""

from __future__ import annotations

import base64

from mcp import types

from kimi_acp.mcp.naming import MAX_NAME_CHARS, assign_names, sanitize
from kimi_acp.mcp.results import ERROR_MESSAGE, convert_result
from kimi_acp.wire.types import ImageURLPart, TextPart

PNG_B64 = base64.b64encode(b"\x89PNG fake").decode()


def test_own_name_when_free_prefixed_when_taken_or_shared() -> None:
    names = assign_names(
        {"git": ["status", "log", "Shell"], "web": ["fetch", "log"], "db": ["query"]},
        reserved={"Shell", "ReadFile"},
    )
    assert names == {
        ("git", "status"): "status",
        ("git", "log"): "mcp__git__log",  # two servers offer `log`: both are prefixed
        ("web", "log"): "mcp__web__log",
        ("git", "Shell"): "mcp__git__Shell",  # a built-in keeps its name
        ("web", "fetch"): "fetch",
        ("db", "query"): "query",
    }


def test_names_do_not_depend_on_server_order() -> None:
    one = assign_names({"a": ["x", "y"], "b": ["y", "z"]}, reserved=())
    two = assign_names({"b": ["y", "z"], "a": ["x", "y"]}, reserved=())
    assert one == two


def test_provider_safe_names() -> None:
    assert sanitize("21st_magic") == "n21st_magic"  # Kimi Code CLI's rule
    assert sanitize("get-weather.v2") == "get_weather_v2"
    names = assign_names({"my server": ["a-b", "a_b"]}, reserved=())
    assert set(names.values()) == {"mcp__my_server__a_b", "mcp__my_server__a_b_2"}
    long = assign_names({"s" * 50: ["t" * 50, "t" * 50 + "x"], "o": ["t" * 50]}, reserved=())
    assert all(len(n) <= MAX_NAME_CHARS for n in long.values())
    assert len(set(long.values())) == 3


def _result(*content: object, is_error: bool = False, structured: dict | None = None) -> types.CallToolResult:
    return types.CallToolResult(content=list(content), isError=is_error, structuredContent=structured)  # type: ignore[arg-type]


def test_text_image_and_resources() -> None:
    result = _result(
        types.TextContent(type="text", text="hello"),
        types.ImageContent(type="image", data=PNG_B64, mimeType="image/png"),
        types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(uri="file:///a.txt", mimeType="text/plain", text="inside"),
        ),
        types.EmbeddedResource(
            type="resource",
            resource=types.BlobResourceContents(uri="file:///b.png", mimeType="image/png", blob=PNG_B64),
        ),
        types.EmbeddedResource(
            type="resource",
            resource=types.BlobResourceContents(uri="file:///c.bin", mimeType="application/zip", blob="AAAA"),
        ),
        types.ResourceLink(type="resource_link", uri="https://x/doc", name="doc", description="the docs"),
    )
    with_images = convert_result(result, capabilities={"image_in"})
    assert not with_images.is_error
    parts = with_images.output
    assert isinstance(parts, list)
    assert parts[0] == TextPart(text="hello")
    assert isinstance(parts[1], ImageURLPart) and parts[1].image_url.url == f"data:image/png;base64,{PNG_B64}"
    assert parts[2] == TextPart(text='<resource uri="file:///a.txt">\ninside\n</resource>')
    assert isinstance(parts[3], ImageURLPart)
    assert (
        isinstance(parts[4], TextPart)
        and "binary resource" in parts[4].text
        and "application/zip" in parts[4].text
    )
    assert parts[5] == TextPart(text="[resource link: doc https://x/doc] the docs")

    without = convert_result(result, capabilities=set())
    assert isinstance(without.output, str)  # no image left: one text
    assert "image/png image of about" in without.output and "does not accept images" in without.output
    assert "data:image" not in without.output


def test_error_result_and_structured_only() -> None:
    err = convert_result(_result(types.TextContent(type="text", text="bad input"), is_error=True))
    assert err.is_error and err.output == "bad input" and err.message == ERROR_MESSAGE
    structured = convert_result(_result(structured={"answer": 42}))
    assert structured.output == '{"answer": 42}'


def test_output_is_capped() -> None:
    big = convert_result(_result(types.TextContent(type="text", text="line\n" * 10_000)), max_chars=1000)
    assert isinstance(big.output, str) and len(big.output) < 1100 and big.output.endswith("[...truncated]")
    assert "truncated" in big.message
    mixed = convert_result(
        _result(
            types.TextContent(type="text", text="a" * 800),
            types.ImageContent(type="image", data=PNG_B64, mimeType="image/png"),
            types.TextContent(type="text", text="b" * 800),
        ),
        capabilities={"image_in"},
        max_chars=1000,
    )
    assert isinstance(mixed.output, list)
    texts = [p.text for p in mixed.output if isinstance(p, TextPart)]
    assert sum(len(t) for t in texts) <= 1000 + len("[...truncated]")
    assert any(isinstance(p, ImageURLPart) for p in mixed.output)


def test_a_huge_answer_is_capped_part_by_part_and_images_share_a_budget() -> None:
    """Issue #30: a 16 MiB text of short lines is cut without being split or joined whole (the
    join used to copy it, `splitlines` made millions of strings); images beyond the result's image
    budget become a note."""
    import tracemalloc

    huge = "\n" * (16 << 20)
    tracemalloc.start()
    try:
        capped = convert_result(_result(*[types.TextContent(type="text", text=huge)] * 2), max_chars=1000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 << 20, peak  # far below one copy of the text
    assert isinstance(capped.output, str) and len(capped.output) <= 1000 + len("[...truncated]")
    assert "truncated" in capped.message
    images = [types.ImageContent(type="image", data="A" * 600, mimeType="image/png") for _ in range(3)]
    result = convert_result(_result(*images), capabilities={"image_in"}, max_media_chars=1300)
    assert isinstance(result.output, list)
    assert [type(p).__name__ for p in result.output] == ["ImageURLPart", "ImageURLPart", "TextPart"]
    assert "the result's images exceed 1300 characters of base64" in result.output[2].text
    assert "truncated" in result.message
