"""docs/client.md "Log in to a remote server": its program runs as written against the real
OpenID provider (only the browser is headless and the token directory a temporary one)."""

from __future__ import annotations

import functools
import os
import re
import types
from pathlib import Path

import pytest
import trio

import runtime.client

from .headless import HeadlessBrowser
from .oidc_provider import protected_notes

DOCS = Path(__file__).parents[3] / "docs"


def login_block() -> str:
    text = (DOCS / "client.md").read_text()
    section = text[text.index("## Log in to a remote server") :]
    return re.findall(r"^```python\n(.*?)^```", section, flags=re.S | re.M)[0]


async def test_the_documented_program_logs_in_and_calls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = login_block()
    program, run_line = code.rsplit("\n\n\n", 1)
    assert run_line.startswith("trio.run(main, ")
    module = types.ModuleType("docs_login")
    exec(compile(program, "<docs/client.md>", "exec"), module.__dict__)
    browser = HeadlessBrowser()
    module.LoopbackLogin = functools.partial(runtime.client.LoopbackLogin, open_browser=browser)
    module.FileTokenStore = functools.partial(runtime.client.FileTokenStore, tmp_path)
    with trio.fail_after(60):
        async with protected_notes() as (url, _provider):
            await module.main(url)
    assert "'subject': 'user-42'" in capsys.readouterr().out
    assert browser.visits == 1
    assert len(os.listdir(tmp_path)) == 1  # the login was stored
