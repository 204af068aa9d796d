"""The playground page served at ``GET /`` by ``callwright serve`` (see ``server.py``).

``index.html`` holds the markup and styles; ``app.js`` the behaviour, written against
the real ``@ag-ui/client`` from npm. esbuild bundles ``app.js`` and its dependencies into
``playground.js``, which is committed so that serving the page needs no Node.js:
rebuild it with ``npm ci && npm run build`` in this folder after editing ``app.js``
(a test fails while the committed bundle is out of date).
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files

PAGE = "index.html"
SCRIPT = "playground.js"


@cache
def asset(name: str) -> bytes:
    """The bytes of one of the page's files, read once (they ship inside the package)."""
    return files(__name__).joinpath(name).read_bytes()
