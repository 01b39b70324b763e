"""asyncio imported without `ssl` (kimi_acp/_compat/asyncio_without_ssl.py): nothing loads OpenSSL at start-up,
and the first `import ssl` gives asyncio its module back, so TLS over asyncio works as usual.
Each case runs in a fresh interpreter (the import happens once per process)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
import trustme

pytestmark = pytest.mark.smoke  # also run in CI's smoke jobs (.ci/run)


def run(code: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_asyncio_comes_without_ssl_and_gets_it_on_first_import():
    out = run(
        """
        import json, sys
        from kimi_acp._compat.asyncio_without_ssl import import_asyncio_without_ssl
        import_asyncio_without_ssl()
        import asyncio.sslproto
        before = {"ssl_loaded": "ssl" in sys.modules, "sslproto_ssl": asyncio.sslproto.ssl is None}
        try:
            asyncio.sslproto.SSLProtocol(None, None, None, None)
        except Exception as exc:
            before["without"] = str(exc)
        import ssl
        after = [m for m in ("asyncio.base_events", "asyncio.selector_events", "asyncio.sslproto") if sys.modules[m].ssl is not ssl]
        finders = [type(f).__name__ for f in sys.meta_path]
        print(json.dumps({"before": before, "not_given": after, "finders": finders,
                          "loader": type(ssl.__spec__.loader).__name__}))
        """
    )
    assert out["before"]["ssl_loaded"] is False
    assert out["before"]["sslproto_ssl"] is True
    assert "ssl" in out["before"]["without"]  # asyncio's own "stdlib ssl module not available"
    assert out["not_given"] == []
    assert "_SslFinder" not in out["finders"]  # gone once its job is done
    assert out["loader"] == "SourceFileLoader"  # ssl looks found the usual way


def test_tls_over_asyncio_after_the_deferred_import(tmp_path):
    """A real TLS server and client on loopback, both through asyncio, in a process that
    imported asyncio without ssl."""
    ca = trustme.CA()
    cert = ca.issue_cert("localhost")
    cert.private_key_and_cert_chain_pem.write_to_path(str(tmp_path / "server.pem"))
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    out = run(
        """
        import json, sys
        from kimi_acp._compat.asyncio_without_ssl import import_asyncio_without_ssl
        asyncio = import_asyncio_without_ssl()
        assert "ssl" not in sys.modules
        import ssl

        async def main(server_pem, ca_pem):
            server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            server_ctx.load_cert_chain(server_pem)
            client_ctx = ssl.create_default_context(cafile=ca_pem)

            async def echo(reader, writer):
                writer.write((await reader.readline()).upper())
                await writer.drain()
                writer.close()

            server = await asyncio.start_server(echo, "127.0.0.1", 0, ssl=server_ctx)
            port = server.sockets[0].getsockname()[1]
            reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_ctx, server_hostname="localhost")
            writer.write(b"hello over tls\\n")
            await writer.drain()
            line = await reader.readline()
            version = writer.get_extra_info("ssl_object").version()
            writer.close()
            server.close()
            await server.wait_closed()
            return line.decode(), version

        line, version = asyncio.run(main(sys.argv[1], sys.argv[2]))
        print(json.dumps({"line": line, "version": version}))
        """,
        str(tmp_path / "server.pem"),
        str(tmp_path / "ca.pem"),
    )
    assert out["line"] == "HELLO OVER TLS\n"
    assert out["version"].startswith("TLS")


def test_ssl_is_hidden_only_from_the_thread_importing_asyncio():
    """Another thread importing `ssl` meanwhile gets the real module (and asyncio then gets that)."""
    out = run(
        """
        import json, sys, threading
        from kimi_acp._compat.asyncio_without_ssl import _SslFinder

        other = threading.Thread(target=lambda: None)
        other.start(); other.join()
        hidden_here = _SslFinder(hidden_from=threading.get_ident())
        sys.meta_path.insert(0, hidden_here)
        try:
            import ssl
            here = "imported"
        except ModuleNotFoundError as exc:
            here = str(exc)
        hidden_here.leave()
        sys.meta_path.insert(0, _SslFinder(hidden_from=other.ident))
        import ssl
        print(json.dumps({"here": here, "elsewhere": hasattr(ssl, "SSLContext"),
                          "left": not any(isinstance(f, _SslFinder) for f in sys.meta_path)}))
        """
    )
    assert out == {"here": "ssl is imported when first used", "elsewhere": True, "left": True}
