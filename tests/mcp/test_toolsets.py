"""The toolset seam on its own (``Toolbox.ready``), with a fake source of tools: listed
tools redefine older ones, a later definition wins over them, a relisting drops what the
source no longer has (and only that), and a run's overlay keeps its client tools on top."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from callwright import Tool, Toolbox, ToolConflict, tool


@dataclass
class FakeToolset:
    tools: list[Tool]
    listings: int = 0
    stale: bool = True
    closed: bool = False

    @property
    def needs_listing(self) -> bool:
        return self.stale

    async def list_tools(self) -> list[Tool]:
        self.listings += 1
        self.stale = False
        return list(self.tools)

    async def aclose(self) -> None:
        self.closed = True


def remote(name: str) -> Tool:
    return Tool.from_schema({"name": name, "description": f"remote {name}", "parameters": {}})


@tool
def echo(text: str) -> str:
    """The local echo."""
    return text


async def test_listed_once_and_again_only_when_stale() -> None:
    source = FakeToolset([remote("a")])
    box = Toolbox()
    box.add_toolset(source)
    await box.ready()
    await box.ready()
    assert source.listings == 1 and box.names == ["a"]
    source.stale, source.tools = True, [remote("b")]
    await box.ready()
    assert source.listings == 2 and box.names == ["b"]  # "a" is gone with the source's list
    await box.aclose()
    assert source.closed


async def test_last_definition_wins_both_ways() -> None:
    source = FakeToolset([remote("echo")])
    box = Toolbox([echo])
    box.add_toolset(source)
    await box.ready()
    assert box.get("echo").description == "remote echo"  # type: ignore[union-attr]
    box.add(echo)  # defined again after the listing: the local one wins
    source.stale, source.tools = True, []
    await box.ready()
    assert box.get("echo") is echo  # a relisting removes only what the source had put there


async def test_an_overlay_takes_in_the_listing_under_its_client_tools() -> None:
    source = FakeToolset([remote("lookup")])
    box = Toolbox()
    box.add_toolset(source)
    client = Tool.from_schema({"name": "pick", "parameters": {}}, client=True)
    overlay = box.with_client_tools([client])
    await overlay.ready()
    assert set(overlay.names) == {"lookup", "pick"} and box.names == ["lookup"]
    clash = Tool.from_schema({"name": "lookup", "parameters": {}}, client=True)
    with pytest.raises(ToolConflict):
        box.with_client_tools([clash])
    fresh = FakeToolset([remote("other")])
    late = Toolbox()
    late.add_toolset(fresh)
    racing = late.with_client_tools([Tool.from_schema({"name": "other", "parameters": {}})])
    with pytest.raises(ToolConflict):  # the client tool came before the listing
        await racing.ready()
