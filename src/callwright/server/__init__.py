"""The HTTP shell: AG-UI, the AI SDK UI message stream, run replay and the playground.

Deliberately thin: each endpoint decodes the request with ``callwright.wire``,
checks approval claims against the approvals this server issued, starts a run
with ``Agent.start`` and streams the encoded events. Nothing here knows what a
tool or a model is.

``Endpoints`` holds the handlers; mount them in your own Starlette or FastAPI
app (with your own authentication, or an ``authenticate`` hook such as
``bearer_token``), or let ``create_app`` build a small app of them. Needs the
``server`` extra (Starlette).
"""

from ._app import create_app
from ._body import ServerLimits
from ._endpoints import DepsFactory, Endpoints
from ._security import Authenticate, bearer_token

__all__ = ["Authenticate", "DepsFactory", "Endpoints", "ServerLimits", "bearer_token", "create_app"]
