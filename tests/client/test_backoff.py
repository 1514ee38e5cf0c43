"""The reconnection schedule: bounds, jitter range, cap, server hints, giving up."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.client import Backoff, parse_retry_after

policies = st.builds(
    Backoff,
    initial=st.floats(0, 5, allow_nan=False),
    multiplier=st.floats(1, 10, allow_nan=False),
    cap=st.floats(0, 60, allow_nan=False),
    max_attempts=st.integers(0, 50),
    max_elapsed=st.floats(0, 600, allow_nan=False) | st.just(math.inf),
)
hints = st.none() | st.floats(0, 100, allow_nan=False)


@given(policies, st.integers(0, 10_000), st.integers(0, 2**32), hints)
def test_each_wait_is_within_zero_and_its_capped_ceiling(
    policy: Backoff, attempt: int, seed: int, hint: float | None
) -> None:
    ceiling = policy.ceiling(attempt)
    assert 0 <= ceiling <= policy.cap
    if attempt < 60:  # multiplier**attempt stays a finite float
        expected = min(policy.cap, policy.initial * policy.multiplier**attempt)
        assert ceiling == pytest.approx(expected, rel=1e-9, abs=1e-12)
    wait = policy.wait(attempt, random.Random(seed), hint)
    assert 0 <= wait <= policy.cap
    if hint is None:
        assert wait <= ceiling
    else:
        # A server hint raises the wait to at least the hint, but never past the cap.
        assert wait >= min(hint, policy.cap)


@given(policies, st.integers(0, 2**32), st.lists(hints, max_size=60))
def test_a_run_gives_up_within_its_attempt_and_time_bounds(
    policy: Backoff, seed: int, run_hints: list[float | None]
) -> None:
    run = policy.start(rng=random.Random(seed), clock=0.0)
    now = 0.0
    waits = []
    for index in range(policy.max_attempts + 5):
        hint = run_hints[index] if index < len(run_hints) else None
        delay = run.next_wait(now, hint)
        if delay is None:
            break
        waits.append(delay)
        now += delay  # the attempt itself takes no time here
    else:  # pragma: no cover - the loop must end by giving up
        raise AssertionError("never gave up")
    assert len(waits) == run.attempts <= policy.max_attempts
    assert sum(waits) <= policy.max_elapsed + 1e-9
    assert all(0 <= w <= policy.cap for w in waits)


@settings(max_examples=20)
@given(st.integers(0, 2**32))
def test_full_jitter_spreads_over_the_whole_range(seed: int) -> None:
    policy = Backoff(initial=1.0, multiplier=2.0, cap=8.0)
    rng = random.Random(seed)
    draws = [policy.wait(2, rng) for _ in range(400)]  # ceiling 4.0
    assert min(draws) < 0.4 and max(draws) > 3.6  # spread, not clustered at the ceiling
    assert all(0 <= d <= 4.0 for d in draws)
    late = [policy.wait(30, rng) for _ in range(400)]
    assert max(late) <= 8.0 and max(late) > 7.0  # the cap holds for late attempts


def test_the_cap_holds_for_huge_attempt_numbers() -> None:
    policy = Backoff(initial=0.5, multiplier=3.0, cap=2.5)
    assert policy.ceiling(10**9) == 2.5


def test_a_zero_cap_means_no_wait_even_for_a_tiny_initial() -> None:
    # Found by hypothesis: initial 1e-308 with cap 0 once gave a wait above the cap.
    policy = Backoff(initial=1.1125369292536007e-308, multiplier=1.0, cap=0.0)
    assert policy.ceiling(0) == 0.0
    assert policy.wait(0, random.Random(1)) == 0.0


def test_zero_attempts_means_never_reconnect() -> None:
    run = Backoff(max_attempts=0).start(clock=0.0)
    assert run.next_wait(0.0) is None


def test_a_hint_past_the_time_bound_gives_up() -> None:
    run = Backoff(cap=100, max_elapsed=5).start(rng=random.Random(1), clock=0.0)
    assert run.next_wait(0.0, hint=30.0) is None


@pytest.mark.parametrize(
    "bad",
    [
        {"initial": -1},
        {"multiplier": 0.5},
        {"cap": -1},
        {"max_attempts": -1},
        {"max_elapsed": -1},
        {"initial": math.nan},
    ],
)
def test_invalid_policies_are_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Backoff(**bad)  # type: ignore[arg-type]


def test_retry_after_seconds_and_dates() -> None:
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0) == 10.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412490.0) == 0.0
    assert parse_retry_after("999999999") == 3600.0


@pytest.mark.parametrize(
    "value",
    [
        "\u00b2",  # a digit to str.isdigit, not to float: ValueError before
        "Fri, 31 Dec 99999999999 23:59:59 GMT",  # past datetime's years: OverflowError before
        "Mon, 99 Xyz 99999 99:99:99 GMT",
    ],
)
def test_an_unreadable_retry_after_is_no_hint(value: str) -> None:
    assert parse_retry_after(value) is None


@settings(max_examples=300)
@given(st.text(alphabet=st.characters(max_codepoint=0xFF), max_size=40))
def test_any_retry_after_a_server_sends_is_a_hint_or_none(value: str) -> None:
    hint = parse_retry_after(value, now=0.0)
    assert hint is None or 0.0 <= hint <= 3600.0
