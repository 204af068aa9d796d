"""The tracer and metric instruments runs report to, made once per pair of providers.

Names follow the OpenTelemetry GenAI semantic conventions (development status, the
``semantic-conventions-genai`` repository): the spans ``invoke_agent``, ``chat``
and ``execute_tool``, the metrics ``gen_ai.client.token.usage`` and
``gen_ai.client.operation.duration`` with the bucket boundaries the conventions
advise. What they have no name for is under ``callwright.``: tool calls by outcome
and approvals waiting.
"""

from __future__ import annotations

from importlib import metadata
from typing import Any, Final

OPERATION: Final = "gen_ai.operation.name"
PROVIDER: Final = "gen_ai.provider.name"
AGENT_NAME: Final = "gen_ai.agent.name"
CONVERSATION: Final = "gen_ai.conversation.id"
REQUEST_MODEL: Final = "gen_ai.request.model"
INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
TOKEN_TYPE: Final = "gen_ai.token.type"
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_TYPE: Final = "gen_ai.tool.type"
TOOL_DESCRIPTION: Final = "gen_ai.tool.description"
TOOL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
TOOL_RESULT: Final = "gen_ai.tool.call.result"
ERROR_TYPE: Final = "error.type"
REQUEST_SETTINGS: Final = {
    "temperature": "gen_ai.request.temperature",
    "max_tokens": "gen_ai.request.max_tokens",
    "top_p": "gen_ai.request.top_p",
    "parallel_tool_calls": "callwright.request.parallel_tool_calls",
    "reasoning_effort": "callwright.request.reasoning_effort",
}
"""``ModelSettings`` fields as ``chat`` span attributes (the conventions' names where
they have one)."""
REQUEST_EXTRAS: Final = {
    "seed": "gen_ai.request.seed",
    "frequency_penalty": "gen_ai.request.frequency_penalty",
    "presence_penalty": "gen_ai.request.presence_penalty",
    "top_k": "gen_ai.request.top_k",
    "stop": "gen_ai.request.stop_sequences",
}
"""Provider extras the conventions name, recorded when their value is a plain one."""
TOOL_CHOICE: Final = "callwright.request.tool_choice"
EXTRA_KEYS: Final = "callwright.request.extra"

RUN_ID: Final = "callwright.run.id"
RUN_DEPTH: Final = "callwright.run.depth"
RUN_STATUS: Final = "callwright.run.status"
RUN_REASON: Final = "callwright.run.reason"
STEP: Final = "callwright.step"
CALL_OUTCOME: Final = "callwright.call.outcome"
APPROVAL_ID: Final = "callwright.approval.id"
APPROVED: Final = "callwright.approval.approved"
LINK_TYPE: Final = "callwright.link.type"

TOKEN_BUCKETS: Final = (
    1,
    4,
    16,
    64,
    256,
    1024,
    4096,
    16384,
    65536,
    262144,
    1048576,
    4194304,
    16777216,
    67108864,
)
"""``gen_ai.client.token.usage`` boundaries, as the conventions advise."""
DURATION_BUCKETS: Final = (
    0.01,
    0.02,
    0.04,
    0.08,
    0.16,
    0.32,
    0.64,
    1.28,
    2.56,
    5.12,
    10.24,
    20.48,
    40.96,
    81.92,
)
"""``gen_ai.client.operation.duration`` boundaries (seconds), as the conventions advise."""


def _version() -> str:
    try:
        return metadata.version("callwright")
    except metadata.PackageNotFoundError:  # running from a source tree
        return "0"


class Hub:
    """One tracer and the four instruments, shared by every run that reports to them."""

    def __init__(self, tracer_provider: Any, meter_provider: Any) -> None:
        version = _version()
        self.tracer = tracer_provider.get_tracer("callwright", version)
        meter = meter_provider.get_meter("callwright", version)
        self.token_usage = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
        )
        self.duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        self.tool_calls = meter.create_counter(
            "callwright.tool.calls",
            unit="{call}",
            description="Tool calls that got their result, by tool and outcome.",
        )
        self.approvals_waiting = meter.create_up_down_counter(
            "callwright.approvals.waiting",
            unit="{approval}",
            description="Approvals requested and not answered yet (answers seen by this process).",
        )
