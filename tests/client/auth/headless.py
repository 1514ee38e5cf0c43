"""The browser step of a login, driven headlessly: an HTTP client with cookies follows the
authorization URL's redirects and submits the provider's login and consent forms, until a
redirect brings it to the client's loopback listener (which ends the login)."""

from __future__ import annotations

import html
import http.cookiejar
import re
import urllib.parse
import urllib.request
from typing import Final

import trio

_FORM: Final = re.compile(r"<form\b[^>]*\baction=\"([^\"]+)\"[^>]*>(.*?)</form>", re.S | re.I)
_INPUT: Final = re.compile(r"<input\b[^>]*>", re.I)
_ATTRIBUTE: Final = re.compile(r"(\w+)=\"([^\"]*)\"")


class HeadlessBrowser:
    """``open_browser=`` for :class:`runtime.client.LoopbackLogin`. ``visits`` counts the
    logins it went through; ``login``: the user name typed into the provider's form."""

    def __init__(self, login: str = "user-42") -> None:
        self.login = login
        self.visits = 0
        self.last_url: str | None = None

    async def __call__(self, url: str) -> None:
        self.visits += 1
        await trio.to_thread.run_sync(self._walk, url)

    def _walk(self, url: str) -> None:
        opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        response = opener.open(url, timeout=10)
        for _ in range(6):  # login, consent (and a spare): never an endless walk
            self.last_url = response.geturl()
            page = response.read().decode("utf-8", "replace")
            form = _FORM.search(page)
            if form is None:
                return  # the loopback listener's page: done
            fields = {}
            for tag in _INPUT.findall(form.group(2)):
                attributes = dict(_ATTRIBUTE.findall(tag))
                name = attributes.get("name")
                if name:
                    fields[name] = html.unescape(attributes.get("value", ""))
            if "login" in fields:
                fields["login"] = self.login
            if "password" in fields:
                fields["password"] = "any password"
            action = urllib.parse.urljoin(response.geturl(), html.unescape(form.group(1)))
            body = urllib.parse.urlencode(fields).encode()
            response = opener.open(action, data=body, timeout=10)
        raise AssertionError(f"the login did not end after 6 forms (at {self.last_url})")
