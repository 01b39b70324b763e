"""A stand-in for a web browser, for tests of code that opens one with Python's `webbrowser`.

    BROWSER="<python> /work/main/tests/fakes/browser.py %s"      webbrowser.open() waits for it
    BROWSER="<python> /work/main/tests/fakes/browser.py %s &"    webbrowser.open() returns at once

It GETs the URL given as argv[1] with urllib, following redirects (so an authorization server's
302 lands on the client's loopback callback, which is what a user's browser does after "Allow"),
and exits 0; on an HTTP error or a connection failure it writes one line to stderr and exits 1.
Before fetching, it appends the URL, one per line, to the file named by FAKE_BROWSER_LOG (if set).
Proxies from the environment are ignored: every URL a test hands it is a loopback one.
FAKE_BROWSER_TIMEOUT (seconds, default 30) bounds each request. With FAKE_BROWSER_DENY=1 it plays a
user who clicks "Deny" on an OAuth authorization page: instead of fetching the URL it goes straight
to the URL's `redirect_uri` with `error=access_denied` and the URL's `state`.

How `webbrowser` runs it (CPython 3.11, this venv's, on Linux): a BROWSER entry that contains
`%s` is split with shlex and run as a `GenericBrowser`, which *waits* for the command to finish and
counts only exit status 0 as success (on failure `webbrowser.open` goes on to the next registered
browser: xdg-open, www-browser, … when installed and DISPLAY / TERM are set). With a trailing `&`
it is a `BackgroundBrowser`: started in a new session and not waited for. In the waiting form the
caller is blocked until this script has had the callback's answer, so the callback must be served
by another thread or process than the one calling `webbrowser.open` (from asyncio:
`await asyncio.to_thread(webbrowser.open, url)`); an asyncio callback server on the blocked loop
deadlocks until FAKE_BROWSER_TIMEOUT, then `webbrowser.open` returns False. Or use the `&` form.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.parse
import urllib.request

__all__ = ["main"]


def _log(url: str) -> None:
    path = os.environ.get("FAKE_BROWSER_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(url + "\n")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: browser.py URL", file=sys.stderr)
        return 2
    url = args[0]
    _log(url)
    if os.environ.get("FAKE_BROWSER_DENY") == "1":
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
        answer = {"error": "access_denied", "error_description": "the user said no", "state": query.get("state", [""])[0]}
        url = query["redirect_uri"][0] + "?" + urllib.parse.urlencode(answer)
    timeout = float(os.environ.get("FAKE_BROWSER_TIMEOUT", "30"))
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=timeout) as response:
            response.read()
    except urllib.error.HTTPError as e:
        body = e.read().decode("utf-8", "replace").strip()
        print(f"fake browser: HTTP {e.code} from {e.url}: {body}", file=sys.stderr)
        return 1
    except (urllib.error.URLError, OSError, ValueError) as e:
        print(f"fake browser: cannot open {url}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
