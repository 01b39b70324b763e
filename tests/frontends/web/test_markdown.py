"""The model's Markdown in `kimi web`, in headless Chromium (see test_browser.py for the browser).

The replies come from a loopback OpenAI-compatible server (tests/fakes/openai_server.py) that
streams them in the chunks given, through the `openai_legacy` provider of a real `kimi web`: the
`_scripted_echo` DSL has one line per text part, so it cannot send the newlines Markdown needs.
The renderer itself (`window.kimiMarkdown`, kimi_acp/frontends/web/static/markdown.js) is also checked
table-driven on the page.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from tests.fakes.openai_server import FakeLLMServer, Stream, chunk
from tests.frontends.web.conftest import StartWeb, WebServer

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


def reply(*pieces: str, delay: float = 0.0) -> Stream:
    """One streamed answer: a content chunk per piece."""
    return Stream([chunk(content=p) for p in pieces] + [chunk(finish_reason="stop")], delay=delay)


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def start_on(start_web: StartWeb, llm: FakeLLMServer, *replies: Stream) -> WebServer:
    llm.enqueue(*replies)
    return start_web([], config_keys={
        "default_model": "fake",
        "models": {"fake": {"provider": "fake", "model": "fake-model", "max_context_size": 100_000}},
        "providers": {"fake": {"type": "openai_legacy", "base_url": llm.base_url, "api_key": "sk-test"}},
        "session": {"generate_titles": False},  # the fake server's replies are the conversation's
    })  # fmt: skip


def ask(page: Any, text: str) -> Any:
    """Send a prompt, wait for the turn to end; the last answer's locator."""
    from playwright.sync_api import expect

    expect(page.locator("#state")).to_have_text("idle")
    count = page.get_by_test_id("user-message").count()
    page.fill("#prompt", text)
    page.press("#prompt", "Enter")
    expect(page.get_by_test_id("user-message")).to_have_count(count + 1)
    expect(page.locator("#state")).to_have_text("idle")
    return page.locator(".run").last.get_by_test_id("answer").last


EVERYTHING = """\
# Title one
## Title two
### Title three

Some **bold**, some *italic*, some `inline code`, a [link](https://example.com/docs) and
a second line.

```python
def add(a, b):
    return a + b
```

- apples
- pears
  - green
  - red
1. first
2. second

> A quoted line.

| name | size |
|:-----|-----:|
| one  | 1    |
| two  | 22   |

---

The end."""


def check_everything(answer: Any) -> None:
    from playwright.sync_api import expect

    for tag, text in (("h1", "Title one"), ("h2", "Title two"), ("h3", "Title three")):
        expect(answer.locator(tag)).to_have_text(text)
    expect(answer.locator("p strong")).to_have_text("bold")
    expect(answer.locator("p em")).to_have_text("italic")
    expect(answer.locator("p > code")).to_have_text("inline code")
    link = answer.locator("a")
    expect(link).to_have_count(1)
    expect(link).to_have_text("link")
    expect(link).to_have_attribute("href", "https://example.com/docs")
    expect(link).to_have_attribute("rel", "noopener noreferrer")
    expect(link).to_have_attribute("target", "_blank")
    expect(answer.locator("p br")).to_have_count(1)
    code = answer.locator("pre > code.language-python")
    expect(code).to_have_text("def add(a, b):\n    return a + b")
    expect(answer.locator("pre")).to_have_count(1)
    expect(answer.locator("ul > li")).to_have_count(4)
    expect(answer.locator("ul > li > ul > li")).to_have_text(["green", "red"])
    expect(answer.locator("ol > li")).to_have_text(["first", "second"])
    expect(answer.locator("blockquote")).to_have_text("A quoted line.")
    expect(answer.locator("table th")).to_have_text(["name", "size"])
    expect(answer.locator("table td")).to_have_text(["one", "1", "two", "22"])
    expect(answer.locator("table th").last).to_have_class("align-right")
    expect(answer.locator("hr")).to_have_count(1)
    expect(answer.locator("p").last).to_have_text("The end.")


def test_reply_markdown_renders_each_construct(start_web: StartWeb, browser_page: Any, llm: FakeLLMServer) -> None:
    server = start_on(start_web, llm, reply(*pieces(EVERYTHING, 37)))
    page = browser_page
    page.goto(server.url)
    check_everything(ask(page, "Show me Markdown"))

    # The copy button copies the code block's text.
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    answer = page.get_by_test_id("answer").last
    answer.locator(".md-copy").click()
    assert page.evaluate("navigator.clipboard.readText()") == "def add(a, b):\n    return a + b"

    page.reload()  # replayed from the session's history: the same elements
    check_everything(page.get_by_test_id("answer").last)


INJECTION = [
    "Look: <img src=x onerror=\"alert('img')\"> and <script>alert('script')</script>\n\n",
    "[click me](javascript:alert('link')) [data](data:text/html,<script>alert(1)</script>) ",
    "<javascript:alert('auto')> [rel](/static/app.js) ![pic](http://127.0.0.1:9/x.png)\n\n",
    '<a href="javascript:alert(\'a\')">raw</a> **<b>bold</b>**',
]


def test_reply_injection_shows_as_text(start_web: StartWeb, browser_page: Any, llm: FakeLLMServer) -> None:
    from playwright.sync_api import expect

    server = start_on(start_web, llm, reply(*INJECTION))
    page = browser_page
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(server.url)
    answer = ask(page, "Try to break out")
    expect(answer).to_contain_text("Look: <img src=x onerror=\"alert('img')\"> and <script>alert('script')</script>")
    expect(answer).to_contain_text("<a href=\"javascript:alert('a')\">raw</a>")
    expect(answer.locator("strong")).to_have_text("<b>bold</b>")
    assert answer.locator("img, script, b, iframe, [onerror]").count() == 0
    # Only the image became a link (to an http URL, not loaded); the others are text.
    expect(answer.locator("a")).to_have_count(1)
    expect(answer.locator("a")).to_have_attribute("href", "http://127.0.0.1:9/x.png")
    expect(answer.locator(".md-nolink")).to_have_text(["click me", "data", "rel"])
    answer.get_by_text("click me").click()
    answer.locator(".md-nolink").nth(2).click()
    expect(answer).to_contain_text("<javascript:alert('auto')>")
    page.wait_for_timeout(200)
    assert dialogs == []
    assert not [url for url in requests if "x.png" in url or url.startswith(("javascript:", "data:"))]
    assert page.evaluate("document.querySelectorAll('#transcript script, #transcript img').length") == 0


LONG = "\n".join(f"Line {n} of a long answer." for n in range(80))
SPLIT = ["Before the code.\n\n``", "`python\nprint(", "1)\n", "print(2)\n`", "``\n\nAfter the code."]
# Each render while streaming, as the answer's HTML (recorded by a MutationObserver).
RECORD = """() => {
  const seen = window.seenAnswers = [];
  new MutationObserver(() => {
    const answers = document.querySelectorAll("[data-testid=answer]");
    if (answers.length > 1) seen.push(answers[answers.length - 1].innerHTML);
  }).observe(document.getElementById("transcript"), { childList: true, subtree: true, characterData: true });
}"""


def test_code_fence_split_across_chunks_streams_as_one_block(
    start_web: StartWeb, browser_page: Any, llm: FakeLLMServer
) -> None:
    from playwright.sync_api import expect

    server = start_on(start_web, llm, reply(LONG), reply(*SPLIT, delay=0.15))
    page = browser_page
    page.goto(server.url)
    ask(page, "A long answer")
    transcript = page.locator("#transcript")
    at_bottom = "t => t.scrollHeight - t.scrollTop - t.clientHeight < 2"
    assert transcript.evaluate("t => t.scrollHeight > t.clientHeight + 200")
    assert transcript.evaluate(at_bottom)  # it followed the answer

    page.evaluate(RECORD)
    page.fill("#prompt", "Now some code")
    page.press("#prompt", "Enter")
    answer = page.locator(".run").last.get_by_test_id("answer")
    # An unclosed fence is an open code block (checked at every frame: it is open for a moment).
    page.wait_for_function(
        "() => [...document.querySelectorAll('.md-code.open pre > code.language-python')].some((c) => c.textContent.startsWith('print('))",
        polling="raf",
    )
    answer.locator("p").first.evaluate("p => { p.marked = true; }")
    answer.locator(".md-code").evaluate("b => { b.marked = true; }")
    transcript.evaluate("t => { t.scrollTop = 0; }")  # the reader scrolls up while it streams

    expect(page.locator("#state")).to_have_text("idle")
    expect(answer.locator("pre")).to_have_count(1)
    expect(answer.locator(".md-code.open")).to_have_count(0)
    expect(answer.locator("pre > code.language-python")).to_have_text("print(1)\nprint(2)")
    expect(answer.locator("p")).to_have_text(["Before the code.", "After the code."])
    # Re-rendered in place: the blocks that were there are the same nodes; the reader's place kept.
    assert answer.locator("p").first.evaluate("p => p.marked === true")
    assert answer.locator(".md-code").evaluate("b => b.marked === true")
    assert transcript.evaluate("t => t.scrollTop") == 0
    seen = page.evaluate("window.seenAnswers")
    assert any("md-code open" in html for html in seen)
    assert all(html.count("<pre>") <= 1 for html in seen)  # never split into two blocks
    assert not any("After the code" in html and "md-code open" in html for html in seen)


CODE_HEAD = '<div class="md-code-head"><span class="md-lang">{}</span><button class="md-copy" type="button" title="Copy the code">Copy</button></div>'
LINK = '<a href="{}" rel="noopener noreferrer" target="_blank">{}</a>'
NOLINK = '<span class="md-nolink" title="Not a link (only http, https and mailto links are): {}">{}</span>'
CASES: Sequence[tuple[str, str]] = [
    ("", ""),
    ("plain", "<p>plain</p>"),
    ("one\ntwo\n\nthree", "<p>one<br>two</p><p>three</p>"),
    ("# a\n## b\n### c\n#### d\n#no", "<h1>a</h1><h2>b</h2><h3>c</h3><h4>d</h4><p>#no</p>"),
    ("Setext\n===", "<h1>Setext</h1>"),
    ("## Closed ##\n# C#\n### ###", "<h2>Closed</h2><h1>C#</h1><h3></h3>"),
    ("**b** *i* __b__ _i_ ***bi*** ~~s~~", "<p><strong>b</strong> <em>i</em> <strong>b</strong> <em>i</em> <em><strong>bi</strong></em> <del>s</del></p>"),
    ("snake_case_name 2*3*4 **unclosed", "<p>snake_case_name 2<em>3</em>4 **unclosed</p>"),
    ("\\*not\\* \\`x\\`", "<p>*not* `x`</p>"),
    ("`a<b>` ``x ` y``", "<p><code>a&lt;b&gt;</code> <code>x ` y</code></p>"),
    ("```js\nlet a = 1;\n\n  b();\n```", '<div class="md-code">' + CODE_HEAD.format("js") + '<pre><code class="language-js">let a = 1;\n\n  b();</code></pre></div>'),
    ("```py\nopen", '<div class="md-code open">' + CODE_HEAD.format("py") + '<pre><code class="language-py">open</code></pre></div>'),
    ("~~~\nx\n~~~", '<div class="md-code">' + CODE_HEAD.format("") + "<pre><code>x</code></pre></div>"),
    ('```"><img src=x>\nx\n```', '<div class="md-code">' + CODE_HEAD.format('"&gt;&lt;img') + "<pre><code>x</code></pre></div>"),
    ("    indented", '<div class="md-code">' + CODE_HEAD.format("") + "<pre><code>indented</code></pre></div>"),
    ("- a\n- b\n  - c\n    - d", "<ul><li>a</li><li>b<ul><li>c<ul><li>d</li></ul></li></ul></li></ul>"),
    ("1. a\n2. b\n   1. c", "<ol><li>a</li><li>b<ol><li>c</li></ol></li></ol>"),
    ("3) x\n4) y", '<ol start="3"><li>x</li><li>y</li></ol>'),
    ("- a\n\n- b", "<ul><li><p>a</p></li><li><p>b</p></li></ul>"),
    ("* one\n+ two", "<ul><li>one</li></ul><ul><li>two</li></ul>"),
    ("- [x] done", '<ul><li class="md-task"><input type="checkbox" disabled=""> done</li></ul>'),
    ("text\n2. not a list", "<p>text<br>2. not a list</p>"),
    ("> q\nlazy\n> > deeper", "<blockquote><p>q<br>lazy</p><blockquote><p>deeper</p></blockquote></blockquote>"),
    ("a\n\n---\n***", "<p>a</p><hr><hr>"),
    ("| a | b |\n|:-:|--|\n| 1 \\| 2 | *x* |\n| 3 |", '<div class="md-table"><table><thead><tr><th class="align-center">a</th><th>b</th></tr></thead><tbody><tr><td class="align-center">1 | 2</td><td><em>x</em></td></tr><tr><td class="align-center">3</td><td></td></tr></tbody></table></div>'),
    ("| not | a table |\n| --- |", "<p>| not | a table |<br>| --- |</p>"),
    ("[t](https://e.com/a_(b) \"title\")", "<p>" + LINK.format("https://e.com/a_(b)", "t") + "</p>"),
    ("[**b**](http://e.com)", "<p>" + LINK.format("http://e.com/", "<strong>b</strong>") + "</p>"),
    ("<https://e.com> <me@e.com> see https://e.com/x.", "<p>" + LINK.format("https://e.com/", "https://e.com") + " " + LINK.format("mailto:me@e.com", "me@e.com") + " see " + LINK.format("https://e.com/x", "https://e.com/x") + ".</p>"),
    ("[x](javascript:alert(1))", "<p>" + NOLINK.format("javascript:alert(1)", "x") + "</p>"),
    ("[x](JaVaScRiPt:alert(1)) [y](vbscript:x) [z](file:///etc/passwd)", "<p>" + NOLINK.format("JaVaScRiPt:alert(1)", "x") + " " + NOLINK.format("vbscript:x", "y") + " " + NOLINK.format("file:///etc/passwd", "z") + "</p>"),
    ("[x](#hash) [y](//e.com) [z](rel/path)", "<p>" + NOLINK.format("#hash", "x") + " " + NOLINK.format("//e.com", "y") + " " + NOLINK.format("rel/path", "z") + "</p>"),
    ("[x](<javascript:alert(1)>) [y](java&#115;cript:x)", "<p>" + NOLINK.format("javascript:alert(1)", "x") + " " + NOLINK.format("javascript:x", "y") + "</p>"),
    ("<javascript:alert(1)>", "<p>&lt;javascript:alert(1)&gt;</p>"),
    ("![a](https://e.com/i.png)", '<p><a class="md-image" href="https://e.com/i.png" rel="noopener noreferrer" target="_blank" title="Image (not loaded): https://e.com/i.png">a</a></p>'),
    ('<img src=x onerror="alert(1)"> <script>x</script>', '<p>&lt;img src=x onerror="alert(1)"&gt; &lt;script&gt;x&lt;/script&gt;</p>'),
    ("&lt;b&gt; &amp;amp; &#60;i&#x3e; &bogus; `&lt;`", "<p>&lt;b&gt; &amp;amp; &lt;i&gt; &amp;bogus; <code>&amp;lt;</code></p>"),
    ("<div>\n<b>x</b>\n</div>", "<p>&lt;div&gt;<br>&lt;b&gt;x&lt;/b&gt;<br>&lt;/div&gt;</p>"),
]


def test_renderer_cases(start_web: StartWeb, browser_page: Any) -> None:
    from playwright.sync_api import expect

    server = start_web([])
    page = browser_page
    page.goto(server.url)
    expect(page.locator("#state")).to_have_text("idle")
    got = page.evaluate("cases => cases.map((text) => window.kimiMarkdown.toHTML(text))", [text for text, _ in CASES])
    wrong = [(text, html, want) for (text, want), html in zip(CASES, got, strict=True) if html != want]
    assert not wrong, "\n".join(f"{text!r}\n  got  {html}\n  want {want}" for text, html, want in wrong)
    # Re-rendering in place equals rendering afresh, chunk by chunk, for every case.
    mismatched = page.evaluate(
        """cases => cases.filter((text) => {
             const node = document.createElement("div");
             for (let i = 1; i <= text.length; i++) {
               window.kimiMarkdown.renderInto(node, text.slice(0, i));
               if (node.innerHTML !== window.kimiMarkdown.toHTML(text.slice(0, i))) return true;
             }
             return false;
           })""",
        [text for text, _ in CASES] + [EVERYTHING],
    )
    assert mismatched == []


# Untrusted text that would take quadratic time (or worse) in a naive parser.
HOSTILE = [
    "[a](" * 5000, "[" * 20000, "_a_ " * 5000, "*a " * 6000, "` " * 10000, "# a" + " " * 20000 + "b",
    "|-" + " " * 20000 + "x", "https://a" + "." * 20000 + "x", "<a" * 10000, "- a\n" * 5000, "- a\n" + "b\n" * 10000,
    ">" * 5000 + " deep", "".join("  " * i + "- x\n" for i in range(300)), "[a](<" * 5000, '[a](x "' * 5000, "[a](x (" * 5000,
]


def test_renderer_is_fast_on_hostile_text(start_web: StartWeb, browser_page: Any) -> None:
    from playwright.sync_api import expect

    server = start_web([])
    page = browser_page
    page.goto(server.url)
    expect(page.locator("#state")).to_have_text("idle")
    took = page.evaluate(
        """texts => texts.map((text) => {
             const start = performance.now();
             window.kimiMarkdown.toHTML(text);
             return performance.now() - start;
           })""",
        HOSTILE,
    )
    slow = [(text[:12], round(ms)) for text, ms in zip(HOSTILE, took, strict=True) if ms > 1000]  # at most ~100 ms here
    assert not slow
