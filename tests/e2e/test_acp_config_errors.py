"""Config typos reach the IDE at `session/new` as the loader's one-line error, not at the first prompt."""

from __future__ import annotations

import acp
import pytest

from tests.support.acp_fixtures import acp_env
from tests.support.inmemory import serve_acp

TYPOS = {
    "unknown_type": (
        '[providers.foo]\ntype = "openai"\nbase_url = "https://api.openai.com/v1"\n',
        "providers.foo.type: unknown provider type 'openai' (expected one of kimi, openai_legacy, openai_responses, anthropic, gemini, vertexai)",
    ),
    "base_url_without_scheme": (
        '[providers.foo]\ntype = "kimi"\nbase_url = "api.moonshot.cn/v1"\n',
        "providers.foo.base_url: 'api.moonshot.cn/v1' has no scheme (write 'https://api.moonshot.cn/v1'",
    ),
}
MODEL = '[models.m]\nprovider = "foo"\nmodel = "some-model"\nmax_context_size = 1000\n'


@pytest.mark.parametrize("case", sorted(TYPOS))
async def test_session_new_reports_the_config_error_in_one_line(share, project, case: str) -> None:
    text, fragment = TYPOS[case]
    path = share / "config.toml"
    path.write_text('default_model = "m"\n' + text + MODEL)
    async with serve_acp(acp_env(share)) as agent:
        await agent.initialize()
        with pytest.raises(acp.RequestError) as caught:
            await agent.new_session(project)
    error = caught.value
    message = str(error.args[0]) if error.args else ""
    assert error.code == -32603
    expected = f"invalid config in {path} at {fragment}"
    assert message.startswith("Invalid configuration: " + expected), message
    assert "\n" not in message and "_echo" not in message
    assert expected in error.data["error"]
