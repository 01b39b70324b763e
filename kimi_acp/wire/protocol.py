"""Wire protocol constants (the vocabulary's version and our server name), standard library only."""

from __future__ import annotations

WIRE_PROTOCOL_VERSION = "1.10"
WIRE_PROTOCOL_LEGACY_VERSION = "1.1"
SERVER_NAME = "kimi-acp"
