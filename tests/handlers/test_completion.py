"""completion/complete: from Literal/Enum annotations, or the server's completer."""

from __future__ import annotations

import enum
from typing import Literal

import pytest

from runtime import JSONRPCError, Server
from runtime.testing import open_client


class Color(enum.Enum):
    RED = "red"
    ROSE = "rose"
    BLUE = "blue"


def make_app() -> Server:
    app = Server("complete")

    @app.prompt
    def review(code: str, language: Literal["python", "perl", "rust"] = "python") -> str:
        return code

    @app.resource("paint://{color}")
    def paint(color: Color) -> str:
        return color.value

    return app


async def test_literal_and_enum_completion_by_prefix() -> None:
    async with open_client(make_app()) as client:
        result = await client.request(
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "review"},
                "argument": {"name": "language", "value": "p"},
            },
        )
        assert result == {
            "completion": {"values": ["python", "perl"], "total": 2, "hasMore": False}
        }
        result = await client.request(
            "completion/complete",
            {
                "ref": {"type": "ref/resource", "uri": "paint://{color}"},
                "argument": {"name": "color", "value": "r"},
            },
        )
        assert result["completion"]["values"] == ["red", "rose"]
        free = await client.request(
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "review"},
                "argument": {"name": "code", "value": ""},
            },
        )
        assert free["completion"]["values"] == []


async def test_custom_completer_sees_context_and_is_capped_at_100() -> None:
    app = make_app()
    seen: list[object] = []

    @app.completion
    async def complete(
        ref_type: str, ref: str, argument: str, value: str, context: dict[str, str]
    ) -> list[str]:
        seen.append((ref_type, ref, argument, value, context))
        return [f"{value}{i}" for i in range(150)]

    async with open_client(app) as client:
        result = await client.request(
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "review"},
                "argument": {"name": "code", "value": "x"},
                "context": {"arguments": {"language": "rust"}},
            },
        )
    assert seen == [("ref/prompt", "review", "code", "x", {"language": "rust"})]
    assert len(result["completion"]["values"]) == 100
    assert result["completion"]["total"] == 150 and result["completion"]["hasMore"] is True


@pytest.mark.parametrize(
    "params",
    [
        {"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "a", "value": ""}},
        {"ref": {"type": "ref/resource", "uri": "x://{y}"}, "argument": {"name": "y", "value": ""}},
        {"ref": {"type": "ref/prompt", "name": "review"}, "argument": {"name": "zzz", "value": ""}},
        {"ref": {"type": "ref/other"}, "argument": {"name": "a", "value": ""}},
    ],
)
async def test_bad_references_are_invalid_params(params: dict[str, object]) -> None:
    async with open_client(make_app()) as client:
        with pytest.raises(JSONRPCError) as info:
            await client.request("completion/complete", params)
    assert info.value.code == -32602
