"""A server whose tools take and return pydantic v2 models (tests/interop/test_sdk_types.py)."""

from __future__ import annotations

import pydantic

from runtime import Server

app = Server("pydantic-types", "1.0.0")


class Address(pydantic.BaseModel):
    street: str
    city: str = pydantic.Field(min_length=2)


class Customer(pydantic.BaseModel):
    name: str = pydantic.Field(description="Full name")
    age: int = pydantic.Field(ge=0, le=150)
    email: str = pydantic.Field(alias="emailAddress")
    address: Address | None = None


class Receipt(pydantic.BaseModel):
    customer_id: int
    greeting: str
    city: str | None


@app.tool
async def add_customer(customer: Customer, vip: bool = False) -> Receipt:
    """Store a customer.

    :param customer: Who to store.
    :param vip: Whether they are a VIP.
    """
    city = customer.address.city if customer.address else None
    return Receipt(customer_id=7, greeting=f"welcome {customer.name}", city=city)
