"""AG-UI: a ``RunAgentInput`` request in, canonical events out as AG-UI SSE frames.

Written by hand rather than with the ``ag-ui-protocol`` package's models and
``EventEncoder``: building a pydantic event and dumping it costs several
microseconds per token, while the frames here are plain dicts (or, for the
per-token events, one f-string) serialised by pydantic-core. The tests validate
every frame we send against that package's models and the real JS clients.

Choices worth knowing:

* **Frames** are ``data: {json}\\n\\n`` with LF only (CRLF breaks the JS client).
* **Tool progress and partial outputs are ACTIVITY_SNAPSHOT events**, one
  activity message per tool call (id ``activity-<toolCallId>``, activityType
  ``tool-activity``; content ``{toolCallId, toolName, status, text?, fraction?,
  output?}``). The client *keeps* activity messages in its message list and
  replaces them in place, so a UI can render live progress from state alone and
  still has it after the run; a CUSTOM event would only reach subscribers at the
  moment it passes. Clients drop activity messages from the next request.
* **Front-end tools** (``RunAgentInput.tools``) end the run as a success with
  ``outcome.pendingToolCallIds``: exactly the calls without a result. No
  placeholder TOOL_CALL_RESULT is ever sent for them.
* **Approvals** end the run with an interrupt outcome, one interrupt per call
  (``id`` = the approval id, ``reason: "tool_call"``, ``toolCallId``, a message,
  and a ``responseSchema`` for ``{approved, reason?, arguments?, data?, remember?}``;
  ``arguments`` only where the tool allows edits). The next run's ``resume`` answers
  them: ``data`` reaches the tool as ``ToolContext.approval.data``, and ``remember:
  "thread"`` approves the tool's later calls in the thread. A policy's automatic
  decision has no AG-UI event: an approved call just runs, a denied one's
  TOOL_CALL_RESULT carries ``Tool call denied: <reason>`` (state ``output-denied``).
* **A tool's question** (MCP elicitation, ``InputRequested``) ends the run with an
  interrupt too: ``id`` = the question's id (``inp_...``), ``reason:
  "input_required"``, ``toolCallId``, its message, and the form asked for as the
  ``responseSchema``. A ``resume`` entry ``{status: "resolved", payload: {...form}}``
  accepts with the filled-in form; ``{status: "cancelled"}`` cancels, and
  ``{status: "cancelled", payload: {"action": "decline"}}`` declines.
* **Protocol versions.** Fields that exist only in AG-UI 1.0 are sent only when
  the request declares ``protocolVersion`` (1.0 clients always do; @ag-ui/client
  0.0.59 does not, and its strict outcome schema rejects unknown keys). A 0.0.59
  client gets: the same interrupt outcome for approvals (0.0.59 already has
  interrupts and ``resume``); no ``outcome`` at all for a run paused on
  front-end tools (it then derives the pending calls itself: the calls started
  without a result) and for a cancelled run (it has no "cancelled" outcome).
* **Delegates** (``_delegate`` calls): the sub-run's events carry its
  ``subagentRunId`` between SUBAGENT_STARTED (``parentToolCallId`` = the
  delegating call) and SUBAGENT_FINISHED / SUBAGENT_ERROR; its state events are
  not sent (clients would apply them to the parent's state). Messages a client
  sends back with a ``subagentRunId`` are the delegate's own and are skipped.
* **Tool errors**: TOOL_CALL_RESULT has no error field, so a failed or denied
  call's result carries the error text as content and
  ``metadata: {"callwright": {"state": "output-error"|"output-denied", ...}}``;
  a tool message sent back with that metadata is read as an error result.
"""

from ._agui_encoder import AGUIEncoder
from ._agui_request import decode_messages, decode_request
from ._agui_versions import SPOKEN, protocol_version, wants_protocol_1
from ._base import HEADERS

__all__ = [
    "HEADERS",
    "SPOKEN",
    "AGUIEncoder",
    "decode_messages",
    "decode_request",
    "protocol_version",
    "wants_protocol_1",
]
