"""pydantic-ai's AG-UI adapter under the same load (bench/load.py): a Starlette app whose
one route hands the request to ``AGUIAdapter.dispatch_request``.

``python bench/_load_pai_app.py --fd FD``. Its ``FunctionModel`` streams the turns of
``_load_turns`` the way callwright's scripted model does: the call (name and argument text
in one delta), then, after the tool result, the answer one word per delta.
"""

from __future__ import annotations

import argparse
import socket
from collections.abc import AsyncIterator

import uvicorn
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.ui.ag_ui import AGUIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from _load_turns import ARGUMENTS, RESULT, TOOL, WORDS


async def stream(
    messages: list[ModelMessage], info: AgentInfo
) -> AsyncIterator[str | DeltaToolCalls]:
    """A call first; once its result is in, the answer."""
    last = messages[-1]
    if isinstance(last, ModelRequest) and any(isinstance(p, ToolReturnPart) for p in last.parts):
        for i, word in enumerate(WORDS):
            yield word if i == len(WORDS) - 1 else word + " "
    else:
        yield {0: DeltaToolCall(name=TOOL, json_args=ARGUMENTS)}


agent: Agent[None, str] = Agent(FunctionModel(stream_function=stream))


@agent.tool_plain(name=TOOL)
async def lookup(city: str) -> str:
    """Look a city up. Returns at once: the load bench measures the runtime, not a tool."""
    return RESULT


async def agui(request: Request) -> Response:
    return await AGUIAdapter.dispatch_request(request, agent=agent)


app = Starlette(routes=[Route("/agui", agui, methods=["POST"])])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fd", type=int, required=True)
    args = parser.parse_args()
    sock = socket.socket(fileno=args.fd)
    config = uvicorn.Config(app, log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
