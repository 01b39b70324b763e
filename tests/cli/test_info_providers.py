"""`kimi info` shows the OpenAI Responses, Gemini and Vertex AI providers (issue #23), and for
Vertex AI where its project, location and credentials come from, never a key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kimi_acp.cli.info import print_info

CONFIG = {
    "default_model": "g",
    "models": {
        "r": {"provider": "responses", "model": "gpt-5", "max_context_size": 400000},
        "g": {"provider": "gemini", "model": "gemini-2.5-pro", "max_context_size": 1048576, "capabilities": ["thinking"]},
        "v": {"provider": "vertex", "model": "gemini-2.5-pro", "max_context_size": 1048576},
    },
    "providers": {
        "responses": {"type": "openai_responses", "base_url": "https://api.openai.com/v1", "api_key": "sk-info-secret-123456"},
        "gemini": {"type": "google_genai", "base_url": "https://generativelanguage.googleapis.com", "api_key": "AIza-info-secret-1"},
        "vertex": {
            "type": "vertexai",
            "base_url": "https://europe-west4-aiplatform.googleapis.com",
            "env": {"GOOGLE_CLOUD_PROJECT": "proj-7", "GOOGLE_APPLICATION_CREDENTIALS": "/keys/sa.json"},
        },
    },
}


def test_info_lists_the_new_provider_types(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_CLOUD_LOCATION", raising=False)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIG))
    assert print_info(str(path), as_json=False) == 0
    out = capsys.readouterr().out
    assert "  r: gpt-5 via responses, context 400000" in out
    assert "  responses: type openai_responses, base_url https://api.openai.com/v1, api key set" in out
    assert "  gemini: type google_genai, base_url https://generativelanguage.googleapis.com, api key set" in out
    assert (
        "  vertex: type vertexai, base_url https://europe-west4-aiplatform.googleapis.com, api key not set, "
        "project proj-7, location (from base_url, else global), credentials: /keys/sa.json (GOOGLE_APPLICATION_CREDENTIALS)"
    ) in out
    assert "secret" not in out
    assert print_info(str(path), as_json=True) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["providers"]["vertex"]["vertex"].startswith("project proj-7")
