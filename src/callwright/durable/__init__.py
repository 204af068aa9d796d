"""Many processes on one Postgres: DBOS workflows for run segments, taking over the work
of a process that died, and tools run by ``callwright worker`` processes.

Needs the ``durable`` extra (``dbos``, ``psycopg``). See DEPLOY.md.
"""

from ._engine import DurableRuntime, new_executor_id
from ._segment import SegmentSpec

__all__ = ["DurableRuntime", "SegmentSpec", "new_executor_id"]
