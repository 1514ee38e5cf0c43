"""Where the replies of suspended requests and of batches go.

A request that finished in its first step is answered by the reader at once. One that
suspended finishes later, in the generation that became its task, and its reply comes here:

- a lone request's reply is written (``Outbox.send``); a batch item's waits in its batch,
  and the last item to finish (or the walk over the items, if it ends last) writes the
  batch's reply, the answers in item order (JSON-RPC 2.0 section 6);
- a request cut short from outside (the connection is ending) leaves the request table; the
  reply it still gets (-32000 after the shutdown grace) is held for the outbox's last flush;
  one cut short with no reply is remembered, so that a fault of ours that ends the
  connection answers it -32603 (``answer_cut_short``), as a handler's own failure would be;
- when the last suspended request or batch is done, ``on_idle()`` tells the connection (its
  drain waits for that).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..protocol import Pieces, error_reply, internal_error
from ._context import RequestContext
from ._engine import Suspended
from ._outbox import Outbox
from ._requests import Batch, RequestTable

__all__ = ["Replies", "Running"]


class Running:
    """A request (or batch item) that suspended: the generation that started it runs it on."""

    __slots__ = ("batch", "ctx", "index", "reply", "suspended")

    def __init__(
        self,
        ctx: RequestContext,
        suspended: Suspended[bytes | Pieces],
        batch: Batch | None,
        index: int,
    ) -> None:
        self.ctx = ctx
        self.suspended = suspended
        self.batch = batch
        self.index = index
        self.reply: bytes | Pieces | None = None


class Replies:
    """Delivers the replies of one connection's suspended requests and batches."""

    __slots__ = ("_cut_short", "_on_idle", "_out", "_table")

    def __init__(
        self, outbox: Outbox, table: RequestTable[Any], on_idle: Callable[[], None]
    ) -> None:
        self._out = outbox
        self._table = table
        self._on_idle = on_idle
        #: Requests cut short without a reply (``abandon``), for ``answer_cut_short``.
        self._cut_short: list[Running] | None = None

    def _task_done(self) -> None:
        if self._table.finished():
            self._on_idle()

    async def deliver(self, running: Running) -> None:
        """``running`` finished (its ``reply`` set; None: nothing to answer)."""
        self._table.leave(running.ctx)
        batch = running.batch
        if batch is None:
            try:
                if running.reply is not None:
                    await self._out.send(running.reply, running.ctx.id)
            finally:
                self._task_done()
            return
        batch.replies[running.index] = running.reply  # type: ignore[assignment]  # (bytes)
        await self.batch_item_done(batch, in_reader=False)

    def abandon(self, running: Running, reply: bytes | Pieces | None) -> None:
        """Bookkeeping for a request cut short from outside (the connection is ending);
        ``reply``, when given, is held for the outbox's last flush (in its batch's reply).
        One cut short without a reply is remembered for ``answer_cut_short``."""
        self._table.leave(running.ctx)
        if reply is None:
            if self._cut_short is None:
                self._cut_short = []
            self._cut_short.append(running)
        batch = running.batch
        if batch is None:
            if reply is not None:
                self._out.hold(reply, running.ctx.id)
            self._task_done()
            return
        batch.replies[running.index] = reply  # type: ignore[assignment]  # (bytes in a batch)
        if batch.item_done():
            whole = batch.reply() if reply is not None else None
            if whole is not None:
                self._out.hold(whole)
            if batch.counted:
                self._task_done()

    def answer_cut_short(self) -> None:
        """The connection failed on a fault of ours: each request that it cut short, and its
        client did not cancel, is answered -32603 (held for the outbox's last flush; batch
        items inside their batch's reply), as a handler's own failure would be."""
        done: list[Batch] = []
        for running in self._cut_short or ():
            ctx = running.ctx
            if ctx.no_reply:
                continue
            reply = error_reply(internal_error(), ctx.id)
            batch = running.batch
            if batch is None:
                self._out.hold(reply, ctx.id)
                continue
            batch.replies[running.index] = reply
            if batch.unfinished == 0 and batch not in done:  # (its walk had ended)
                done.append(batch)
        for batch in done:
            whole = batch.reply()
            if whole is not None:
                self._out.hold(whole)
        self._cut_short = None

    async def batch_item_done(self, batch: Batch, *, in_reader: bool) -> None:
        """One suspended item (or the walk) finished; the last one sends the batch reply
        (held back with the reader's other replies when the reader sends it)."""
        if not batch.item_done():
            return
        try:
            reply = batch.reply()
            if reply is not None:
                await (self._out.answer(reply) if in_reader else self._out.send(reply))
        finally:
            if batch.counted:
                self._task_done()
