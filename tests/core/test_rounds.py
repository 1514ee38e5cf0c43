"""runtime.core's Rounds: when an idle-exit connection (an HTTP session's) asks for a round,
and what the next round must do. Plain bookkeeping, driven here without trio; the connection
that drives it is tested in test_idle_rounds.py."""

from __future__ import annotations

from runtime.core._rounds import Rounds


class _Owner:
    """The channel's owner: counts the rounds it is asked for."""

    def __init__(self) -> None:
        self.asked = 0

    def wake(self) -> None:
        self.asked += 1


async def _task() -> None:
    return None


def _rounds() -> tuple[Rounds, _Owner]:
    owner = _Owner()
    return Rounds(owner.wake), owner


def test_idle_input_asks_for_a_round_that_reads_it() -> None:
    rounds, owner = _rounds()
    rounds.want_input()
    assert owner.asked == 1
    rounds.serving = True
    assert rounds.take() == (True, [])
    assert rounds.take() == (False, [])  # taken once: the round after reads only if fed again


def test_work_during_a_round_is_that_rounds_and_asks_nobody() -> None:
    rounds, owner = _rounds()
    rounds.serving = True
    rounds.want_input()
    rounds.host(_task, "t")
    rounds.ask()
    assert owner.asked == 0
    # What the round's nursery could no longer take is the next round's, at once.
    assert rounds.more(reading_ended=False)


def test_a_task_started_while_idle_waits_for_the_next_round() -> None:
    rounds, owner = _rounds()
    rounds.host(_task, "first")
    rounds.host(_task, None)
    assert owner.asked == 2  # each arrival asks; the owner starts one round at a time
    rounds.serving = True
    wanted, hosted = rounds.take()
    assert wanted is False and hosted == [(_task, "first"), (_task, None)]
    assert rounds.take() == (False, [])


def test_a_closed_round_goes_idle_only_with_nothing_left() -> None:
    rounds, _owner = _rounds()
    assert not rounds.more(reading_ended=False)  # idle: serve returns, nothing is held
    assert rounds.more(reading_ended=True)  # reading ended: a round ends the connection
    rounds.want_input()
    assert rounds.more(reading_ended=False)
    rounds.take()
    rounds.host(_task, None)
    assert rounds.more(reading_ended=False)
    rounds.take()
    assert not rounds.more(reading_ended=False)


def test_the_end_of_an_idle_connection_asks_for_the_round_that_ends_it() -> None:
    """Output broke (or shutdown came) between rounds: no task would ever see it unless a
    round is asked for."""
    rounds, owner = _rounds()
    rounds.ask()
    assert owner.asked == 1
    rounds.serving = True
    rounds.ask()
    assert owner.asked == 1
