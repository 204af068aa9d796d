"""Tools from typed functions and from JSON-Schema blueprints."""

import asyncio
import threading
from typing import Annotated

import pytest
from pydantic import BaseModel, Field

from callwright import InvalidArgs, Tool, ToolContext, ToolResult, tool
from callwright.tool import as_result


@tool
def google_style(city: str, days: int = 3) -> str:
    """Get the weather forecast.

    Looks it up in a table.

    Args:
        city: The city name.
        days: How many days ahead.
    """
    return f"{city}:{days}"


@tool
def numpy_style(city: str) -> str:
    """Get the weather.

    Parameters
    ----------
    city : str
        The city name.
    """
    return city


@tool
def sphinx_style(city: str) -> str:
    """Get the weather.

    :param city: The city name.
    """
    return city


def test_schema_and_descriptions_from_signature_and_google_docstring() -> None:
    assert google_style.name == "google_style"
    assert google_style.description == "Get the weather forecast.\n\nLooks it up in a table."
    assert google_style.parameters == {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "city": {"type": "string", "description": "The city name."},
            "days": {"type": "integer", "description": "How many days ahead.", "default": 3},
        },
        "required": ["city"],
    }


@pytest.mark.parametrize("t", [numpy_style, sphinx_style])
def test_numpy_and_sphinx_docstrings(t: Tool) -> None:
    assert t.description == "Get the weather."
    assert t.parameters["properties"]["city"]["description"] == "The city name."


def test_context_parameter_is_injected_not_shown() -> None:
    seen: list[str] = []

    @tool
    async def with_ctx(x: int, ctx: ToolContext) -> int:
        seen.append(ctx.call_id)
        return x * 2

    assert list(with_ctx.parameters["properties"]) == ["x"]
    ctx = ToolContext("c1", "with_ctx")
    assert with_ctx.executor is not None
    result = asyncio.run(with_ctx.executor(with_ctx.validate({"x": 4}), ctx))
    assert result == 8
    assert seen == ["c1"]


def test_validation_errors_name_the_field() -> None:
    with pytest.raises(InvalidArgs) as info:
        google_style.validate({"city": 3})
    assert "city" in info.value.model_text()
    assert info.value.model_text().startswith("Invalid arguments: ")
    with pytest.raises(InvalidArgs):
        google_style.validate({"city": "x", "unknown": 1})


def test_sync_functions_run_off_the_event_loop_thread() -> None:
    main = threading.get_ident()

    @tool
    def where() -> bool:
        """Report whether this runs on another thread."""
        return threading.get_ident() != main

    assert where.executor is not None
    assert asyncio.run(where.executor({}, ToolContext("c", "where"))) is True


class Weather(BaseModel):
    city: str
    temp: float


def test_return_values_normalise() -> None:
    assert as_result("hi") == ToolResult("hi")
    assert as_result({"a": 1}) == ToolResult({"a": 1})
    assert as_result(Weather(city="Oslo", temp=3.5)) == ToolResult({"city": "Oslo", "temp": 3.5})
    assert as_result(ToolResult("x", {"d": 1})) == ToolResult("x", {"d": 1})


def test_output_schema_from_return_annotation() -> None:
    @tool
    def weather(city: str) -> Weather:
        """Weather."""
        return Weather(city=city, temp=1)

    assert weather.output_schema is not None
    assert weather.output_schema["properties"]["temp"]["type"] == "number"


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_generators_stream_each_yield_and_return_the_last(kind: str) -> None:
    if kind == "async":

        @tool
        async def analyse(n: int):  # type: ignore[no-untyped-def]
            """Analyse."""
            for i in range(n):
                yield {"progress": i}

        t = analyse
    else:

        @tool
        def analyse_sync(n: int):  # type: ignore[no-untyped-def]
            """Analyse."""
            for i in range(n):
                yield {"progress": i}

        t = analyse_sync
    updates: list[object] = []
    ctx = ToolContext("c", t.name, on_update=updates.append)
    assert t.executor is not None
    final = asyncio.run(t.executor(t.validate({"n": 3}), ctx))
    assert updates == [{"progress": 0}, {"progress": 1}, {"progress": 2}]
    assert final == {"progress": 2}


def test_options() -> None:
    @tool(name="rm", title="Remove file", requires_approval=lambda a: a["path"] != "/tmp/x")
    def remove(path: str) -> str:
        """Remove a file."""
        return path

    assert remove.name == "rm"
    assert remove.title == "Remove file"
    assert remove.needs_approval({"path": "/etc/passwd"}) is True
    assert remove.needs_approval({"path": "/tmp/x"}) is False


ORDER_LOOKUP = {
    "type": "object",
    "title": "Order lookup",
    "description": "Fetch an order. Returns {status,total}.",
    "properties": {
        "_tool": {"type": "string", "const": "lookupOrder"},
        "_reasoningForCall": {"type": "string"},
        "orderId": {"type": "string"},
        "_outputPath": {"type": "string", "pattern": "^†"},
        "_activity": {"type": "string", "const": "orders"},
    },
    "required": ["_tool", "orderId"],
}


def test_acts_blueprint() -> None:
    t = Tool.from_schema(ORDER_LOOKUP)
    assert t.name == "lookupOrder"
    assert t.title == "Order lookup"
    assert t.activity == "orders"
    assert t.parameters == {
        "type": "object",
        "properties": {"orderId": {"type": "string"}},
        "required": ["orderId"],
    }
    assert set(t.meta) == {"_reasoningForCall", "_outputPath"}
    assert t.validate({"orderId": "A-77"}) == {"orderId": "A-77"}
    with pytest.raises(InvalidArgs, match="'orderId' is a required property"):
        t.validate({})


def test_plain_agui_shape() -> None:
    t = Tool.from_schema(
        {
            "name": "confirmAction",
            "description": "Ask the user to confirm a specific action before proceeding",
            "parameters": {
                "type": "object",
                "properties": {
                    "action": {"type": "string"},
                    "importance": {"type": "string", "enum": ["low", "medium", "high"]},
                },
                "required": ["action"],
            },
        }
    )
    assert t.name == "confirmAction"
    assert t.executor is None
    with pytest.raises(InvalidArgs, match="importance"):
        t.validate({"action": "x", "importance": "extreme"})


def test_bad_blueprints_are_refused() -> None:
    with pytest.raises(ValueError, match="name"):
        Tool.from_schema({"description": "no name", "parameters": {"type": "object"}})
    with pytest.raises(ValueError, match="_tool"):
        Tool.from_schema({"type": "object", "properties": {"x": {"type": "string"}}})


class Address(BaseModel):
    street: str
    city: str = Field(title="Town")


def test_generated_titles_are_left_out_and_given_ones_kept() -> None:
    @tool
    def ship(to: Address, note: Annotated[str, Field(title="Gift note")] = "") -> str:
        """Ship a parcel."""
        return note

    params = ship.parameters
    assert "title" not in params
    assert params["properties"]["note"]["title"] == "Gift note"
    assert "title" not in params["properties"]["to"]
    address = params["$defs"]["Address"]["properties"]
    assert "title" not in address["street"]
    assert address["city"]["title"] == "Town"


async def test_a_sync_executor_never_runs_on_the_event_loop_thread() -> None:
    loop_thread = threading.get_ident()

    def lookup(args: dict[str, str], ctx: ToolContext | None) -> bool:
        return threading.get_ident() != loop_thread

    t = Tool.from_schema(
        {"name": "lookup", "parameters": {"type": "object"}},
        executor=lookup,
    )
    assert t.executor is not None
    assert await t.executor({}, None) is True
