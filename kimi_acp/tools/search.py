"""SearchWeb: a web search through Kimi's search service (`[services.moonshot_search]`).

Offered only when that service is configured (the session's config, read from `ToolEnv.services`),
as in Kimi Code CLI. Same request and rendering as Kimi: POST `{text_query, limit,
enable_page_crawling, timeout_seconds}`, answer `{"search_results": [{site_name, title, url,
snippet, content?, date?, ...}]}`, each result given to the model as `Title/Date/URL/Summary`
lines (plus the page content when asked), results separated by `---`. No approval (Kimi asks
none): it reads, it changes nothing.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..llm.types import ToolSpec
from ..util.visible_text import code_span
from ..wire.types import ToolReturnValue
from .base import Params, Tool, ToolContext, ToolEnv, cap_output, tool_error, tool_ok
from .permits import permit_fetch, url_host

log = logging.getLogger(__name__)

NAME = "SearchWeb"
SERVICE_TIMEOUT_S = 30  # what the service is asked to keep to (`timeout_seconds`)
# The service may take its 30 s and then answer a large body: read a little longer than that.
# (connect, read, write, pool): httpx.Timeout's tuple form, so httpx loads only when a search runs
TIMEOUT = (15.0, SERVICE_TIMEOUT_S + 15.0, 30.0, 30.0)
MAX_RESULT_LINE = 20_000  # page content comes as long paragraphs: cut only absurd lines

DESCRIPTION = """Search the web for up-to-date information: documentation, release notes, error messages, news.

- Returns a list of results, each with its title, date, URL and a summary.
- Keep queries specific; if the results miss what you need, refine the query rather than asking for more results.
- Set `include_content` to get each result page's text too. It costs many tokens: use it with a small `limit`.
- To read one of the pages in full, fetch its URL with FetchURL.
"""


class SearchWebParams(Params):
    query: str = Field(description="The text to search for.")
    limit: int = Field(
        default=5,
        ge=1,
        le=20,
        description=(
            "How many results to return. The default is usually right; when the results lack what you "
            "need, a more precise query helps more than a larger limit."
        ),
    )
    include_content: bool = Field(
        default=False,
        description=(
            "Whether to include the text of each result page. This can use a lot of tokens; avoid it "
            "together with a large `limit`."
        ),
    )


class _Result(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)  # built at the first answer, not at start-up

    site_name: str = ""
    title: str
    url: str
    snippet: str = ""
    content: str = ""
    date: str = ""


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)  # built at the first answer, not at start-up

    search_results: list[_Result]


def _service(env: ToolEnv) -> Any:
    """The session config's `[services.moonshot_search]`, or None."""
    return getattr(env.services, "moonshot_search", None) if env.services is not None else None


class SearchWeb(Tool[SearchWebParams]):
    name = NAME
    description = DESCRIPTION
    params = SearchWebParams

    def offer(self, env: ToolEnv) -> ToolSpec | None:
        """Offered only with `[services.moonshot_search]` configured (Kimi skips the tool otherwise)."""
        return self.spec() if _service(env) is not None else None

    async def run(self, params: SearchWebParams, ctx: ToolContext) -> ToolReturnValue:
        from .web_service import ServiceFailure, post  # first use only: not at start-up

        service = _service(ctx.env)
        if not params.query.strip():
            return tool_error("The search query cannot be empty.", brief="Empty query")
        if service is None:
            return _not_configured()
        host = url_host(str(service.base_url))
        await permit_fetch(ctx, str(service.base_url), f"Search the web for {code_span(params.query)} (the query goes to {code_span(host)})")
        payload = {
            "text_query": params.query,
            "limit": params.limit,
            "enable_page_crawling": params.include_content,
            "timeout_seconds": SERVICE_TIMEOUT_S,
        }
        try:
            reply = await post(service, ctx.tool_call_id, payload, timeout=TIMEOUT)
        except ServiceFailure as failure:
            if failure.kind == "not_configured":
                return _not_configured()
            if failure.kind == "timeout":
                return tool_error(
                    f"Failed to search: {failure.message}. The search service may be slow or overloaded; "
                    "try again, or search with fewer results or without page content.",
                    brief="Search timed out",
                )
            log.warning("SearchWeb: the search service is unreachable: %s", failure.message)
            return tool_error(
                f"Failed to search due to network error: {failure.message}. "
                "This may indicate the search service is unreachable.",
                brief="Network error",
            )
        if reply.status != 200:
            log.warning("SearchWeb: the search service answered HTTP %d", reply.status)
            excerpt = reply.error_excerpt()
            return tool_error(
                f"Failed to search. Status: {reply.status}. "
                "This may indicate that the search service is currently unavailable."
                + (f" The service said: {excerpt}" if excerpt else ""),
                brief="Failed to search",
            )
        try:
            answer = _Answer.model_validate(json.loads(reply.body))
        except (ValueError, ValidationError) as exc:
            reason = _parse_problem(exc)
            log.warning("SearchWeb: unreadable answer from the search service: %s", reason)
            return tool_error(
                f"Failed to parse search results: {reason}. "
                "This may indicate that the search service is currently unavailable.",
                brief="Failed to parse search results",
            )
        if not answer.search_results:
            return tool_ok("", message="No results found. Try a different or less specific query.",
                           brief="No results")
        text, truncated = cap_output(render_results(answer.search_results), max_line=MAX_RESULT_LINE)
        count = len(answer.search_results)
        message = f"Found {count} result{'s' if count != 1 else ''}."
        if truncated:
            message += " The output was truncated; lower `limit` or leave out `include_content` for all of it."
        return tool_ok(text, message=message)


def render_results(results: list[_Result]) -> str:
    """The results as the model reads them (Kimi's layout): fields on lines, `---` between results."""
    blocks: list[str] = []
    for result in results:
        block = f"Title: {result.title}\nDate: {result.date}\nURL: {result.url}\nSummary: {result.snippet}\n\n"
        if result.content:
            block += f"{result.content}\n\n"
        blocks.append(block)
    return "---\n\n".join(blocks)


def _not_configured() -> ToolReturnValue:
    return tool_error(
        "Search service is not configured. You may want to try other methods to search.",
        brief="Search service not configured",
    )


def _parse_problem(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "the answer"
        return f"{where}: {first.get('msg', 'invalid')}"
    return f"the answer is not JSON ({exc})"
