"""The agent loop: ``Agent`` (the facade) over a private package of stages.

``agent.py`` holds the configuration and the ways to run it; ``loop.py`` the
``Run`` and its lifecycle; ``step.py`` one model turn; ``resume.py`` what a
paused run picks up again.
"""

from ._types import (
    Limits,
    OutputSpec,
    RunFailed,
    RunResult,
    RunSettings,
    StepInfo,
    StepPlan,
    StopCondition,
    has_tool_call,
    step_count_is,
)
from .agent import Agent, EventLoopRunning, Prompt
from .loop import Lifecycle, Run, RunAlreadyStarted
from .resume import UnknownDecision
from .step import json_depth

__all__ = [
    "Agent",
    "EventLoopRunning",
    "Lifecycle",
    "Limits",
    "OutputSpec",
    "Prompt",
    "Run",
    "RunAlreadyStarted",
    "RunFailed",
    "RunResult",
    "RunSettings",
    "StepInfo",
    "StepPlan",
    "StopCondition",
    "UnknownDecision",
    "has_tool_call",
    "json_depth",
    "step_count_is",
]
