"""An expense claim filed through a conversation with the user: elicitation, step by step.

``file_expense`` asks the user (``elicitation/create``, form mode) for what it needs, one form
at a time, and branches on the answers: a receipt question only above the receipt threshold, a
manager's name only above the approval threshold, and a final confirmation. Each answer is
validated with a msgspec Struct; "decline" and "cancel" end the workflow politely.

The same code runs in both protocol eras: in 2025-11-25 each ``ctx.elicit`` is a request to
the client; in 2026-07-28 the tool returns ``input_required`` and the client retries with the
answers (the runtime replays earlier answers, so the tool reads as straight-line code).

Run it:  mcp-runtime serve examples/expense_approval.py   (the client must support elicitation)
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

import msgspec

from runtime import Context, Server

app = Server("expense-approval", "1.0.0", instructions="File expense claims with the user.")

RECEIPT_ABOVE = 25.0  # receipts needed above this amount
APPROVAL_ABOVE = 500.0  # a manager approves above this amount
CLAIMS: list[dict[str, Any]] = []


class Basics(msgspec.Struct):
    amount: float
    category: Literal["travel", "meals", "equipment", "other"]
    description: str


class Receipt(msgspec.Struct):
    has_receipt: bool


class Approver(msgspec.Struct):
    manager: str


class Confirm(msgspec.Struct):
    submit: bool


T = TypeVar("T", bound=msgspec.Struct)


class Stop(Exception):
    """The user declined, cancelled or answered with an invalid form."""


def form_schema(form: type[msgspec.Struct]) -> dict[str, Any]:
    """``form`` as an elicitation ``requestedSchema``: MCP client/elicitation allows only a
    flat object of primitive properties (no ``$ref``), and enums are typed strings."""
    _, defs = msgspec.json.schema_components([form])
    schema = dict(defs[form.__name__])
    schema.pop("title", None)
    for prop in schema["properties"].values():
        if "enum" in prop:
            prop["type"] = "string"
    return schema


async def ask(ctx: Context, message: str, form: type[T]) -> T:
    """One elicitation round: a form built from ``form``'s fields, its answer validated."""
    answer = await ctx.elicit(message, form_schema(form))
    if answer.get("action") != "accept":
        raise Stop(f"Expense claim stopped: the user chose {answer.get('action')!r}.")
    try:
        return msgspec.convert(answer.get("content") or {}, form)
    except msgspec.ValidationError as exc:
        raise Stop(f"Expense claim stopped: invalid answer ({exc}).") from None


@app.tool
async def file_expense(ctx: Context) -> str:
    """File an expense claim, asking the user for each detail."""
    try:
        basics = await ask(ctx, "What did you spend?", Basics)
        if basics.amount <= 0:
            raise Stop("Expense claim stopped: the amount must be positive.")
        if basics.amount > RECEIPT_ABOVE:
            receipt = await ask(ctx, f"Do you have a receipt for {basics.amount:.2f}?", Receipt)
            if not receipt.has_receipt:
                raise Stop(f"Claims above {RECEIPT_ABOVE:.2f} need a receipt.")
        manager = None
        if basics.amount > APPROVAL_ABOVE:
            manager = (await ask(ctx, "Who approves this claim?", Approver)).manager
        summary = f"{basics.amount:.2f} for {basics.category}: {basics.description}"
        confirm = await ask(ctx, f"Submit {summary}?", Confirm)
        if not confirm.submit:
            raise Stop("Expense claim not submitted.")
    except Stop as stop:
        return str(stop)
    CLAIMS.append({"amount": basics.amount, "category": basics.category, "manager": manager})
    routed = f", sent to {manager} for approval" if manager else ""
    return f"Claim #{len(CLAIMS)} filed: {summary}{routed}."


if __name__ == "__main__":
    app.run()
