"""Rounds: when a connection whose channel is read only while it has input is served.

Such a channel (``MessageChannel.receive_nowait``: an HTTP session's inbox) has input only
when a POST brings some. Its connection is served in rounds, each one ``Connection.serve``
call with a nursery of its own, so that while idle it holds no task, nursery or cancel scope:
only this state. A round is started by the channel's owner when the connection asks for one
through the channel's ``wake()``.

Plain bookkeeping, no trio and no I/O (the connection drives it, as it drives its request
table); the rules:

- a round runs while there is work in it: input to read, requests or hosted tasks
  (``Peer.start_soon``) running in its nursery; with none left it ends (``serving`` False);
- work that arrives while no round runs is kept for the next one (``want_input``: input to
  read or an end to see; ``host``: a task to start) and asks for it (``ask``: only while no
  round runs, so that the owner is asked when it has something to start);
- the end of the connection that arrives between rounds (its output broke) asks for a round
  too: that round ends it;
- a round whose nursery closed finds the work that arrived meanwhile (``more``): another
  round starts at once instead of the connection going idle; a round takes all the work kept
  for it (``take``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

__all__ = ["Hosted", "Rounds"]

#: A task to start in the next round: what ``start_soon`` was given (function, name).
Hosted = tuple[Callable[[], Awaitable[object]], "str | None"]


class Rounds:
    """The rounds of one idle-exit connection; ``wake()`` asks the channel's owner for one."""

    __slots__ = ("_hosted", "_wake", "serving", "wanted")

    def __init__(self, wake: Callable[[], None]) -> None:
        self._wake = wake
        #: A round runs (a ``serve`` call is in progress).
        self.serving = False
        #: The next round must read: input arrived, or an end must be seen.
        self.wanted = False
        #: Tasks to start in the next round (None: none, and no list kept while idle).
        self._hosted: list[Hosted] | None = None

    def ask(self) -> None:
        """Work arrived: ask for a round, unless one runs (that one does the work)."""
        if not self.serving:
            self._wake()

    def want_input(self) -> None:
        """Input arrived (or shutdown must be seen) with no round reading: the next reads."""
        self.wanted = True
        self.ask()

    def host(self, fn: Callable[[], Awaitable[object]], name: str | None) -> None:
        """A task to start while no round's nursery takes one: the next round starts it."""
        if self._hosted is None:
            self._hosted = []
        self._hosted.append((fn, name))
        self.ask()

    def take(self) -> tuple[bool, list[Hosted]]:
        """A round starts: whether it must read, and the tasks it must start."""
        wanted, self.wanted = self.wanted, False
        hosted, self._hosted = self._hosted or [], None
        return wanted, hosted

    def more(self, reading_ended: bool) -> bool:
        """A round's nursery closed: whether another round must start now (work arrived
        while it was closing, or reading ended and the connection must end)."""
        return self.wanted or bool(self._hosted) or reading_ended
