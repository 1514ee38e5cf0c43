"""``mcp-runtime dev TARGET --transport stdio``: reload behind a stdio client.

The client talks to this supervisor's stdin/stdout (NDJSON, one message per line); each
version of the server is a child process behind it. The supervisor remembers the client's
``initialize`` (and ``notifications/initialized``); a new child is first probed with a
``ping`` (any answer: it loaded and reads), then given that same handshake under an id of
the supervisor's own, whose answer the client never sees. Only then does it take the
client's messages; the old child gets end-of-input, answers what it still had in flight
(relayed as usual) and exits. The client is then told ``notifications/{tools,prompts,
resources}/list_changed`` (for the kinds the server advertises so) and its session goes on
as if nothing happened. Limits: NDJSON framing only; an answer the client sends to a
server-to-client request of the old child reaches the new one (which ignores it).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any, Final

import msgspec
import trio

from ._dev import START_TIMEOUT, STOP_TIMEOUT, roots_of, say, watcher

__all__ = ["MAX_LINE", "run_stdio_dev", "serve_stdio_dev"]

#: Bytes in one NDJSON message between the client and the server (the runtime's default
#: ``Limits.max_frame_size``); a longer line ends the session with a logged reason.
MAX_LINE: Final = 4 * 1024 * 1024
_PRIVATE: Final = "mcp-runtime-dev:"
_LIST_KINDS: Final = ("tools", "prompts", "resources")


async def _lines(stream: trio.abc.ReceiveStream) -> AsyncIterator[bytes]:
    buffer = b""
    while True:
        data = await stream.receive_some(65536)
        if not data:
            if buffer.strip():
                yield buffer
            return
        buffer += data
        while (end := buffer.find(b"\n")) >= 0:
            line, buffer = buffer[: end + 1], buffer[end + 1 :]
            if line.strip():
                yield line
        if len(buffer) > MAX_LINE:
            say(f"a message longer than {MAX_LINE} bytes: ending the session")
            return


def _decode(line: bytes) -> Any:
    try:
        return msgspec.json.decode(line)
    except msgspec.DecodeError:
        return None


class _Child:
    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.waiting: dict[str, trio.MemorySendChannel[Any]] = {}
        self.counter = 0
        #: Set when its stdout ended (it exited): nothing more will be answered.
        self.ended = False

    async def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send_all(line)

    async def call(self, method: str, params: Any = None) -> Any:
        """A request of the supervisor's own; its answer, or None (no answer in time)."""
        self.counter += 1
        request_id = f"{_PRIVATE}{self.counter}"
        if self.ended:
            return None
        send, receive = trio.open_memory_channel[Any](1)
        self.waiting[request_id] = send
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            await self.send(msgspec.json.encode(message) + b"\n")
            with trio.move_on_after(START_TIMEOUT):
                return await receive.receive()
        except (trio.BrokenResourceError, trio.ClosedResourceError, trio.EndOfChannel):
            return None  # it exited (a target that failed to load says why on stderr)
        finally:
            self.waiting.pop(request_id, None)
        return None

    async def stop(self) -> None:
        """End of input, then the grace, then kill."""
        if self.process.stdin is not None:
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                await self.process.stdin.aclose()
        with trio.move_on_after(STOP_TIMEOUT):
            await self.process.wait()
        if self.process.returncode is None:
            self.process.kill()
            await self.process.wait()


class _Relay:
    def __init__(self, argv: list[str], nursery: trio.Nursery) -> None:
        self.argv = argv
        self.nursery = nursery
        self.current: _Child | None = None
        self.initialize: dict[str, Any] | None = None
        self.initialized = False
        self.held: list[bytes] = []  # the client's messages while no child could load
        #: What the current version answered to the replayed initialize.
        self.capabilities: dict[str, Any] = {}
        self.out = trio.lowlevel.FdStream(os.dup(1))
        self.out_lock = trio.Lock()

    async def to_client(self, line: bytes) -> None:
        async with self.out_lock:
            await self.out.send_all(line if line.endswith(b"\n") else line + b"\n")

    async def pump(self, child: _Child) -> None:
        """The child's stdout to the client, but answers to the supervisor's own requests."""
        assert child.process.stdout is not None
        async for line in _lines(child.process.stdout):
            if _PRIVATE.encode() in line:
                message = _decode(line)
                if isinstance(message, dict) and str(message.get("id", "")).startswith(_PRIVATE):
                    waiter = child.waiting.get(message["id"])
                    if waiter is not None:
                        waiter.send_nowait(message)
                    continue
            await self.to_client(line)
        child.ended = True
        for waiter in list(child.waiting.values()):
            waiter.close()

    async def start(self) -> _Child | None:
        process = await trio.lowlevel.open_process(
            self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        child = _Child(process)
        self.nursery.start_soon(self.pump, child)
        if await child.call("ping") is None:
            await child.stop()
            return None
        if self.initialize is not None:
            answer = await child.call("initialize", self.initialize.get("params"))
            if answer is None or "result" not in answer:
                say(f"the new version refused the session's initialize: {answer!r}")
                await child.stop()
                return None
            if self.initialized:
                await child.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
            self.capabilities = answer["result"].get("capabilities", {})
        return child

    async def from_client(self) -> None:
        stdin = trio.lowlevel.FdStream(os.dup(0))
        async for line in _lines(stdin):
            message = _decode(line)
            if isinstance(message, dict):
                if message.get("method") == "initialize" and "id" in message:
                    self.initialize = message
                elif message.get("method") == "notifications/initialized":
                    self.initialized = True
            if self.current is None:
                self.held.append(line)
                continue
            try:
                await self.current.send(line)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                say("the server's input is closed: a message was dropped")
        # the client is gone: the current version drains and exits, then so do we
        if self.current is not None:
            await self.current.stop()
        self.nursery.cancel_scope.cancel()

    async def switch(self, fresh: _Child) -> None:
        old, self.current = self.current, fresh
        for line in self.held:
            await fresh.send(line)
        self.held.clear()
        if old is not None:
            self.nursery.start_soon(old.stop)
            if self.initialized:
                caps = self.capabilities
                for kind in _LIST_KINDS:
                    if isinstance(caps.get(kind), dict) and caps[kind].get("listChanged"):
                        await self.to_client(
                            b'{"jsonrpc":"2.0","method":"notifications/%b/list_changed"}\n'
                            % kind.encode()
                        )


async def serve_stdio_dev(
    target: str, argv: list[str], changes: AsyncIterator[set[str]], roots: str
) -> None:
    """Relay stdio to the current version of ``target`` (``argv`` starts one) and reload it
    on each set of ``changes``; returns when the client closes stdin."""
    say(
        f"stdio: the client talks to this process; reloads on changes under {roots}; "
        "the session survives reloads (its initialize is replayed)"
    )
    async with trio.open_nursery() as nursery:
        relay = _Relay(argv, nursery)
        first = await relay.start()
        if first is None:
            say("the target failed to load (above); waiting for a change")
        else:
            await relay.switch(first)
        nursery.start_soon(relay.from_client)
        async for changed in changes:
            names = ", ".join(sorted(os.path.basename(p) for p in changed))
            say(f"change in {names}: reloading")
            fresh = await relay.start()
            if fresh is None:
                say(
                    "reload failed (above); "
                    + ("the previous version keeps serving" if relay.current else "waiting")
                )
                continue
            await relay.switch(fresh)
            say("reloaded: the session goes on with the new version")


async def run_stdio_dev(
    target: str, *, watch: list[str] | None = None, poll: bool = False, log_level: str = "info"
) -> None:
    """``mcp-runtime dev TARGET --transport stdio``."""
    roots = roots_of(target, watch)
    argv = [sys.executable, "-m", "runtime._dev_child", target, "stdio", log_level]
    await serve_stdio_dev(target, argv, watcher(roots, poll), ", ".join(str(r) for r in roots))
