"""The reference pages generated from the code: docs/reference/wire.md and cli.md.

``wire.md`` is what a real server sends: an app made by ``create_app`` around a
``ScriptedModel`` agent is driven through each flow over httpx's ASGI transport, and
every request body and response frame is written down as sent, with the ids the
server makes (approval, question, message and run ids) replaced by stable
placeholders. ``cli.md`` is each subcommand's ``--help`` from ``callwright.cli.parser()``.

Run ``.venv/bin/python tests/docs_gen.py`` (``make docs-gen``) to rewrite both;
``tests/test_docs_gen.py`` fails while the committed pages differ from these.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import re
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from callwright import (
    Agent,
    ApprovalVerdict,
    InputRequest,
    InputRequired,
    Tool,
    ToolContext,
    ToolError,
    tool,
)
from callwright.cli import parser
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ModelRequest, ScriptedModel, call, think
from callwright.server import create_app
from callwright.store import SQLiteJournal
from live_server import Server

ROOT = Path(__file__).resolve().parent.parent
WIRE_PAGE = ROOT / "docs" / "reference" / "wire.md"
CLI_PAGE = ROOT / "docs" / "reference" / "cli.md"
REGENERATE = ".venv/bin/python tests/docs_gen.py"
BASE = "http://localhost"
AI_SDK_VERSION = "6"

# A 1x1 PNG: the smallest image a user message can carry.
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"
    "AAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


# --- the agent every flow talks to ---------------------------------------------------------


@tool
def weather(city: str) -> dict[str, Any]:
    """The weather in a city.

    Args:
        city: The city's name.
    """
    return {"city": city, "temperature": 21}


@tool
def check_stock(item: str) -> str:
    """Look an item up in the warehouse (its service is down)."""
    raise ToolError("the warehouse service is not answering")


@tool(requires_approval=True, allow_edits=True)
def delete_file(path: str) -> str:
    """Delete a file (a human approves first).

    Args:
        path: The file to delete.
    """
    return f"deleted {path}"


@tool(requires_approval=lambda args: ApprovalVerdict.deny("the archive is read-only"))
def purge_archive(year: int) -> str:
    """Purge a year of the archive (a policy denies it without asking anyone).

    Args:
        year: The year to purge.
    """
    return f"purged {year}"


@tool(title="Deploy App")
async def deploy(env: str, ctx: ToolContext) -> dict[str, Any]:
    """Deploy, reporting progress and partial results.

    Args:
        env: The target environment.
    """
    for stage in (1, 2):
        ctx.progress(f"stage {stage}/2", stage / 2)
        ctx.update({"stage": stage})
        await asyncio.sleep(0)
    return {"env": env, "status": "deployed"}


@tool
def book_table(restaurant: str, ctx: ToolContext) -> str:
    """Book a table, asking the human how many guests (as an MCP server's question does).

    Args:
        restaurant: Where to book.
    """
    answer = ctx.answer
    if answer is None:
        schema = {
            "type": "object",
            "properties": {"guests": {"type": "integer", "title": "Guests", "minimum": 1}},
            "required": ["guests"],
        }
        raise InputRequired(InputRequest("How many guests?", schema))
    if answer.action != "accept" or answer.content is None:
        return f"Not booked: the user chose {answer.action}."
    return f"Booked {restaurant} for {answer.content['guests']}."


RELEASE = threading.Event()
"""Lets ``long_report`` finish: set once a second client follows its stream."""


@tool
async def long_report(ctx: ToolContext) -> str:
    """Write a report that takes a while (until ``RELEASE``, or cancelled)."""
    ctx.progress("writing")
    while not RELEASE.is_set():
        if ctx.is_cancelled():
            ctx.raise_if_cancelled()
        await asyncio.sleep(0.01)
    return "the report"


class WatchedJournal(SQLiteJournal):
    """Tells the generator when a resume request has found the chat's running stream."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.followed = threading.Event()

    def live_segment(self, thread_id: str, principal: str = "") -> str | None:
        found = super().live_segment(thread_id, principal)
        if found is not None:
            self.followed.set()
        return found


# A front-end tool the server declares (no code): the AI SDK's usual way, since useChat
# sends no tool definitions. AG-UI clients send theirs in RunAgentInput.tools.
PICK_COLOR = {
    "name": "pick_color",
    "description": "Ask the user to pick a color.",
    "parameters": {
        "type": "object",
        "properties": {"options": {"type": "array", "items": {"type": "string"}}},
        "required": ["options"],
    },
}
CONFIRM = {
    "name": "confirm",
    "description": "Ask the user to confirm.",
    "parameters": {
        "type": "object",
        "properties": {"question": {"type": "string"}},
        "required": ["question"],
    },
}

FIRST_TURNS: dict[str, list[Any]] = {
    "hello": [think("A greeting."), "Hello! ", "How can I help?"],
    "weather": ["Let me check.", call("weather", id="call_1", chunks=['{"city"', ': "Paris"}'])],
    "stock": [call("check_stock", {"item": "lamp"}, id="call_1")],
    "delete": [
        call(
            "delete_file",
            {"path": "/tmp/report.txt", "_reasoningForCall": "clean up"},
            id="call_1",
        )
    ],
    "purge": [call("purge_archive", {"year": 2019}, id="call_1")],
    "color": [call("pick_color", {"options": ["red", "blue"]}, id="call_1")],
    "confirm": [call("confirm", {"question": "Go ahead?"}, id="call_1")],
    "deploy": [call("deploy", {"env": "prod"}, id="call_1")],
    "book": [call("book_table", {"restaurant": "Chez Nous"}, id="call_1")],
    "report": [call("long_report", {}, id="call_1")],
}


def script(request: ModelRequest) -> list[Any]:
    """The first turn by the first word of the user's latest message; after the tool
    results, ``Done:`` and what the model saw of them."""
    messages = request.messages
    last_user = max(i for i, m in enumerate(messages) if isinstance(m, UserMessage))
    user = messages[last_user]
    assert isinstance(user, UserMessage)
    results = [m for m in messages[last_user + 1 :] if isinstance(m, ToolResultMessage)]
    if results:
        seen = "; ".join(f"{r.content}" + (" (error)" if r.is_error else "") for r in results)
        return [f"Done: {seen}"]
    if user.files:
        kinds = ", ".join(f.media_type for f in user.files)
        return [f"I got {len(user.files)} file ({kinds}) with your message."]
    return FIRST_TURNS.get(user.content.split()[0], ["I do not know that one."])


def make_agent() -> Agent:
    tools = [weather, check_stock, delete_file, purge_archive, deploy, book_table, long_report]
    agent = Agent(ScriptedModel(script), tools)
    agent.toolbox.add(Tool.from_schema(CONFIRM, client=True))
    return agent


# --- recording requests and responses ------------------------------------------------------


@dataclass
class Exchange:
    """One request and the response it got, as the page shows them."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    status: int
    response_headers: dict[str, str]
    frames: list[Any]
    text: str
    note: str = ""
    """Said under the response: what the client did with it."""


@dataclass
class Placeholders:
    """Ids the server makes, each replaced by ``<kind-N>`` in order of appearance."""

    seen: dict[str, str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    PATTERN = re.compile(
        r"\b(?:apr|inp|msg|thread|req|run)_[A-Za-z0-9_\-]{8,}|"
        r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b|"
        r"\b[0-9a-f]{32}\b"
    )

    def name(self, value: str) -> str:
        if value not in self.seen:
            kind = {"apr": "approval", "inp": "question", "msg": "message", "req": "run"}.get(
                value.split("_")[0], value.split("_")[0] if "_" in value else "id"
            )
            self.counts[kind] = self.counts.get(kind, 0) + 1
            self.seen[value] = f"<{kind}-{self.counts[kind]}>"
        return self.seen[value]

    def text(self, text: str) -> str:
        return self.PATTERN.sub(lambda m: self.name(m.group(0)), text)


class Recorder:
    """A client of the app that keeps every exchange."""

    def __init__(self, app: Any = None, url: str = BASE) -> None:
        transport = httpx.ASGITransport(app=app) if app is not None else None
        self.client = httpx.AsyncClient(transport=transport, base_url=url, timeout=30)
        self.exchanges: list[Exchange] = []

    async def leave(self, path: str, body: Any, until: str) -> Exchange:
        """POST, read frames until one holding ``until``, then drop the connection."""
        blocks: list[str] = []
        async with self.client.stream("POST", path, json=body) as r:
            async for line in r.aiter_lines():
                if line:
                    blocks.append(line)
                if until in line:
                    break
            shown = {k: v for k, v in r.headers.items() if k in SHOWN_HEADERS}
        frames = [json.loads(b.removeprefix("data: ")) for b in blocks]
        text = "".join(b + "\n\n" for b in blocks)
        return Exchange("POST", path, {}, body, r.status_code, shown, frames, text)

    async def post(self, path: str, body: Any, headers: dict[str, str] | None = None) -> Exchange:
        response = await self.client.post(path, json=body, headers=headers or {})
        return self._keep("POST", path, headers or {}, body, response)

    async def get(self, path: str, headers: dict[str, str] | None = None) -> Exchange:
        response = await self.client.get(path, headers=headers or {})
        return self._keep("GET", path, headers or {}, None, response)

    def _keep(
        self, method: str, path: str, headers: dict[str, str], body: Any, r: httpx.Response
    ) -> Exchange:
        shown = {k: v for k, v in r.headers.items() if k in SHOWN_HEADERS}
        frames: list[Any] = []
        if r.headers.get("content-type", "").startswith("text/event-stream"):
            for block in r.text.split("\n\n"):
                if block:
                    data = block.removeprefix("data: ")
                    frames.append(data if data == "[DONE]" else json.loads(data))
        exchange = Exchange(method, path, headers, body, r.status_code, shown, frames, r.text)
        self.exchanges.append(exchange)
        return exchange

    async def aclose(self) -> None:
        await self.client.aclose()


SHOWN_HEADERS = (
    "content-type",
    "x-vercel-ai-ui-message-stream",
    "x-callwright-run-id",
)


# --- the two protocols' clients, as far as the flows need them -------------------------------


def agui_body(
    messages: list[dict[str, Any]], run: str, *, tools: list[Any] | None = None, **extra: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "threadId": "thread-1",
        "runId": run,
        "protocolVersion": "1.0.0",
        "messages": messages,
        "tools": tools or [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    body.update(extra)
    return body


def agui_user(text: str, id: str = "u1") -> dict[str, Any]:
    return {"id": id, "role": "user", "content": text}


def agui_history(frames: list[Any]) -> list[dict[str, Any]]:
    """The messages an AG-UI client holds after these frames (text, calls, results)."""
    messages: list[dict[str, Any]] = []
    by_id: dict[str, dict[str, Any]] = {}
    calls: dict[str, dict[str, Any]] = {}
    for f in frames:
        kind = f["type"]
        if kind == "TEXT_MESSAGE_START":
            by_id[f["messageId"]] = {"id": f["messageId"], "role": "assistant", "content": ""}
            messages.append(by_id[f["messageId"]])
        elif kind == "TEXT_MESSAGE_CONTENT":
            by_id[f["messageId"]]["content"] += f["delta"]
        elif kind == "TOOL_CALL_START":
            parent = by_id.get(f["parentMessageId"])
            if parent is None:
                parent = {"id": f["parentMessageId"], "role": "assistant"}
                by_id[f["parentMessageId"]] = parent
                messages.append(parent)
            calls[f["toolCallId"]] = {
                "id": f["toolCallId"],
                "type": "function",
                "function": {"name": f["toolCallName"], "arguments": ""},
            }
            parent.setdefault("toolCalls", []).append(calls[f["toolCallId"]])
        elif kind == "TOOL_CALL_ARGS":
            calls[f["toolCallId"]]["function"]["arguments"] += f["delta"]
        elif kind == "TOOL_CALL_RESULT":
            messages.append(
                {
                    "id": f["messageId"],
                    "role": "tool",
                    "toolCallId": f["toolCallId"],
                    "content": f["content"],
                }
            )
    return messages


def ui_user(text: str, id: str = "u1", files: list[Any] | None = None) -> dict[str, Any]:
    parts: list[Any] = [*(files or []), {"type": "text", "text": text}]
    return {"id": id, "role": "user", "parts": parts}


def ui_assistant(frames: list[Any], edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """The assistant UI message useChat holds after these chunks, its tool part then
    changed by ``edit`` (the answer the page adds)."""
    start = next(f for f in frames if isinstance(f, dict) and f["type"] == "start")
    parts: list[dict[str, Any]] = []
    tools: dict[str, dict[str, Any]] = {}
    for f in frames:
        if not isinstance(f, dict):
            continue
        kind = f["type"]
        if kind == "start-step":
            parts.append({"type": "step-start"})
        elif kind == "text-start":
            parts.append({"type": "text", "text": "", "state": "done"})
        elif kind == "text-delta":
            parts[-1]["text"] += f["delta"]
        elif kind == "tool-input-available":
            part = {
                "type": f"tool-{f['toolName']}",
                "toolCallId": f["toolCallId"],
                "state": "input-available",
                "input": f["input"],
            }
            tools[f["toolCallId"]] = part
            parts.append(part)
        elif kind == "tool-approval-request":
            tools[f["toolCallId"]]["state"] = "approval-requested"
            tools[f["toolCallId"]]["approval"] = {"id": f["approvalId"]}
    edit(tools["call_1"])
    return {"id": start["messageId"], "role": "assistant", "parts": parts}


def ai_sdk_headers(version: str = AI_SDK_VERSION) -> dict[str, str]:
    return {"x-ai-sdk-version": version}


# --- the flows ----------------------------------------------------------------------------


@dataclass
class Flow:
    title: str
    intro: str
    agui: list[Exchange]
    ai_sdk: list[Exchange]
    version: str = AI_SDK_VERSION
    """The AI SDK major version the flow's requests name."""


async def flows() -> list[Flow]:
    out: list[Flow] = []
    http = Recorder(create_app(make_agent()))
    try:
        out.append(await _one_turn(http, "Text", "hello", TEXT))
        out.append(await _one_turn(http, "A server tool", "weather", SERVER_TOOL))
        out.append(await _one_turn(http, "A failing tool", "stock", FAILING_TOOL))
        out.append(await _approval(http, "approve"))
        out.append(await _approval(http, "deny"))
        out.append(await _approval(http, "edit"))
        out.append(await _one_turn(http, "Approval: a policy decides", "purge", POLICY, "7"))
        out.append(await _front_end(http))
        out.append(await _one_turn(http, "Progress and partial output", "deploy", PROGRESS))
        out.append(await _files(http))
        out.append(await _question(http))
    finally:
        await http.aclose()
    with tempfile.TemporaryDirectory() as folder:
        journal = WatchedJournal(str(Path(folder) / "runs.db"))
        with Server(create_app(make_agent(), journal=journal)) as server:
            journaled = Recorder(url=server.url)
            try:
                out.append(await _replay(journaled, journal))
            finally:
                await journaled.aclose()
        journal.close()
    return out


async def _one_turn(
    http: Recorder, title: str, prompt: str, intro: str, version: str = AI_SDK_VERSION
) -> Flow:
    agui = await http.post("/agui", agui_body([agui_user(f"{prompt} please")], "run-1"))
    chat = {"id": "chat-1", "messages": [ui_user(f"{prompt} please")], "trigger": "submit-message"}
    ai_sdk = await http.post("/api/chat", chat, ai_sdk_headers(version))
    return Flow(title, intro, [agui], [ai_sdk], version)


async def _approval(http: Recorder, how: str) -> Flow:
    thread = f"thread-{how}"
    user = agui_user("delete the report")
    first = await http.post("/agui", agui_body([user], "run-1", threadId=thread))
    (interrupt,) = first.frames[-1]["outcome"]["interrupts"]
    payload: dict[str, Any] = {
        "approve": {"approved": True},
        "deny": {"approved": False, "reason": "keep it for now"},
        "edit": {"approved": True, "arguments": {"path": "/tmp/old-report.txt"}},
    }[how]
    resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": payload}]
    body = agui_body([user, *agui_history(first.frames)], "run-2", threadId=thread, resume=resume)
    second = await http.post("/agui", body)

    chat_id = f"chat-{how}"
    ui = ui_user("delete the report")
    chat = {"id": chat_id, "messages": [ui], "trigger": "submit-message"}
    one = await http.post("/api/chat", chat, ai_sdk_headers())

    def answer(part: dict[str, Any]) -> None:
        part["state"] = "approval-responded"
        part["approval"]["approved"] = how != "deny"
        if how == "deny":
            part["approval"]["reason"] = "keep it for now"
        if how == "edit":
            part["input"] = {"path": "/tmp/old-report.txt"}

    reply = ui_assistant(one.frames, answer)
    chat = {"id": chat_id, "messages": [ui, reply], "trigger": "submit-message"}
    two = await http.post("/api/chat", chat, ai_sdk_headers())
    intro = {"approve": APPROVE, "deny": DENY, "edit": EDIT}[how]
    title = {"approve": "Approval: approve", "deny": "Approval: deny", "edit": "Approval: edit"}
    return Flow(title[how], intro, [first, second], [one, two])


async def _front_end(http: Recorder) -> Flow:
    user = agui_user("color please")
    first = await http.post("/agui", agui_body([user], "run-1", tools=[PICK_COLOR]))
    result = {"id": "r1", "role": "tool", "toolCallId": "call_1", "content": '"blue"'}
    history = [user, *agui_history(first.frames), result]
    second = await http.post("/agui", agui_body(history, "run-2", tools=[PICK_COLOR]))

    ui = ui_user("confirm please")
    chat = {"id": "chat-confirm", "messages": [ui], "trigger": "submit-message"}
    one = await http.post("/api/chat", chat, ai_sdk_headers())

    def answer(part: dict[str, Any]) -> None:
        part["state"] = "output-available"
        part["output"] = {"confirmed": True}

    reply = ui_assistant(one.frames, answer)
    chat = {"id": "chat-confirm", "messages": [ui, reply], "trigger": "submit-message"}
    two = await http.post("/api/chat", chat, ai_sdk_headers())
    return Flow("A front-end tool", FRONT_END, [first, second], [one, two])


async def _files(http: Recorder) -> Flow:
    image = {"type": "image", "source": {"type": "data", "value": PNG, "mimeType": "image/png"}}
    user = {
        "id": "u1",
        "role": "user",
        "content": [{"type": "text", "text": "What is in this picture?"}, image],
    }
    agui = await http.post("/agui", agui_body([user], "run-1"))
    part = {"type": "file", "mediaType": "image/png", "url": f"data:image/png;base64,{PNG}"}
    chat = {
        "id": "chat-files",
        "messages": [ui_user("What is in this picture?", files=[part])],
        "trigger": "submit-message",
    }
    ai_sdk = await http.post("/api/chat", chat, ai_sdk_headers())
    return Flow("Files", FILES, [agui], [ai_sdk])


async def _question(http: Recorder) -> Flow:
    thread = "thread-book"
    user = agui_user("book a table")
    first = await http.post("/agui", agui_body([user], "run-1", threadId=thread))
    (interrupt,) = first.frames[-1]["outcome"]["interrupts"]
    resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"guests": 4}}]
    body = agui_body([user, *agui_history(first.frames)], "run-2", threadId=thread, resume=resume)
    second = await http.post("/agui", body)

    ui = ui_user("book a table")
    chat = {"id": "chat-book", "messages": [ui], "trigger": "submit-message"}
    one = await http.post("/api/chat", chat, ai_sdk_headers())
    asked = next(f for f in one.frames if isinstance(f, dict) and f["type"] == "data-input-request")

    def answer(part: dict[str, Any]) -> None:
        part["state"] = "output-available"
        part["output"] = {
            "requestId": asked["data"]["requestId"],
            "action": "accept",
            "content": {"guests": 4},
        }

    reply = ui_assistant(one.frames, answer)
    chat = {"id": "chat-book", "messages": [ui, reply], "trigger": "submit-message"}
    two = await http.post("/api/chat", chat, ai_sdk_headers())
    return Flow("A tool's question (elicitation)", QUESTION, [first, second], [one, two])


async def _replay(http: Recorder, journal: WatchedJournal) -> Flow:
    RELEASE.clear()
    body = agui_body([agui_user("report please")], "run-1")
    first = await http.leave("/agui", body, '"ACTIVITY_SNAPSHOT"')
    first.note = (
        f"The client drops the connection after these {len(first.frames)} frames, "
        "while the tool runs."
    )
    # the replay follows the run to its end: the cancellation the disconnect caused
    again = await http.get(f"/runs/run-1/events?after={len(first.frames)}")

    chat = {"id": "chat-1", "messages": [ui_user("report please")], "trigger": "submit-message"}
    journal.followed.clear()
    original = asyncio.create_task(http.post("/api/chat", chat, ai_sdk_headers()))
    while True:  # until a resume request finds the chat's running stream (204 before)
        resumed = asyncio.create_task(http.get("/api/chat/chat-1/stream"))
        while not journal.followed.is_set() and not resumed.done():
            await asyncio.sleep(0.01)
        if journal.followed.is_set():
            break
        http.exchanges.remove(resumed.result())
    RELEASE.set()
    one, two = await original, await resumed
    two.note = (
        "This second client asked while the run was going: it gets the stream from its "
        "first frame, then follows it live."
    )
    idle = await http.get("/api/chat/chat-1/stream")
    return Flow("Resume after a disconnect", REPLAY, [first, again], [one, two, idle])


# --- the page ----------------------------------------------------------------------------


def _request(e: Exchange, names: Placeholders) -> str:
    lines = [f"{e.method} {e.path}"]
    if e.method == "POST":
        lines.append("content-type: application/json")
    lines += [f"{k}: {v}" for k, v in e.headers.items()]
    text = "\n".join(lines)
    if e.body is not None:
        text += "\n\n" + json.dumps(e.body, indent=2, ensure_ascii=False)
    return "```http\n" + names.text(text) + "\n```\n"


def _response(e: Exchange, names: Placeholders) -> str:
    lines = [f"HTTP/1.1 {e.status}"]
    lines += [f"{k}: {v}" for k, v in e.response_headers.items()]
    text = "\n".join(lines)
    if e.frames:  # as sent, without the empty line after each frame
        text += "\n\n" + "\n".join(block for block in e.text.split("\n\n") if block)
    elif e.text:
        text += "\n\n" + e.text
    return "```text\n" + names.text(text) + "\n```\n"


def _exchanges(label: str, exchanges: list[Exchange], names: Placeholders) -> str:
    out = [f"#### {label}\n"]
    for i, e in enumerate(exchanges):
        if len(exchanges) > 1:
            out.append(f"Request {i + 1}:\n")
        out.append(_request(e, names))
        out.append(_response(e, names))
        if e.note:
            out.append(e.note + "\n")
    return "\n".join(out)


def wire_page() -> str:
    out = [WIRE_HEAD]
    for flow in asyncio.run(flows()):
        names = Placeholders()  # numbered per flow, so one flow's change moves no other
        out.append(f"## {flow.title}\n\n{flow.intro.strip()}\n")
        out.append(_exchanges("AG-UI", flow.agui, names))
        out.append(_exchanges(f"AI SDK (ai {flow.version})", flow.ai_sdk, names))
    out.append(WIRE_TAIL)
    return "\n".join(out)


def cli_page() -> str:
    top = _help([])
    (names,) = re.findall(r"\{([a-z,]+)\}", top.split("\n")[0] + top)[:1]
    out = [CLI_HEAD, "## callwright\n", _fenced(top)]
    for name in names.split(","):
        out.append(f"## callwright {name}\n")
        out.append(_fenced(_help([name])))
    out.append(CLI_TAIL)
    return "\n".join(out)


def _help(command: list[str]) -> str:
    """``callwright <command> --help`` as it prints at 88 columns."""
    out = io.StringIO()
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "88"
    try:
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            parser().parse_args([*command, "--help"])
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved
    return out.getvalue()


def _fenced(text: str) -> str:
    return "```text\n" + text.rstrip() + "\n```\n"


def main() -> int:
    WIRE_PAGE.write_text(wire_page(), encoding="utf-8")
    CLI_PAGE.write_text(cli_page(), encoding="utf-8")
    print(f"wrote {WIRE_PAGE.relative_to(ROOT)} and {CLI_PAGE.relative_to(ROOT)}")
    return 0


# --- the page's words (the frames are the generator's) -------------------------------------

WIRE_HEAD = """\
# Wire flows

<!-- Generated by tests/docs_gen.py from a real server: do not edit by hand.
     Rewrite it with `.venv/bin/python tests/docs_gen.py` (make docs-gen). -->

Every flow below is a real exchange with a callwright server, recorded by
`tests/docs_gen.py` and checked by the tests: the request body a front end sends and
every frame the server answers, on AG-UI (`POST /agui`) and on the AI SDK UI message
stream (`POST /api/chat`). The agent runs on a scripted model, so the frames are the
same on every run. Ids the server makes are shown as placeholders: `<approval-1>`,
`<question-1>`, `<message-1>` and so on, numbered in order of appearance within each
flow. Ids the client chose (`thread-1`, `run-1`, `chat-1`) and the model's call ids
(`call_1`) are shown as sent. Once a tool's result is in, the scripted model answers
`Done:` and the results it saw, an error result marked `(error)`: that line shows what
the model was told.

Each frame is one `data: <json>` line followed by an empty line on the wire; the
empty lines are left out here. The AI SDK stream ends with `data: [DONE]`. What each
frame means, and which canonical event it comes from, is in
[Events and the two wires](../concepts/events.md); the endpoints, their statuses and
their error codes are in [HTTP endpoints](http.md).

The AI SDK requests send `x-ai-sdk-version: 6`. Version 5 has no approvals (a call
that needs one ends the stream with an `[approval_unsupported]` error) and version 7
adds `isAutomatic` approval chunks for calls a policy decides (the flow
"Approval: a policy decides" sends `x-ai-sdk-version: 7`); see
[HTTP endpoints](http.md#headers).
"""

WIRE_TAIL = """\
## Where to go next

- [Events and the two wires](../concepts/events.md): each canonical event and the
  frames it becomes.
- [The call state machine](../concepts/calls.md): the states a tool part goes through.
- [HTTP endpoints](http.md): statuses, error codes and headers.
"""

TEXT = """
The model answers with reasoning and text, and calls no tool. On AG-UI the reasoning
is a `REASONING_*` message and the text a `TEXT_MESSAGE_*` message; on the AI SDK
stream they are `reasoning-*` and `text-*` chunks of one assistant message. The text
comes in two deltas, as a model streams it.
"""

SERVER_TOOL = """
The model calls a tool that runs on the server (`weather`), and answers once the
result is in. The call's arguments stream (`TOOL_CALL_ARGS`, `tool-input-delta`)
before the call is complete (`TOOL_CALL_END`, `tool-input-available`); its result is
`TOOL_CALL_RESULT` or `tool-output-available`. Both steps of the run belong to one
request.
"""

FAILING_TOOL = """
The tool raises `ToolError`. The run goes on: the call ends `output-error`, the model
sees the error text and answers. AG-UI has no error field on `TOOL_CALL_RESULT`, so
the state and the error's kind travel in `metadata.callwright`; the AI SDK sends
`tool-output-error` with `errorText`.
"""

APPROVE = """
`delete_file` needs a human's approval. The first request ends paused: on AG-UI with
an `interrupt` outcome whose id is the approval id, on the AI SDK with
`tool-approval-request` (its `approvalId` is not the call id). The second request
carries the answer: AG-UI in `resume`, the AI SDK as the tool part in state
`approval-responded` (what `addToolApprovalResponse` makes). The server honours an
answer only for an approval it issued, for that exact call, once.
"""

DENY = """
The same call, denied with a reason. The call ends `output-denied` and the model sees
`Tool call denied: <reason>`. AG-UI marks the `TOOL_CALL_RESULT` with
`metadata.callwright.state`; the AI SDK (ai 6 and later) sends `tool-output-denied`.
"""

EDIT = """
The same call, approved with edited arguments. `delete_file` allows edits
(`@tool(allow_edits=True)`), so the interrupt's `responseSchema` offers `arguments`,
and on AG-UI the new arguments go in the resume payload. They are validated like the
model's, and the tool runs with them.

The AI SDK's approval answer has no place for edited arguments. A page that changes
the part's `input` instead is refused: the approval was issued for other arguments.
"""

POLICY = """
A policy decides the call without asking anyone: `purge_archive`'s
`requires_approval` returns `ApprovalVerdict.deny(reason)`. Nothing pauses. The call
ends `output-denied` and the model sees the reason. AG-UI has no approval events, so
only the result shows it. The AI SDK 7 gets the decision as `streamText` sends one:
`tool-approval-request` with `isAutomatic: true`, then `tool-approval-response`; ai 6
sees only `tool-output-denied`, ai 5 a `tool-output-error`.
"""

FRONT_END = """
A tool the front end runs. On AG-UI the page declares it in `tools` (`pick_color`);
the run ends as a success with `pendingToolCallIds`, and the next request carries
the result as a `tool` message. On the AI SDK the server declares it
(`Tool.from_schema(..., client=True)`, here `confirm`); the part stays
`input-available` and the finish reason is `tool-calls`, and the next request carries
the part in `output-available` (what `addToolOutput` makes).
"""

PROGRESS = """
A tool that reports progress (`ctx.progress`) and partial output (`ctx.update`).
Neither reaches the model. On AG-UI both are `ACTIVITY_SNAPSHOT` frames of one
activity message per call (`activity-<call id>`); on the AI SDK progress is a
`data-tool-progress` part updated in place (same `id`) and partial output is
`tool-output-available` with `preliminary: true`.
"""

FILES = """
A user message with an image. AG-UI carries it as an `image` part of the message's
content; the AI SDK as a `file` part with a `data:` URL (what `sendMessage({text,
files})` makes). The model gets the file before the text; the answer here only says
what arrived. Limits: see [Files and images](../guides/files.md).
"""

QUESTION = """
A running tool asks the human a question: here `book_table` raises `InputRequired`,
which is what an MCP server's elicitation becomes (see [MCP both ways](../guides/mcp.md)).
The run pauses. On AG-UI the question is an `input_required` interrupt whose
`responseSchema` is the form; the answer is a `resume` entry whose payload is the
filled-in form. On the AI SDK the call's part stays `input-available` and a
`data-input-request` part carries the question; the page answers like a front-end
tool, with an output of `{requestId, action, content}`. The tool then runs again with
the answer.
"""

REPLAY = """
With a journal (`create_app(agent, journal=...)`, `callwright serve --journal`), the
server keeps each stream's frames, and the response names its run in
`x-callwright-run-id`. A client that lost its connection reads the frames it missed
from `GET /runs/{run id}/events?after=N`, where N is how many frames it has; the
replay follows the run live until it ends.

A dropped connection cancels the run: the tool sees its cancel token, the call ends
`Cancelled`, and the run ends cancelled. The AG-UI flow shows it: the replay brings
the client the end of the run it left.

The AI SDK's resume request (`useChat({ resume: true })`, `resumeStream()`) is
`GET /api/chat/{chat id}/stream`: the chat's running stream from its first frame, or
204 when nothing runs in the chat. In the AI SDK flow a second client asks while the
tool runs, and once more after the run has ended.
"""

CLI_HEAD = """\
# Command line

<!-- Generated by tests/docs_gen.py from callwright.cli.parser(): do not edit by hand.
     Rewrite it with `.venv/bin/python tests/docs_gen.py` (make docs-gen). -->

`callwright` is installed with the `cli` extra (`serve` also needs `server`). Each
section below is a subcommand's own `--help`, as this version prints it.

`callwright serve` listens on 127.0.0.1:8000 unless `--host` and `--port` say
otherwise.

An error is one line on stderr (`callwright: error: ...`) with exit code 1, or 2 for
options that cannot go together; `--debug` (or `CALLWRIGHT_DEBUG=1`) shows the
traceback instead, for a bug report.
"""

CLI_TAIL = """\
## Where to go next

- [Serve it and open the playground](../start/serve.md): `callwright serve` step by step.
- [Durability and deploying](../guides/deploy.md): journals, processes and workers.
- [MCP both ways](../guides/mcp.md): `--mcp` files and `callwright mcp`.
"""


if __name__ == "__main__":
    sys.exit(main())
