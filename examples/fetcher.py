"""Fetch a web page for the model, with progress and cancellation.

The download streams: each chunk sends ``notifications/progress`` (bytes so far, of
``Content-Length`` when the server gives one), so the client can show a bar. If the client
cancels (``notifications/cancelled``) or the request times out, trio cancels the tool at its
next ``await`` and the ``async with`` closes the socket: nothing keeps downloading.

The HTTP/1.1 client is a few lines of trio (TLS through ``trio.SSLStream``), to keep the
example free of dependencies; a real server might use httpx with its trio backend.

Run it:  mcp-runtime serve examples/fetcher.py
"""

from __future__ import annotations

import ssl
from urllib.parse import urlsplit

import trio

from runtime import Context, Server, ToolError

app = Server("fetcher", "1.0.0", instructions="Fetch web pages as text.")

#: Downloads stop at this many bytes (a model cannot use more, and memory stays bounded).
MAX_BYTES = 1024 * 1024
#: Seconds for the whole download.
TIMEOUT = 30.0


async def _open(scheme: str, host: str, port: int) -> trio.abc.Stream:
    stream: trio.abc.Stream = await trio.open_tcp_stream(host, port)
    if scheme == "https":
        stream = trio.SSLStream(stream, ssl.create_default_context(), server_hostname=host)
    return stream


def _head(data: bytes) -> tuple[int, dict[str, str]]:
    lines = data.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    fields = (line.partition(":") for line in lines[1:])
    return status, {name.strip().lower(): value.strip() for name, _, value in fields}


@app.tool(annotations={"readOnlyHint": True, "openWorldHint": True})
async def fetch(url: str, ctx: Context, max_bytes: int = MAX_BYTES) -> str:
    """Download a URL and return its body as text (UTF-8, undecodable bytes replaced).

    Args:
        url: An http or https URL.
        max_bytes: Stop after this many bytes of body (at most 1 MiB).
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ToolError(f"not an http(s) URL: {url}")
    limit = max(1, min(max_bytes, MAX_BYTES))
    port = parts.port or (443 if parts.scheme == "https" else 80)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    with trio.move_on_after(TIMEOUT) as timeout:
        async with await _open(parts.scheme, parts.hostname, port) as stream:
            request = (
                f"GET {target} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
                "User-Agent: mcp-runtime-fetcher\r\nConnection: close\r\n\r\n"
            )
            await stream.send_all(request.encode())
            buffer = b""
            while b"\r\n\r\n" not in buffer:
                chunk = await stream.receive_some(65536)
                if not chunk or len(buffer) > 64 * 1024:
                    raise ToolError(f"{url}: no valid HTTP response")
                buffer += chunk
            head, _, body = buffer.partition(b"\r\n\r\n")
            status, headers = _head(head)
            if status >= 400:
                raise ToolError(f"{url}: HTTP {status}")
            length = headers.get("content-length")
            total = min(int(length), limit) if length and length.isdigit() else None
            await ctx.report_progress(len(body), total, "downloading")
            while len(body) < limit:
                chunk = await stream.receive_some(65536)  # cancellation lands here
                if not chunk:
                    break
                body += chunk
                await ctx.report_progress(min(len(body), limit), total, "downloading")
    if timeout.cancelled_caught:
        raise ToolError(f"{url}: no complete answer within {TIMEOUT:g} s")
    truncated = len(body) > limit
    text = body[:limit].decode("utf-8", errors="replace")
    return text + (f"\n[truncated at {limit} bytes]" if truncated else "")


if __name__ == "__main__":
    app.run()
