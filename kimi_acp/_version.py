"""The version of kimi-acp, in one place at the bottom of the package (standard library only, no
imports): what pyproject.toml builds the distribution with, what the servers, the CLI, the
User-Agent and the MCP and OAuth clients say. Every module reads it from here, never from the
package root (the public façade) or from installed metadata (which a source tree lacks)."""

__version__ = "0.1.0"
