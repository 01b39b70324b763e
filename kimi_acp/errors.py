"""The exceptions kimi-acp raises on purpose: one root, a few families, one class per failure.

Every class below `KimiError` carries a message a person can act on (never a key or a token);
the front ends map the families to their own answers (a JSON-RPC error, a one-line CLI message,
an HTTP status). Where a class also subclasses a builtin (`ValueError`, `OSError`), it is because
callers catch it as one.

    KimiError
    ├── ConfigError            config.toml, --config, options: names the file and key
    │   ├── AgentFileError          (here)            an agent file that cannot be used
    │   ├── SkillError              skills/provider   a SKILL.md that cannot be used
    │   ├── FlowError               skills/flow_graph a flow chart that cannot be walked
    │   ├── YamlTextError           util/yaml_text    YAML that does not parse
    │   ├── McpConfigError          mcp/config        an MCP server entry that cannot be used
    │   ├── PluginError             plugins/spec      a plugin.json, source or install that failed
    │   ├── InvalidToolSchema       tools/external    a Wire external tool's parameters schema
    │   ├── SettingError            core/session_controls  a value a session setting cannot take (any front end)
    │   ├── OptionError             frontends/acp     a session config option the session does not have
    │   └── StartupError            frontends/wire    `kimi --wire` options (exit code 2)
    ├── ChatProviderError      the model could not be reached or refused (llm/)
    │   ├── APIConnectionError
    │   │   └── RefreshUnavailable  the OAuth service was unreachable for a refresh (retryable)
    │   ├── APITimeoutError
    │   ├── APIStatusError          an HTTP error status (retryable ones: llm.errors.is_retryable)
    │   │   └── SignInRequired      401 that only signing in again fixes (Wire -32004, ACP auth_required)
    │   └── APIEmptyResponseError
    ├── AccountError           a Kimi account or an MCP server's authorization (auth/, mcp/oauth)
    │   ├── OAuthError              the OAuth service answered something unusable
    │   │   ├── RefreshRejected
    │   │   └── KeyringUnavailable
    │   ├── LockTimeout             the cross-process refresh lock was not free in time
    │   ├── AuthorizationRequired   an MCP server needs `kimi mcp auth NAME`
    │   └── NoAuthorizationNeeded   `kimi mcp auth` connected without being asked to sign in
    ├── SessionError           a turn or session request that cannot run now (core/, sessions)
    │   ├── LLMNotSet, LLMNotSupported
    │   ├── TurnInProgress, NoTurnInProgress, SessionBusy, SessionDeleted
    │   ├── SessionSelectionError   `--session` / `--continue` that names no usable session
    │   ├── ShadowError             core/undo_shadow  git failed on an undo snapshot (the undo says what it lacks)
    │   ├── UnsafePath              core/undo_restore a path undo must not read or write (a link on the way, .git)
    │   └── WebError                a `kimi web` request (carries its HTTP status)
    ├── ToolError              a tool call that failed in a way the model is told about
    │   ├── ToolRejectedError       the user said no
    │   ├── PermissionDenied        a [permissions] deny rule, or --afk facing what always asks
    │   ├── BinaryFileError, EditorRefused, ClientTerminalFailed, TaskElsewhere, ServiceFailure
    │   ├── NotRegularFileError     util/regular_file a FIFO, a device or a socket given as a file
    │   ├── McpCallError, SubagentFailed, QuestionNotSupported
    │   ├── MessageTooLarge         mcp/stdio         an MCP server sent more than one message may hold
    └── ProtocolError          a message that does not follow Wire or JSON-RPC
        ├── JsonRpcError, InvalidResponse
        └── WireDecodeError
    InvalidAnswer (cli/login_common) is a KimiError too: an answer `kimi login` cannot use;
    ScriptError (cli/login_script), an option `kimi login --provider` cannot use, is one.

`tests/test_errors.py` checks that every exception class of the package is in this tree.
"""

from __future__ import annotations


class KimiError(Exception):
    """Root of every error kimi-acp raises on purpose."""


class ConfigError(KimiError):
    """A config that cannot be used; the message is one line and names file and key."""


class AgentFileError(ConfigError, ValueError):
    """An agent file that cannot be used; the message names the file and the key. Here, not in
    agent_file.py, so front ends catch it without importing the agent-file reader."""


class SessionError(KimiError):
    """A turn or session request that cannot run now; front ends map these to their own codes."""


class ToolError(KimiError):
    """A tool call that failed; the model sees the message."""


class PermissionDenied(ToolError):
    """A call refused without asking: a deny rule, or something that always asks under `--afk`.
    The model is told why and goes on (unlike a user's rejection, which ends the turn)."""


class ProtocolError(KimiError):
    """A message that does not follow the protocol."""


class AccountError(KimiError):
    """A sign-in or authorization that cannot be used."""


# -- the model's provider (llm/); here because auth/ raises two of them and llm/ uses auth/


class ChatProviderError(KimiError):
    """Any failure talking to a model. The message is safe to show (never contains a key)."""


class APIConnectionError(ChatProviderError):
    """The server could not be reached or the connection broke mid-stream."""


class APITimeoutError(ChatProviderError):
    """The server did not answer (or stopped streaming) within the timeout."""


class APIStatusError(ChatProviderError):
    """The server answered with an HTTP error status."""

    def __init__(self, status_code: int, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.retry_after = retry_after


class APIEmptyResponseError(ChatProviderError):
    """The stream ended without any text or tool call (an empty or thinking-only reply)."""


SIGN_IN_AGAIN = "Run `kimi login` to sign in again."


class SignInRequired(APIStatusError):
    """The user must sign in again: no token, or one the service refuses and cannot be refreshed.

    An `APIStatusError` with status 401 so that the agent core treats it as a final provider
    error (never retried); the front ends map it to Wire -32004 and ACP `auth_required`.
    """

    def __init__(self, reason: str) -> None:
        text = reason.strip()
        if SIGN_IN_AGAIN not in text:
            text = f"{text.rstrip('.')}. {SIGN_IN_AGAIN}"
        super().__init__(401, text)


class RefreshUnavailable(APIConnectionError):
    """The OAuth service could not be reached to refresh the token; worth retrying later."""
