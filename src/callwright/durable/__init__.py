"""Many processes on one Postgres: durable replicas that continue the runs of a process
that died (through the run journal), and tools run by ``callwright worker`` processes
(through a DBOS queue).

Needs the ``durable`` extra (``dbos``, ``psycopg``). See DEPLOY.md.
"""

from ._engine import DurableRuntime, new_executor_id
from ._segment import SegmentSpec
from ._worker import recover_executor, run_worker
from ._workers import ToolWorkers, use_tool_workers

__all__ = [
    "DurableRuntime",
    "SegmentSpec",
    "ToolWorkers",
    "new_executor_id",
    "recover_executor",
    "run_worker",
    "use_tool_workers",
]
