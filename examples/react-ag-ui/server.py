"""The built page and callwright's AG-UI endpoint, served from one origin.

    npm ci && npm run build          # writes dist/
    python server.py                 # the demo agent on the embedded model
    python server.py --agent my_agent.py:agent --journal runs.db --port 8000

The page calls ``POST /agui`` from the same origin, so no CORS and no proxy. Put your
own authentication in front of the route, or pass ``authenticate=`` (see
``callwright.server.Endpoints``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from callwright import Agent
from callwright.server import Endpoints
from callwright.store import Journal, SQLiteJournal

DIST = Path(__file__).with_name("dist")


def create_app(
    agent: Agent[Any, Any], *, journal: Journal | None = None, dist: Path = DIST
) -> Starlette:
    """The agent's AG-UI endpoint, and the page built into ``dist`` at ``/``."""
    endpoints = Endpoints(agent, journal=journal)
    return Starlette(
        routes=[
            Route("/agui", endpoints.handle_agui, methods=["POST"]),
            Mount("/", StaticFiles(directory=dist, html=True)),
        ],
        lifespan=endpoints.lifespan,
    )


def main() -> None:
    import uvicorn

    from callwright.cli import load_agent
    from callwright.demo import demo_agent

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agent", help="module:name or path/to/file.py:name (default: the demo)")
    parser.add_argument("--journal", help="a SQLite run journal: paused runs survive a restart")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    agent = load_agent(args.agent) if args.agent else demo_agent()
    journal = SQLiteJournal(args.journal) if args.journal else None
    uvicorn.run(create_app(agent, journal=journal), host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
