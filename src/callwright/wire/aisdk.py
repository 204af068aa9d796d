"""Vercel AI SDK: ``useChat``'s request in, canonical events out as the UI message stream.

Written by hand: the AI SDK is JavaScript, there is no Python implementation to
lean on, and the stream is a small set of JSON chunks. The tests drive it with
the real ``ai`` 5, 6 and 7 clients (``AbstractChat``, the state machine behind
``useChat``), whose zod schemas reject a chunk with a null where a field is
optional, so every optional field here is omitted rather than null.

Choices worth knowing:

* **Version.** The chunk set differs by major version of ``ai``: approvals
  (``tool-approval-request``, ``tool-output-denied``) exist from 6 on, the
  ``finishReason`` enum differs (5 has ``unknown``, 7 adds ``interrupted``).
  The client's major version comes from the ``x-ai-sdk-version`` request
  header (``5``, ``6``, ``7`` or a full version such as ``6.0.326``; set it with
  ``new DefaultChatTransport({headers: {"x-ai-sdk-version": "7"}})``), else
  from the server option, default 6. On 5 a tool that needs approval ends the
  stream with an ``error`` chunk saying so, and a denial is sent as
  ``tool-output-error``. A continued stream (a replica took over a dead one's run)
  retracts a step cut in its model turn with ``reset-step`` for ai 7, which alone
  has that chunk; older clients get the step closed.
* **One assistant message per response.** ``start.messageId`` is the id of the
  last assistant message when the request continues it (after a front-end
  tool's output or an approval), so the client appends to it instead of
  duplicating it; otherwise a new id.
* **Approvals.** ``tool-approval-request`` asks a human (ai 6+). A policy's automatic
  decision reaches ai 7 as ``streamText`` sends it: ``tool-approval-request`` with
  ``isAutomatic: true``, then ``tool-approval-response`` (``approved``, ``reason``),
  then the output or ``tool-output-denied``; ai 5 and 6 have no such chunks and see
  only the result. An answer may carry ``data`` for the tool and ``remember:
  "thread"``, in the part's ``approval`` object or in the body's ``approvals``
  (``{approvalId: {data?, remember?}}``: ``addToolApprovalResponse``'s
  ``options.body``). ``onToolCall`` sees a front-end call when it is announced
  (``tool-input-available``), before any verdict, as with ``streamText``: a page
  should not run a call whose part ends ``output-denied``.
* **Front-end tools** are tools without server code: the agent's own client
  tools, or ``tools`` sent in the request body (``[{name, description,
  parameters}]``, an extension: useChat sends none by default). Their parts stay
  ``input-available`` for ``onToolCall`` / ``addToolOutput``.
* **A tool's question** (MCP elicitation, ``InputRequested``): the call's part stays
  ``input-available`` (re-sent as such when a resumed call asks again) and a
  ``data-input-request`` part with id ``input-<toolCallId>`` carries ``{toolCallId,
  toolName, requestId, message, requestedSchema, url?}``. The page answers like a
  front-end tool: ``addToolOutput({tool, toolCallId, output: {requestId, action:
  "accept"|"decline"|"cancel", content?}})``; the resumed run replaces that output
  with the call's real one.
* **Progress** is a ``data-tool-progress`` part with id ``progress-<toolCallId>``
  (updated in place; ``data: {toolCallId, toolName, status, text?, fraction?}``);
  partial outputs are ``tool-output-available`` with ``preliminary: true``.
  Run state snapshots and deltas go out as transient ``data-state`` /
  ``data-state-delta`` parts (``onData`` only).
* **Errors** are ``{"type": "error", "errorText": "[code] message"}``.
* **Delegates**: the UI message stream has no place for a sub-run's own parts,
  so a sub-run shows as nested progress of the delegating call: its
  ``data-tool-progress`` part gains ``subagent: {runId, name, status, text,
  calls: [{toolCallId, toolName, state}]}``, updated in place as the sub-agent
  calls tools and writes (text is sent when a text segment ends, not per token).
"""

from ._aisdk_encoder import HEADERS, AISDKEncoder
from ._aisdk_request import INTERRUPTED, NOT_EXECUTED, continued_message_id, decode_request
from ._aisdk_versions import FINISH_REASONS, SUPPORTED_VERSIONS, VERSION_HEADER, client_version

__all__ = [
    "FINISH_REASONS",
    "HEADERS",
    "INTERRUPTED",
    "NOT_EXECUTED",
    "SUPPORTED_VERSIONS",
    "VERSION_HEADER",
    "AISDKEncoder",
    "client_version",
    "continued_message_id",
    "decode_request",
]
