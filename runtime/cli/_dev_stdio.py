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

Failures, as over HTTP (``runtime.cli._dev``): a version that exits on its own is reported in one
line with its exit status; the client's requests it had not answered, and every request
until the next change, are answered with a JSON-RPC error naming the crash (never left
waiting). A target that fails to load at start is answered for the same way. A change
while a version loads stops that load at once. Each version leads its own process group,
ended whole when it is replaced or fails and when the supervisor exits (end of input,
SIGINT, SIGTERM).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any, Final

import msgspec
import trio

from ..protocol import (
    INITIALIZE,
    INITIALIZED,
    INTERNAL_ERROR,
    LIST_CHANGED,
    PING,
    encode_error,
    encode_notification,
)
from ._dev import (
    START_TIMEOUT,
    STOP_TIMEOUT,
    exit_status,
    roots_of,
    say,
    signal_group,
    watcher,
)

__all__ = ["MAX_LINE", "run_stdio_dev", "serve_stdio_dev"]

#: Bytes in one NDJSON message between the client and the server (the runtime's default
#: ``Limits.max_frame_size``); a longer line ends the session with a logged reason.
MAX_LINE: Final = 4 * 1024 * 1024
_PRIVATE: Final = "mcp-runtime-dev:"
#: Sent to the session's client after a reload, once: the new version's lists may differ.
_LIST_CHANGED: Final = {
    kind: encode_notification(method) + b"\n" for kind, method in LIST_CHANGED.items()
}
#: Sent to a new version when the session's client had sent it to the old one.
_INITIALIZED: Final = encode_notification(INITIALIZED) + b"\n"


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


class _Ids(msgspec.Struct):
    """What the relay reads of every message: its id, and whether it is a request."""

    id: int | str | None = None
    method: str | None = None


_ids: Final = msgspec.json.Decoder(_Ids | list[_Ids])


def _items(line: bytes) -> list[_Ids]:
    """The messages of ``line`` (a batch is several), as ``_Ids``; none if unreadable."""
    try:
        found = _ids.decode(line)
    except msgspec.DecodeError:
        return []
    return found if isinstance(found, list) else [found]


def _key(request_id: int | str) -> tuple[type, int | str]:
    return (type(request_id), request_id)  # 1 and "1" are different ids


class _Child:
    def __init__(self, process: trio.Process, children: set[_Child]) -> None:
        self.process = process
        self.waiting: dict[str, trio.MemorySendChannel[Any]] = {}
        self.counter = 0
        #: Set when its stdout ended (it exited): nothing more will be answered.
        self.ended = False
        #: Set once we end it: its exit is then not a crash.
        self.stopping = False
        #: The client's requests sent to it and not yet answered, by ``_key``.
        self.pending: dict[tuple[type, int | str], int | str] = {}
        self.children = children
        children.add(self)

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
        say(f"the new version did not answer within {START_TIMEOUT:g} s: stopped")
        return None

    async def stop(self) -> None:
        """End of input, then the grace, then SIGKILL to its group. Not cancellable."""
        self.stopping = True
        with trio.CancelScope(shield=True):
            if self.process.stdin is not None:
                with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                    await self.process.stdin.aclose()
            with trio.move_on_after(STOP_TIMEOUT):
                await self.process.wait()
            signal_group(self.process)
            await self.process.wait()
        self.children.discard(self)

    async def kill(self) -> None:
        """SIGKILL to its group at once (a version that serves nothing yet)."""
        self.stopping = True
        with trio.CancelScope(shield=True):
            signal_group(self.process)
            await self.process.wait()
        self.children.discard(self)


class _Relay:
    def __init__(self, target: str, argv: list[str], nursery: trio.Nursery) -> None:
        self.target = target
        self.argv = argv
        self.nursery = nursery
        self.current: _Child | None = None
        self.initialize: dict[str, Any] | None = None
        self.initialized = False
        #: Whether a version has had the session's handshake (a new one then gets it
        #: replayed; else it comes with the held messages).
        self.handshake_delivered = False
        self.held: list[bytes] = []  # the client's messages while the first version loads
        #: What the current version answered to the replayed initialize.
        self.capabilities: dict[str, Any] = {}
        self.out = trio.lowlevel.FdStream(os.dup(1))
        self.out_lock = trio.Lock()
        #: Every version started and not yet ended.
        self.children: set[_Child] = set()
        #: The load in progress (a newer change cancels it).
        self.loading: trio.CancelScope | None = None
        #: Why no version serves (a crash, a failed first load); None while one does.
        self.down: str | None = None
        #: Versions that served so far.
        self.served = 0

    async def to_client(self, line: bytes) -> None:
        async with self.out_lock:
            await self.out.send_all(line if line.endswith(b"\n") else line + b"\n")

    async def refuse(self, request_ids: list[int | str], message: str) -> None:
        for request_id in request_ids:
            await self.to_client(bytes(encode_error(request_id, INTERNAL_ERROR, message)))

    async def pump(self, child: _Child) -> None:
        """The child's stdout to the client, but answers to the supervisor's own requests;
        once it ends, the client's requests it left unanswered get an error."""
        assert child.process.stdout is not None
        async for line in _lines(child.process.stdout):
            if _PRIVATE.encode() in line:
                message = _decode(line)
                if isinstance(message, dict) and str(message.get("id", "")).startswith(_PRIVATE):
                    waiter = child.waiting.get(message["id"])
                    if waiter is not None:
                        waiter.send_nowait(message)
                    continue
            if child.pending:
                for item in _items(line):
                    if item.method is None and item.id is not None:
                        child.pending.pop(_key(item.id), None)
            await self.to_client(line)
        for waiter in list(child.waiting.values()):
            waiter.close()
        with trio.move_on_after(STOP_TIMEOUT):
            await child.process.wait()
        if child.process.returncode is None:
            await child.kill()  # it closed its stdout but lives on: it serves no one
        status = exit_status(child.process.returncode or 0)
        child.ended = True
        crashed = self.current is child and not child.stopping
        unanswered, child.pending = list(child.pending.values()), {}
        if crashed:
            signal_group(child.process)  # what it started goes with it
            self.current = None
            self.down = f"mcp-runtime dev: the server exited ({status}); fix it and save"
            say(f"the server exited ({status}): answering errors until the next change")
            await self.refuse(unanswered, self.down)
        elif unanswered:
            await self.refuse(
                unanswered,
                f"mcp-runtime dev: the previous version ended ({status}) before answering",
            )

    async def start(self) -> _Child | None:
        """A new version, probed and given the session's handshake; None when it failed.
        Cancelled (a newer change, the supervisor's exit): the child is killed first."""
        process = await trio.lowlevel.open_process(
            self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, process_group=0
        )
        child = _Child(process, self.children)
        try:
            self.nursery.start_soon(self.pump, child)
            if await child.call(PING) is None:
                await child.kill()
                return None
            if self.initialize is not None and self.handshake_delivered:
                answer = await child.call(INITIALIZE, self.initialize.get("params"))
                if answer is None or "result" not in answer:
                    say(f"the new version refused the session's initialize: {answer!r}")
                    await child.kill()
                    return None
                if self.initialized:
                    await child.send(_INITIALIZED)
                self.capabilities = answer["result"].get("capabilities", {})
        except BaseException:
            await child.kill()
            raise
        return child

    async def from_client(self) -> None:
        stdin = trio.lowlevel.FdStream(os.dup(0))
        async for line in _lines(stdin):
            requests = [
                item.id for item in _items(line) if item.method is not None and item.id is not None
            ]
            current = self.current
            if current is None and self.down is not None:
                await self.refuse(requests, self.down)  # notifications: dropped
                continue
            message = _decode(line)
            if isinstance(message, dict):
                if message.get("method") == INITIALIZE and "id" in message:
                    self.initialize = message
                elif message.get("method") == INITIALIZED:
                    self.initialized = True
            if current is None:
                self.held.append(line)  # the first version is loading
                continue
            self.handshake_delivered = self.initialize is not None
            for request_id in requests:
                current.pending[_key(request_id)] = request_id
            # A version that is exiting cannot take it: its pump answers what it left.
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                await current.send(line)
        # the client is gone: the current version drains and exits, then so do we
        if self.current is not None:
            await self.current.stop()
        self.nursery.cancel_scope.cancel()

    async def load(self) -> None:
        fresh: _Child | None = None
        with trio.CancelScope() as scope:
            self.loading = scope
            try:
                fresh = await self.start()
            finally:
                if self.loading is scope:
                    self.loading = None
        if scope.cancel_called:
            if fresh is not None:
                await fresh.kill()
            return  # a newer change replaced this load
        if fresh is None:
            if self.current is not None:
                say("reload failed (above); the previous version keeps serving")
                return
            say("the target failed to load (above): answering errors until the next change")
            self.down = f"mcp-runtime dev: {self.target} failed to load; fix it and save"
            held, self.held = self.held, []
            for line in held:
                await self.refuse(
                    [i.id for i in _items(line) if i.method is not None and i.id is not None],
                    self.down,
                )
            return
        await self.switch(fresh)

    async def switch(self, fresh: _Child) -> None:
        old, self.current = self.current, fresh
        self.down = None
        self.served += 1
        held, self.held = self.held, []
        self.handshake_delivered = self.initialize is not None
        for line in held:
            for item in _items(line):
                if item.method is not None and item.id is not None:
                    fresh.pending[_key(item.id)] = item.id
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                await fresh.send(line)
        if old is not None:
            self.nursery.start_soon(old.stop)
        if self.served > 1:
            say("reloaded: the session goes on with the new version")
            if self.initialized:
                caps = self.capabilities
                for kind, notification in _LIST_CHANGED.items():
                    if isinstance(caps.get(kind), dict) and caps[kind].get("listChanged"):
                        await self.to_client(notification)


async def serve_stdio_dev(
    target: str, argv: list[str], changes: AsyncIterator[set[str]], roots: str
) -> None:
    """Relay stdio to the current version of ``target`` (``argv`` starts one) and reload it
    on each set of ``changes``; returns when the client closes stdin, or on SIGINT/SIGTERM
    (each version then ends with its whole process group)."""
    say(
        f"stdio: the client talks to this process; reloads on changes under {roots}; "
        "the session survives reloads (its initialize is replayed)"
    )
    async with trio.open_nursery() as nursery:
        relay = _Relay(target, argv, nursery)

        async def stop_on_signal() -> None:
            with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    nursery.cancel_scope.cancel()

        try:
            nursery.start_soon(stop_on_signal)
            nursery.start_soon(relay.load)
            nursery.start_soon(relay.from_client)
            async for changed in changes:
                names = ", ".join(sorted(os.path.basename(p) for p in changed))
                say(f"change in {names}: reloading")
                if relay.loading is not None:
                    relay.loading.cancel()
                    say("the version still loading is stopped: loading the newer one")
                nursery.start_soon(relay.load)
        finally:
            if relay.loading is not None:
                relay.loading.cancel()
            with trio.CancelScope(shield=True):
                for child in list(relay.children):
                    await (child.stop() if child is relay.current else child.kill())


async def run_stdio_dev(
    target: str, *, watch: list[str] | None = None, poll: bool = False, log_level: str = "info"
) -> None:
    """``mcp-runtime dev TARGET --transport stdio``."""
    roots = roots_of(target, watch)
    argv = [sys.executable, "-m", "runtime.cli._dev_child", target, "stdio", log_level]
    await serve_stdio_dev(target, argv, watcher(roots, poll), ", ".join(str(r) for r in roots))
