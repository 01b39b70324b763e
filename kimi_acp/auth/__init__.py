"""Kimi accounts: OAuth tokens for providers and services configured with `oauth = {storage, key}`.

Compatible with Kimi Code CLI's login: the same credentials file
(`$KIMI_SHARE_DIR/credentials/<name>.json`), the same device headers, the same OAuth host and
override variables, the same config entries. The modules, each with one job:

- `kimi_code`: the service's constants (client id, hosts, base URL, config names).
- `tokens`: the token record and where it is stored (file, OS keyring).
- `device`: the `X-Msh-*` headers the service expects on every request.
- `lock`: the lock file that lets several processes refresh without spending a token twice.
- `oauth_client`: the HTTP calls to the OAuth service (device authorization, token, refresh).
- `source`: what a provider asks for its `Authorization` header; refreshes when needed.
- `device_flow`: signing in from a terminal (`kimi login`).
- `sign_out`: signing out: the tokens and the account's config entries go (`kimi logout`, ACP `logout`).
- `account`: the state of a login without its secrets (`kimi info`, the ACP sign-in gate).
- `services`: the account's token for the web services (SearchWeb, FetchURL) configured with `oauth`.
- `errors`: why an account cannot be used, in messages that never hold a token.

Nothing here imports httpx at module level except `oauth_client`, which only refreshing and
signing in load.
"""
