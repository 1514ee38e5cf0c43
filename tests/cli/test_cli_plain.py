"""``mcp-runtime serve`` reads its plain arguments without argparse (``_plain_serve``, issue
22 target 6): whatever it reads, argparse reads the same; whatever it declines, argparse reads
(or reports). These tests compare the two on the forms users and the benchmark suite type and
on generated argument lists.
"""

from __future__ import annotations

import contextlib
import io
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.cli._flags import FLAGS as _FLAGS
from runtime.cli._flags import build_parser
from runtime.cli._flags import plain_serve as _plain_serve


def _argparse_reading(arguments: list[str]) -> dict[str, Any] | None:
    """argparse's namespace for ``arguments``, or None when it refuses them."""
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        try:
            return vars(build_parser(tools=False).parse_args(arguments))
        except SystemExit:
            return None


def _plain_reading(arguments: list[str]) -> dict[str, Any] | None:
    found = _plain_serve(arguments)
    return None if found is None else vars(found)


PLAIN = [
    # The benchmark suite's stdio and HTTP command lines (benchmarks/run.py).
    ["serve", "benchmarks/servers/mcp_runtime_server.py", "--log-level", "warning"],
    ["serve", "s.py", "--transport", "http", "--port", "8000", "--log-level", "warning"],
    ["serve", "pkg.mod:app"],
    ["serve", "--log-level=DEBUG", "s.py"],
    ["serve", "s.py", "--max-in-flight", "9", "--request-timeout=2.5", "--framing=content-length"],
    ["serve", "s.py", "--transport", "unix", "--socket", "/tmp/x.sock", "--workers", "2"],
    ["serve", "s.py", "--host=", "--port", "0", "--transport", "tcp", "--transport", "ws"],
    ["serve", "s.py", "--store", "redis://h:1/0", "--allowed-origins", "https://a,https://b"],
    ["serve", "http://127.0.0.1:9/mcp", "--upstream-era", "modern", "--upstream-retries", "0"],
]


@pytest.mark.parametrize("arguments", PLAIN)
def test_plain_forms_are_read_as_argparse_reads_them(arguments: list[str]) -> None:
    plain = _plain_reading(arguments)
    assert plain is not None  # read without argparse
    assert plain == _argparse_reading(arguments)


DECLINED = [
    ["serve"],  # no TARGET: argparse says so
    ["serve", "a.py", "b.py"],
    ["serve", "s.py", "--log", "debug"],  # an abbreviation
    ["serve", "s.py", "--port"],  # a missing value
    ["serve", "s.py", "--port", "-1"],
    ["serve", "s.py", "--port", "x"],  # a value that does not convert
    ["serve", "s.py", "--port", "70000"],
    ["serve", "s.py", "--log-level", "loud"],  # not a choice
    ["serve", "s.py", "--metrics"],  # an optional value
    ["serve", "s.py", "--middleware", "m:mw"],
    ["serve", "--help"],
    ["serve", "s.py", "--", "x"],
    ["--version"],
    ["list", "s.py"],
]


@pytest.mark.parametrize("arguments", DECLINED)
def test_anything_else_is_left_to_argparse(arguments: list[str]) -> None:
    assert _plain_serve(arguments) is None


def test_the_middleware_variable_is_read_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_RUNTIME_MIDDLEWARE", "a:one,,b:two")
    arguments = ["serve", "s.py"]
    plain = _plain_reading(arguments)
    assert plain is not None and plain["middleware"] == ["a:one", "b:two"]
    assert plain == _argparse_reading(arguments)


_OPTIONS = [f"--{flag.name}" for flag in _FLAGS] + ["--middleware", "--log", "--por", "-h", "--"]
_VALUES = [
    "s.py",
    "t.py",
    "",
    "0",
    "8",
    "-3",
    "1.5",
    "nan",
    "x",
    "http",
    "stdio",
    "DEBUG",
    "warning",
    "ndjson",
    "auto",
    "/metrics",
    "-x",
    "redis://h:1/0",
]
_TOKENS = st.one_of(
    st.sampled_from(_OPTIONS),
    st.sampled_from(_VALUES),
    st.builds(lambda o, v: f"{o}={v}", st.sampled_from(_OPTIONS), st.sampled_from(_VALUES)),
)


_FULL = [f"--{flag.name}" for flag in _FLAGS]


@st.composite
def _flag_lists(draw: st.DrawFn) -> list[str]:
    """Mostly plain command lines: full flags with values (valid or not), a TARGET
    somewhere, now and then a stray token."""
    tokens: list[str] = []
    for _ in range(draw(st.integers(0, 5))):
        option, value = draw(st.sampled_from(_FULL)), draw(st.sampled_from(_VALUES))
        tokens += [f"{option}={value}"] if draw(st.booleans()) else [option, value]
    tokens.insert(draw(st.integers(0, len(tokens))), draw(st.sampled_from(["s.py", "m:app"])))
    if draw(st.integers(0, 9)) == 0:
        tokens.insert(draw(st.integers(0, len(tokens))), draw(_TOKENS))
    return tokens


@settings(max_examples=1000, deadline=None)
@given(st.one_of(st.lists(_TOKENS, max_size=7), _flag_lists()))
def test_generated_arguments_are_never_read_differently(tokens: list[str]) -> None:
    arguments = ["serve", *tokens]
    plain = _plain_reading(arguments)
    if plain is not None:
        assert plain == _argparse_reading(arguments)
