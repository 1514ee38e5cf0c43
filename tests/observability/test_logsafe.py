"""The log-safe renderings (``runtime.framing.loggable``, ``escape_json_text``) and the
request log's allow-list (``runtime.middleware.redact``, ``redact_url``), property by
property; tests/observability/test_logs.py has them over the real wire."""

from __future__ import annotations

import ast
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from runtime.framing import escape_json_text, loggable
from runtime.middleware import DEFAULT_LOG_FIELDS, redact, redact_url


def test_redact_url() -> None:
    assert redact_url("https://u:p@host:8443/a/b?x=1&y#top") == (
        "https://host:8443/a/b?x=[REDACTED]&[REDACTED]#[REDACTED]"
    )
    assert redact_url("notes://welcome") == "notes://welcome"
    assert redact_url("file:///tmp/a b") == "file:///tmp/a b"
    assert redact_url("postgres://admin@db/x") == "postgres://db/x"
    assert redact_url("not a url") == "not a url"


def test_redact_is_an_allow_list() -> None:
    params: dict[str, Any] = {
        "name": "t",
        "cursor": "c1",
        "arguments": {"anything": "v", "n": 1, "list": ["a", {"deep": "d"}]},
        "_meta": {"progressToken": 5, "other": "o"},
    }
    assert redact(params) == {
        "name": "t",
        "cursor": "c1",
        "arguments": {
            "anything": "[REDACTED]",
            "n": "[REDACTED]",
            "list": ["[REDACTED]", {"deep": "[REDACTED]"}],
        },
        "_meta": {"progressToken": 5, "other": "[REDACTED]"},
    }
    wide = redact(params, fields=(*DEFAULT_LOG_FIELDS, "arguments"))
    assert wide["arguments"] == params["arguments"]
    assert redact({"arguments": {"Session-Key": "x"}}, fields=("arguments",)) == {
        "arguments": {"Session-Key": "[REDACTED]"}
    }


def test_loggable() -> None:
    assert loggable("tools/call") == "tools/call"
    assert loggable("x\nFORGED line") == '"x\\nFORGED line"'
    assert loggable("two words") == '"two words"'
    assert loggable("") == '""'
    assert loggable('q"\\') == '"q\\"\\\\"'
    assert loggable("caf\u00e9") == '"caf\u00e9"'
    assert loggable("\x1b[2J\x85\u2028\u202e\u00a0") == '"\\x1b[2J\\x85\\u2028\\u202e\\xa0"'
    assert loggable("a" * 300) == "a" * 200 + "..."
    assert loggable(42) == "42"


@given(st.text())
def test_loggable_is_one_field_of_one_line(text: str) -> None:
    out = loggable(text)
    assert len(out.splitlines()) <= 1 and out.isprintable()
    assert out == text or (out.startswith('"') and out.endswith('"'))
    if out.startswith('"') and len(text) <= 200:
        # Unambiguous: the text reads back (every escape is a Python string escape).
        assert ast.literal_eval(out) == text


@given(
    st.recursive(
        st.text() | st.integers(), lambda kids: st.lists(kids) | st.dictionaries(st.text(), kids)
    )
)
def test_escape_json_text_keeps_the_value_on_one_line(value: Any) -> None:
    out = escape_json_text(json.dumps(value, ensure_ascii=False))
    assert json.loads(out) == value
    assert len(out.splitlines()) == 1 and out.isprintable()
