"""examples/expense_approval.py: a branching elicitation workflow, in both protocol eras."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import expense_approval
import pytest
import trio

from runtime.testing import accept, cancel, open_client

ERAS = ["2025-11-25", "2026-07-28"]


@pytest.fixture(autouse=True)
def clean() -> Iterator[None]:
    yield
    expense_approval.CLAIMS.clear()


def user(answers: dict[str, Any], asked: list[str]) -> Any:
    """A scripted user: answers each form by the first word of its message."""

    async def elicitation(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["message"])
        schema = params["requestedSchema"]
        assert schema["type"] == "object" and "$ref" not in str(schema)
        return answers[params["message"].split()[0]]  # type: ignore[no-any-return]

    return elicitation


@pytest.mark.parametrize("version", ERAS)
async def test_large_claim_asks_for_receipt_and_approver(version: str) -> None:
    asked: list[str] = []
    answers = {
        "What": accept({"amount": 900, "category": "travel", "description": "flight to Oslo"}),
        "Do": accept({"has_receipt": True}),
        "Who": accept({"manager": "Grace"}),
        "Submit": accept({"submit": True}),
    }
    with trio.fail_after(10):
        async with open_client(
            expense_approval.app, protocol_version=version, elicitation=user(answers, asked)
        ) as client:
            result = await client.call_tool("file_expense")
    assert result.text == (
        "Claim #1 filed: 900.00 for travel: flight to Oslo, sent to Grace for approval."
    )
    assert asked == [
        "What did you spend?",
        "Do you have a receipt for 900.00?",
        "Who approves this claim?",
        "Submit 900.00 for travel: flight to Oslo?",
    ]
    assert expense_approval.CLAIMS == [{"amount": 900, "category": "travel", "manager": "Grace"}]


@pytest.mark.parametrize("version", ERAS)
async def test_small_claim_skips_the_branches(version: str) -> None:
    asked: list[str] = []
    answers = {
        "What": accept({"amount": 12.5, "category": "meals", "description": "lunch"}),
        "Submit": accept({"submit": True}),
    }
    with trio.fail_after(10):
        async with open_client(
            expense_approval.app, protocol_version=version, elicitation=user(answers, asked)
        ) as client:
            result = await client.call_tool("file_expense")
    assert result.text == "Claim #1 filed: 12.50 for meals: lunch."
    assert len(asked) == 2


def test_forms_are_flat_elicitation_schemas() -> None:
    assert expense_approval.form_schema(expense_approval.Basics) == {
        "type": "object",
        "properties": {
            "amount": {"type": "number"},
            "category": {"type": "string", "enum": ["equipment", "meals", "other", "travel"]},
            "description": {"type": "string"},
        },
        "required": ["amount", "category", "description"],
    }


@pytest.mark.parametrize("version", ERAS)
async def test_cancel_and_invalid_answers_stop_the_workflow(version: str) -> None:
    with trio.fail_after(10):
        async with open_client(
            expense_approval.app, protocol_version=version, elicitation=user({"What": cancel()}, [])
        ) as client:
            cancelled = await client.call_tool("file_expense")
        invalid = {"What": accept({"amount": 5, "category": "yachts", "description": "x"})}
        async with open_client(
            expense_approval.app, protocol_version=version, elicitation=user(invalid, [])
        ) as client:
            refused = await client.call_tool("file_expense")
    assert cancelled.text == "Expense claim stopped: the user chose 'cancel'."
    assert refused.text == (
        "Expense claim stopped: invalid answer (Invalid enum value 'yachts' - at `$.category`)."
    )
    assert expense_approval.CLAIMS == []
