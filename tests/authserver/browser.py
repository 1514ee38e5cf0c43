"""A person's browser, as far as an OAuth login needs one: GET and form POSTs over real
sockets, cookies kept per host and port, redirects followed until they leave the servers we
run (the client's loopback redirect URI, where nobody listens). No script runs (none of the
pages has any)."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urlencode, urljoin, urlsplit

from tests.transports.http_client import Response


@dataclass
class Form:
    action: str
    method: str
    fields: dict[str, str] = field(default_factory=dict)
    #: (name, value) of each submit button
    buttons: list[tuple[str, str]] = field(default_factory=list)


class _Forms(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.forms: list[Form] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        if tag == "form":
            self.forms.append(
                Form(attributes.get("action", ""), attributes.get("method", "get").lower())
            )
        elif tag == "input" and self.forms:
            kind = attributes.get("type", "text")
            if kind == "submit":
                self.forms[-1].buttons.append(
                    (attributes.get("name", ""), attributes.get("value", ""))
                )
            elif "name" in attributes:
                self.forms[-1].fields[attributes["name"]] = attributes.get("value", "")
        elif tag == "button" and self.forms:
            self.forms[-1].buttons.append((attributes.get("name", ""), attributes.get("value", "")))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def forms(page: bytes) -> tuple[list[Form], str]:
    parser = _Forms()
    parser.feed(page.decode("utf-8"))
    return parser.forms, " ".join(parser.text)


class Browser:
    def __init__(self, served: set[int]) -> None:
        #: ports of the servers this browser can reach (ours, the provider's)
        self.served = served
        self.jar: dict[int, dict[str, str]] = {}

    def _headers(self, port: int, extra: dict[str, str]) -> dict[str, str]:
        cookies = self.jar.get(port, {})
        headers = {"accept": "text/html", "content-type": None, **extra}
        if cookies:
            headers["cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
        return headers  # type: ignore[return-value]

    def _keep(self, port: int, response: Response, raw: list[tuple[str, str]]) -> None:
        for name, value in raw:
            if name != "set-cookie":
                continue
            pair = value.split(";", 1)[0]
            key, _, content = pair.partition("=")
            attributes = value.lower()
            if "max-age=0" in attributes or "expires=thu, 01 jan 1970" in attributes:
                self.jar.setdefault(port, {}).pop(key.strip(), None)
            else:
                self.jar.setdefault(port, {})[key.strip()] = content.strip()

    async def fetch(
        self, method: str, url: str, body: bytes = b"", headers: dict[str, str] | None = None
    ) -> Response:
        parts = urlsplit(url)
        port = parts.port or 80
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        extra = dict(headers or {})
        if body:
            extra["content-type"] = "application/x-www-form-urlencoded"
        from tests.transports.http_client import connect

        conn = await connect((parts.hostname or "127.0.0.1", port))
        try:
            await conn.send(method, target, headers=self._headers(port, extra), body=body)
            event = await conn._event()
            raw = [(k.decode().lower(), v.decode()) for k, v in event.headers]
            response = Response(event.status_code, dict(raw))
            response.body = await conn.body()
        finally:
            await conn.aclose()
        self._keep(port, response, raw)
        return response

    async def go(
        self, url: str, *, method: str = "GET", fields: dict[str, str] | None = None
    ) -> tuple[str, Response | None]:
        """Load ``url`` (or submit ``fields`` to it) and follow redirects. Returns the URL
        where it stopped and the response there (None: a redirect out of the served ports,
        e.g. to the client's redirect URI)."""
        body = urlencode(fields).encode() if fields is not None else b""
        for _ in range(20):
            parts = urlsplit(url)
            if parts.port not in self.served:
                return url, None
            response = await self.fetch(method, url, body)
            if response.status in (301, 302, 303, 307, 308):
                url = urljoin(url, response.headers["location"])
                if response.status in (301, 302, 303):
                    method, body = "GET", b""
                continue
            return url, response
        raise AssertionError("too many redirects")

    async def submit(
        self, page_url: str, response: Response, choose: tuple[str, str] | None = None, **fill: str
    ) -> tuple[str, Response | None]:
        """Submit the page's first form: its fields, ``fill`` over them, and the button
        ``choose`` (name, value) or the first."""
        found, _ = forms(response.body)
        assert found, response.body.decode()[:2000]
        form = found[0]
        values = {**form.fields, **fill}
        button = choose or (form.buttons[0] if form.buttons else None)
        if button and button[0]:
            values[button[0]] = button[1]
        action = urljoin(page_url, form.action or page_url)
        return await self.go(action, method=form.method.upper(), fields=values)


def text_of(response: Any) -> str:
    return forms(response.body)[1]
