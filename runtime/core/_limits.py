"""Every bound the runtime enforces, with its default and where the number comes from."""

from __future__ import annotations

import msgspec

__all__ = ["Limits"]


class Limits(msgspec.Struct, frozen=True):
    """Per-connection limits. Each has a name (used by the CLI flags and ``MCP_RUNTIME_*``
    environment variables) and a clear error when hit.

    A frozen msgspec Struct: ``msgspec.structs.replace(limits, max_in_flight=128)`` makes a
    changed copy (checked again). Not a dataclass: a frozen dataclass compiles its generated
    methods when the module is imported, on every start-up (benchmarks/README.md, "Start-up").
    """

    #: Largest frame accepted, in bytes. 4 MiB holds any realistic tool call (images included)
    #: while bounding memory per connection.
    max_frame_size: int = 4 * 1024 * 1024
    #: Items per JSON-RPC batch; a larger batch is refused whole with -32600.
    max_batch_size: int = 256
    #: Requests executing at once per connection; past it a request is answered at once with
    #: -32010 "Server overloaded" rather than queued without bound.
    max_in_flight: int = 64
    #: Seconds a request may run before it is cancelled and answered with -32001; None = no limit.
    request_timeout: float | None = None
    #: Seconds in-flight requests get to finish on shutdown (SIGINT/SIGTERM) before cancellation.
    shutdown_grace: float = 10.0
    #: Seconds in-flight requests get to finish after the peer closed its sending side (stdin
    #: EOF). Short, so that a stdio server exits within a second of EOF.
    eof_grace: float = 0.5
    #: Outgoing messages queued per connection before producers wait (backpressure).
    write_queue_size: int = 1024
    #: Seconds one write may block (a peer that stopped reading) before the connection closes.
    write_timeout: float = 30.0
    #: Seconds a frame may take from its first byte to its last before the connection
    #: closes (a stalled or a trickled frame alike: a slow-loris peer holds nothing longer).
    read_timeout: float | None = 30.0
    #: Seconds without any incoming frame before the connection closes; None = never.
    idle_timeout: float | None = None
    #: Worker threads (plain ``def`` handlers) one connection may hold, running or abandoned
    #: by a cancelled caller; past it a call is refused at once with -32010, so that one
    #: client cannot hold every worker thread of the server.
    max_threads_per_connection: int = 8
    #: Worker threads running for callers that still wait, across the server; more calls
    #: wait for a thread. 40 is trio's default thread limit.
    max_worker_threads: int = 40
    #: Abandoned worker threads (their callers hung up, cancelled or timed out; Python cannot
    #: stop them) across the server; past it plain ``def`` calls get -32010 until some end.
    max_abandoned_threads: int = 40

    def __post_init__(self) -> None:
        for name in (
            "max_frame_size",
            "max_batch_size",
            "max_in_flight",
            "write_queue_size",
            "max_threads_per_connection",
            "max_worker_threads",
            "max_abandoned_threads",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        for name in ("request_timeout", "read_timeout", "idle_timeout"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive or None")
        if self.shutdown_grace < 0 or self.eof_grace < 0 or self.write_timeout <= 0:
            raise ValueError("grace periods must be >= 0 and write_timeout > 0")
