"""The pytest plugin (entry point ``pytest11``): an ``mcp_client`` fixture for your server.

    # conftest.py
    import pytest
    from myserver import app

    @pytest.fixture
    def mcp_server():
        return app

    # test_myserver.py (pytest-trio; trio_mode = true, or mark tests with @pytest.mark.trio)
    async def test_add(mcp_client):
        assert (await mcp_client.call_tool("add", {"a": 1, "b": 2})).text == "3"

    @pytest.mark.mcp_client(protocol_version="2026-07-28")
    async def test_add_modern(mcp_client): ...

The marker's keywords go to :func:`runtime.testing.open_client`. The fixture is an async
generator, which pytest-trio runs (this module does not import pytest-trio: a project that
installs mcp-runtime without it still starts pytest cleanly).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Generator
from typing import Any

import pytest

__all__ = ["mcp_client", "mcp_server", "pytest_configure", "pytest_runtest_call"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "mcp_client(**options): keyword arguments for runtime.testing.open_client, used by "
        "the mcp_client fixture (protocol_version, capabilities, elicitation, sampling, "
        "roots, on_request, initialize)",
    )


@pytest.fixture
def mcp_server() -> Any:
    """The Server under test: override this fixture in your conftest.py or test module."""
    raise pytest.UsageError(
        "the mcp_client fixture needs a fixture named 'mcp_server' that returns your "
        "runtime.Server; define it in conftest.py"
    )


@pytest.fixture
async def mcp_client(request: pytest.FixtureRequest, mcp_server: Any) -> AsyncIterator[Any]:
    """A :class:`runtime.testing.TestClient` connected to ``mcp_server`` in memory, with the
    handshake done (or a stateless 2026-07-28 client, by marker)."""
    from runtime.testing import open_client

    marker = request.node.get_closest_marker("mcp_client")
    options: dict[str, Any] = dict(marker.kwargs) if marker is not None else {}
    async with open_client(mcp_server, **options) as client:
        yield client


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """A test that uses ``mcp_client`` fails with its own exception: pytest-trio runs the
    test in the nursery that holds its async fixtures, and trio wraps a failure there in an
    ExceptionGroup; a failed ``assert`` should read as one plain AssertionError."""
    try:
        return (yield)
    except BaseExceptionGroup as group:
        leaf = _single_leaf(group) if "mcp_client" in getattr(item, "fixturenames", ()) else None
        if leaf is None:
            raise
        raise leaf.with_traceback(leaf.__traceback__) from None


def _single_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    import trio

    leaves: list[BaseException] = []

    def walk(exc: BaseException) -> None:
        if isinstance(exc, BaseExceptionGroup):
            for inner in exc.exceptions:
                walk(inner)
        elif not isinstance(exc, trio.Cancelled):
            leaves.append(exc)

    walk(group)
    return leaves[0] if len(leaves) == 1 else None
