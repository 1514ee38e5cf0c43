"""The parameter and return types users already have (issue 20, item 2), over the wire.

Pydantic v2 models (their own schema, validation and serialization), pydantic ``Field`` and
annotated_types constraints, attrs, dataclasses, TypedDict, Enum, Literal; docstrings in the
Google, NumPy and Sphinx styles; the registration error for anything else.
"""

from __future__ import annotations

import dataclasses
import enum
import subprocess
import sys
from typing import Annotated, Any, Literal, TypedDict

import attrs
import jsonschema
import msgspec
import pydantic
import pytest
import trio

from runtime import Server
from runtime.testing import open_client


class Address(pydantic.BaseModel):
    street: str
    city: str = pydantic.Field(min_length=2)


class User(pydantic.BaseModel):
    name: str = pydantic.Field(description="Full name")
    age: int = pydantic.Field(ge=0, le=150)
    email: str = pydantic.Field(alias="emailAddress")
    address: Address | None = None


class Greeting(pydantic.BaseModel):
    text: str
    shouted: bool


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclasses.dataclass
class Point:
    x: float
    y: float


@attrs.define
class Box:
    width: int
    height: int


class Options(TypedDict):
    verbose: bool


def make_server() -> Server:
    app = Server("types")

    @app.tool
    async def register(user: User, note: str = "") -> Greeting:
        """Register a user."""
        assert isinstance(user, User)
        return Greeting(
            text=f"hello {user.name} from {user.address.city if user.address else '?'}",
            shouted=False,
        )

    @app.tool
    def mixed(
        color: Color,
        point: Point,
        box: Box,
        options: Options,
        mode: Literal["fast", "slow"] = "fast",
        count: Annotated[int, pydantic.Field(ge=1, le=10, description="How many")] = 1,
        label: str = pydantic.Field("x", max_length=3, description="A short label"),
    ) -> dict[str, Any]:
        return {
            "color": color.value,
            "area": box.width * box.height,
            "sum": point.x + point.y,
            "verbose": options["verbose"],
            "mode": mode,
            "count": count,
            "label": label,
        }

    @app.tool
    def users(n: int) -> list[User]:
        return [User(name=f"u{i}", age=i, emailAddress=f"u{i}@example.org") for i in range(n)]

    return app


async def test_pydantic_model_schema_in_tools_list() -> None:
    with trio.fail_after(10):
        async with open_client(make_server()) as client:
            tools = {tool["name"]: tool for tool in await client.list_tools()}
    schema = tools["register"]["inputSchema"]
    assert schema["properties"]["user"] == {"$ref": "#/$defs/User"}
    user = schema["$defs"]["User"]
    # Pydantic's own schema: the alias, the description, the bounds, the nested model.
    assert set(user["properties"]) == {"name", "age", "emailAddress", "address"}
    assert user["properties"]["age"]["minimum"] == 0
    assert user["properties"]["age"]["maximum"] == 150
    assert user["properties"]["name"]["description"] == "Full name"
    assert schema["$defs"]["Address"]["properties"]["city"]["minLength"] == 2
    assert schema["required"] == ["user"]
    # A self-contained, valid 2020-12 schema that accepts what the tool accepts.
    jsonschema.Draft202012Validator.check_schema(schema)
    good = {
        "user": {
            "name": "a",
            "age": 3,
            "emailAddress": "a@b",
            "address": {"street": "s", "city": "Oslo"},
        }
    }
    jsonschema.validate(good, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"user": {"name": "a", "age": -1, "emailAddress": "x"}}, schema)
    # The return model is the outputSchema.
    output = tools["register"]["outputSchema"]
    assert output["properties"] == {
        "text": {"title": "Text", "type": "string"},
        "shouted": {"title": "Shouted", "type": "boolean"},
    }
    jsonschema.Draft202012Validator.check_schema(tools["users"]["outputSchema"])


async def test_pydantic_call_validates_and_returns_structured_content() -> None:
    with trio.fail_after(10):
        async with open_client(make_server()) as client:
            ok = await client.call_tool(
                "register",
                {
                    "user": {
                        "name": "Ada",
                        "age": 36,
                        "emailAddress": "ada@example.org",
                        "address": {"street": "1 Main", "city": "London"},
                    }
                },
            )
            bad = await client.call_tool(
                "register", {"user": {"name": "Ada", "age": -1, "emailAddress": "x"}}
            )
            missing = await client.call_tool("register", {"user": {"name": "Ada", "age": 1}})
            listed = await client.call_tool("users", {"n": 2})
            tools = {tool["name"]: tool for tool in await client.list_tools()}
    assert ok["isError"] is False
    assert ok["structuredContent"] == {"text": "hello Ada from London", "shouted": False}
    assert msgspec.json.decode(ok["content"][0]["text"]) == ok["structuredContent"]
    # Pydantic's validation, reported as a tool error the model can read, with the path.
    assert bad["isError"] is True
    text = bad["content"][0]["text"]
    assert "age: Input should be greater than or equal to 0" in text
    assert "$.user" in text
    assert "errors.pydantic.dev" not in text  # no URLs, no input values
    assert missing["isError"] is True
    assert "emailAddress: Field required" in missing["content"][0]["text"]
    # A list of models: wrapped as {"result": [...]}, serialized by alias.
    assert listed["structuredContent"] == {
        "result": [
            {"name": "u0", "age": 0, "emailAddress": "u0@example.org", "address": None},
            {"name": "u1", "age": 1, "emailAddress": "u1@example.org", "address": None},
        ]
    }
    jsonschema.validate(listed["structuredContent"], tools["users"]["outputSchema"])


async def test_other_types_and_field_constraints() -> None:
    with trio.fail_after(10):
        async with open_client(make_server()) as client:
            tools = {tool["name"]: tool for tool in await client.list_tools()}
            args = {
                "color": "blue",
                "point": {"x": 1.5, "y": 2},
                "box": {"width": 2, "height": 3},
                "options": {"verbose": True},
                "mode": "slow",
                "count": 4,
            }
            ok = await client.call_tool("mixed", args)
            too_many = await client.call_tool("mixed", {**args, "count": 11})
            long_label = await client.call_tool("mixed", {**args, "label": "abcd"})
            bad_mode = await client.call_tool("mixed", {**args, "mode": "medium"})
    schema = tools["mixed"]["inputSchema"]
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["count"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 10,
        "description": "How many",
        "default": 1,
    }
    assert schema["properties"]["label"] == {
        "type": "string",
        "maxLength": 3,
        "description": "A short label",
        "default": "x",
    }
    assert schema["properties"]["mode"]["enum"] == ["fast", "slow"]
    assert set(schema["required"]) == {"color", "point", "box", "options"}
    assert ok["structuredContent"] == {
        "color": "blue",
        "area": 6,
        "sum": 3.5,
        "verbose": True,
        "mode": "slow",
        "count": 4,
        "label": "x",
    }
    assert too_many["isError"] and "<= 10" in too_many["content"][0]["text"]
    assert long_label["isError"] and "length <= 3" in long_label["content"][0]["text"]
    assert bad_mode["isError"] and "$.mode" in bad_mode["content"][0]["text"]


class Opaque:
    pass


def test_unsupported_type_error_says_what_to_use() -> None:
    app = Server("bad")
    with pytest.raises(TypeError) as info:

        @app.tool
        def f(ok: int, thing: Opaque) -> None: ...

    message = str(info.value)
    assert message.startswith("f: parameter 'thing' is annotated")
    assert "Opaque" in message
    assert "pydantic v2 BaseModel" in message and "msgspec.Struct" in message

    with pytest.raises(TypeError, match="has no JSON Schema equivalent"):

        @app.tool
        def g(x: Annotated[int, pydantic.AfterValidator(lambda v: v)]) -> None: ...

    with pytest.raises(TypeError, match=r"the return annotation .* has no JSON Schema"):

        @app.tool(structured_output=True)
        def h() -> Opaque:
            return Opaque()


GOOGLE = """Search the index.

    Args:
        query (str): What to look for,
            across lines.
        limit: How many hits.

    Returns:
        The hits.
    """

NUMPY = """Search the index.

    Parameters
    ----------
    query : str
        What to look for,
        across lines.
    limit : int, optional
        How many hits.

    Returns
    -------
    list
        The hits.
    """

SPHINX = """Search the index.

    :param query: What to look for,
        across lines.
    :param int limit: How many hits.
    :returns: The hits.
    """


@pytest.mark.parametrize("doc", [GOOGLE, NUMPY, SPHINX], ids=["google", "numpy", "sphinx"])
async def test_docstring_styles_give_argument_descriptions(doc: str) -> None:
    app = Server("docs")

    def search(query: str, limit: int = 10) -> str:
        return query

    search.__doc__ = doc
    app.tool(search)
    with trio.fail_after(10):
        async with open_client(app) as client:
            (tool,) = await client.list_tools()
    assert tool["description"] == "Search the index."
    props = tool["inputSchema"]["properties"]
    assert props["query"]["description"] == "What to look for, across lines."
    assert props["limit"]["description"] == "How many hits."


def test_import_runtime_does_not_import_pydantic() -> None:
    code = "import runtime, runtime.testing, sys; print('pydantic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


async def test_pydantic_value_without_a_data_annotation_still_encodes() -> None:
    app = Server("loose")

    @app.tool
    async def loose():  # type: ignore[no-untyped-def]
        return Greeting(text="hi", shouted=True)

    @app.tool(output_schema={"type": "object"})
    async def declared() -> Any:
        return Greeting(text="yo", shouted=False)

    with trio.fail_after(10):
        async with open_client(app) as client:
            unstructured = await client.call_tool("loose")
            passed_through = await client.call_tool("declared")
    assert unstructured.text == '{"text":"hi","shouted":true}' and not unstructured.is_error
    assert passed_through.structured == {"text": "yo", "shouted": False}


async def test_field_default_factory_gives_a_fresh_value_per_call() -> None:
    app = Server("factory")

    factory = pydantic.Field(default_factory=list)

    @app.tool
    async def tag(name: str, tags: list[str] = factory) -> list[str]:
        tags.append(name)
        return tags

    with trio.fail_after(10):
        async with open_client(app) as client:
            first = await client.call_tool("tag", {"name": "a"})
            second = await client.call_tool("tag", {"name": "b"})
            (tool,) = await client.list_tools()
    assert first.text == "a" and second.text == "b"  # not ["a", "b"]: no shared default
    assert tool.input_schema["required"] == ["name"]
