"""``mcp-runtime dev --store redis://...``: a handshake-era HTTP session outlives a reload
(the next version finds it in a real redis-server), with the official SDK client as the
peer across a real edit of the served file."""

from __future__ import annotations

from pathlib import Path

from ..cli.test_dev_sessions import across_a_reload


async def test_a_session_in_the_store_survives_a_reload(tmp_path: Path, redis_url: str) -> None:
    seen, stderr = await across_a_reload(tmp_path, "--store", redis_url)
    assert seen["before"] == "5"
    # The same session, served by the new version (its new code).
    assert seen.get("same_session") == "105", seen
    assert "new_session" not in seen
    assert "Traceback" not in stderr
