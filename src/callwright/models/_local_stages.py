"""The embedded model's two-stage decode: choose, then fill in.

A 135M model asked to write a whole ``{meta, calls, output}`` document makes its
worst mistakes at the first fork: it calls a tool for "Hello!" and answers "What
is 17 * 23?" in words. So the choice is its own stage. The model reads a list of
the tools and a few ``Request: ... / Tool: ...`` examples built from the tool
schemas and scores each option ("answer" or a tool name) by the probability of
the option's first token. Small models lean towards some labels whatever the
request ("answer" after any question); dividing by the probabilities the same
prompt gives a content-free request removes that lean (contextual calibration,
Zhao et al. 2021, "Calibrate Before Use"). Measured on the benchmark's tuning
half, it decided better than greedy decoding under a grammar of the names.

The second stage writes only the chosen tool's arguments, constrained by that
tool's schema, after examples of that tool alone: the model no longer sees other
tools' examples to copy from.

Raw completions, not chat turns: the stages are pattern completion, which the
chat template only dilutes, and base models (that have no template) work too.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from .._tool_files import with_stand_ins
from ..call import is_meta
from ..messages import AssistantMessage, SystemMessage, ToolResultMessage, UserMessage
from ..usage import Usage
from ._solution import item_name, solution_text, tool_items

ANSWER = "answer"
"""The route option that calls no tool."""

ANSWER_LINE = "No tool: reply in words (greetings, thanks, questions about you)."

CONTENT_FREE = ("N/A", "", "?")
"""Requests that say nothing: their scores are the model's lean, divided out."""

SMALL_TALK = ("Hello! Who are you?", "Thank you!")
"""Requests that call no tool, shown as examples."""


@dataclass(frozen=True)
class ToolSpec:
    """One tool as the stages show it, from its item of the solution schema."""

    name: str
    description: str
    arguments: dict[str, Any]
    """The JSON schema of the arguments alone (no ``_tool``)."""
    examples: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """Example requests and the arguments that answer them."""


def tool_specs(schema: dict[str, Any] | None) -> list[ToolSpec]:
    specs = []
    for item in tool_items(schema):
        props = {k: v for k, v in item.get("properties", {}).items() if k != "_tool"}
        required = [r for r in item.get("required", []) if r != "_tool"]
        arguments = {
            "type": "object",
            "properties": props,
            "required": required,
            "additionalProperties": False,
        }
        description = str(item.get("description", "")).split("\n")[0].strip()
        spec = ToolSpec(item_name(item), description, arguments)
        spec.examples.extend(examples_for(spec))
        specs.append(spec)
    return specs


def example_value(schema: Any) -> Any:
    """A value for an example call: the schema's own example first."""
    if not isinstance(schema, dict):
        return "example"
    for key in ("examples", "enum"):
        values = schema.get(key)
        if isinstance(values, list) and values:
            return values[0]
    if "const" in schema:
        return schema["const"]
    if "default" in schema and schema["default"] is not None:
        return schema["default"]
    if "anyOf" in schema:
        options = [s for s in schema["anyOf"] if isinstance(s, dict) and s.get("type") != "null"]
        return example_value(options[0] if options else {})
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    defaults = {"integer": 3, "number": 2.5, "boolean": True, "array": [], "object": {}}
    return defaults.get(str(kind), "example")


def examples_for(spec: ToolSpec) -> list[tuple[str, dict[str, Any]]]:
    """Example requests from the description and the arguments' own examples.

    With optional arguments, a first example leaves them out: shown only with
    them, a small model copies the example's value into every call ("What time
    is it?" answered for Europe/Paris).
    """
    props: dict[str, Any] = spec.arguments["properties"]
    required = set(spec.arguments["required"])
    request = spec.description.rstrip(".") or f"Use {spec.name}"
    shown = {
        k: example_value(v)
        for k, v in props.items()
        if not is_meta(k) and (k in required or (isinstance(v, dict) and "examples" in v))
    }
    bare = {k: v for k, v in shown.items() if k in required}
    out = []
    if bare != shown:
        out.append((_request(request, bare), bare))
    out.append((_request(request, shown), shown))
    return out


def _request(text: str, args: dict[str, Any]) -> str:
    values = [str(v) for v in args.values()]
    return f"{text}: {', '.join(values)}" if values else text


# --- stage 1: the route ---------------------------------------------------------------------


def route_prompt(
    specs: list[ToolSpec], request: str, instructions: str | None = None, *, reverse: bool = True
) -> str:
    """The choice as pattern completion: the tools, ``Request:``/``Tool:`` examples, the request.

    A small model leans towards the label it saw last. The examples follow the
    tool list in reverse (so the first tools, usually the most used, sit
    nearest the request) and the small-talk examples come last, where their lean
    is one that calibration measures and removes. Measured on the tuning half:
    this order 28/34, the tools' own order with small talk among them 21/34.
    """
    lines = [instructions.strip()] if instructions else []
    lines.append(f'Choose the tool that does the request, or "{ANSWER}" to reply in words.')
    lines.append("")
    lines.append("Tools:")
    lines += [f"- {s.name}: {s.description}" for s in specs]
    lines.append(f"- {ANSWER}: {ANSWER_LINE}")
    lines.append("")
    shots = [(s.examples[-1][0], s.name) for s in specs if s.examples]
    if reverse:
        shots.reverse()
    shots += [(text, ANSWER) for text in SMALL_TALK]
    for text, choice in shots:
        lines += [f"Request: {_one_line(text)}", f"Tool: {choice}", ""]
    lines += [f"Request: {_one_line(request)}", "Tool:"]
    return "\n".join(lines)


def option_scores(top: list[dict[str, Any]], options: list[str]) -> dict[str, float]:
    """Each option's log-probability as the first token that starts it (`` name``).

    The top tokens come from llama.cpp (``n_probs``); a token counts for an
    option when it is a prefix of it of at least two characters. An option none
    of the top tokens starts gets the lowest score seen, less one.
    """
    scores: dict[str, float] = {}
    floor = min((float(t["logprob"]) for t in top), default=-30.0) - 1.0
    for option in options:
        target = " " + option
        best = floor
        for token in top:
            text = str(token.get("token", ""))
            if len(text.strip()) >= 2 and target.startswith(text):
                best = max(best, float(token["logprob"]))
        scores[option] = best
    return scores


def calibrate(scores: dict[str, float], lean: dict[str, float] | None) -> dict[str, float]:
    if not lean:
        return scores
    return {k: v - lean.get(k, 0.0) for k, v in scores.items()}


def mean_lean(samples: list[dict[str, float]]) -> dict[str, float]:
    """The average probability of each option over the content-free requests (as a log)."""
    options = samples[0].keys() if samples else []
    return {
        o: math.log(sum(math.exp(s[o]) for s in samples) / len(samples) or 1e-30) for o in options
    }


def ties(scores: dict[str, float]) -> list[str]:
    """The options with the best score (more than one when they share a first token)."""
    best = max(scores.values())
    return [o for o, v in scores.items() if math.isclose(v, best, abs_tol=1e-6)]


def names_grammar(options: list[str]) -> str:
    """A GBNF grammar for exactly one of the names, after ``Tool:``."""
    return 'root ::= " " (' + " | ".join(json.dumps(o) for o in options) + ")"


# --- stage 2: the arguments -----------------------------------------------------------------


def arguments_prompt(spec: ToolSpec, request: str, instructions: str | None = None) -> str:
    lines = [instructions.strip()] if instructions else []
    lines.append(f"Tool {spec.name}: {spec.description}")
    for key, prop in spec.arguments["properties"].items():
        about = prop.get("description", "") if isinstance(prop, dict) else ""
        lines.append(f"- {key}: {about}".rstrip(": "))
    lines.append("Write the arguments as JSON, copying values from the request.")
    lines.append("")
    for text, args in spec.examples:
        lines += [f"Request: {_one_line(text)}", f"Arguments: {_json(args)}", ""]
    lines += [f"Request: {_one_line(request)}", "Arguments:"]
    return "\n".join(lines)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


_SPACES = re.compile(r"\s+")


def _one_line(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


# --- copying strings from the request -------------------------------------------------------

_QUOTED = re.compile(r"'([^']+)'|\"([^\"]+)\"|“([^”]+)”|‘([^’]+)’")
_EDGES = ".,;:!?'\"“”‘’"
MAX_SPAN_WORDS = 12


def spans(text: str) -> list[str]:
    """Every run of up to ``MAX_SPAN_WORDS`` words of ``text``, and every quoted part.

    Punctuation at the ends is dropped (``23?`` is ``23``) unless it balances a
    bracket inside (``sqrt(144)?`` is ``sqrt(144)``).
    """
    words = text.split()
    found: set[str] = set()
    for i in range(len(words)):
        for j in range(i + 1, min(len(words), i + MAX_SPAN_WORDS) + 1):
            found.update(_trimmed(" ".join(words[i:j])))
    for match in _QUOTED.finditer(text):
        quoted = next(g for g in match.groups() if g)
        if quoted.strip():
            found.add(quoted.strip())
    return sorted(found)


def _trimmed(span: str) -> set[str]:
    text = span.strip(_EDGES)
    if text.endswith(")") and text.count(")") > text.count("("):
        text = text[:-1].strip(_EDGES)
    return {text} if text and text.count("(") == text.count(")") else set()


def copy_strings(schema: dict[str, Any], text: str) -> dict[str, Any]:
    """``schema`` with each string argument limited to the spans of ``text`` that fit it.

    A tiny model paraphrases what it should copy (``'hello'`` written as
    ``Hello, World!``, a file name taken from the example); the user's own words
    are what a file write or a file name should hold. A span fits a string
    schema when it satisfies its ``pattern``, ``enum`` and length. When the
    schema says what a value looks like (a pattern or an enum), a span that
    fits is strong evidence: only the longest fitting spans are offered, and an
    optional argument must then be given; with no fitting span, an optional
    argument is left out and a required one keeps its own schema (the user
    wrote "five times three"). Top-level properties only.
    """
    options = spans(text)
    if not options:
        return schema
    out: dict[str, Any] = json.loads(json.dumps(schema))
    required = out.setdefault("required", [])
    props = out.get("properties", {})
    for key, prop in list(props.items()):
        copied = props[key] = _copy_string(prop, options)
        if "anyOf" in prop and "enum" in copied and key not in required:
            required.append(key)  # the user named a value that fits: it must be given
        elif copied.get("type") == "null" and key not in required:
            del props[key]  # nothing fits: left out (a lone null lets a model ramble)
    return out


def _copy_string(prop: Any, options: list[str]) -> Any:
    if not isinstance(prop, dict) or "const" in prop or "format" in prop:
        return prop
    if isinstance(prop.get("anyOf"), list):
        return _copy_optional(prop, options)
    if prop.get("type") != "string" and "enum" not in prop:
        return prop
    fitting = [o for o in options if _fits(prop, o)]
    if not fitting:
        return prop
    if _shaped(prop):
        fitting = _longest(fitting)
    rest = {k: v for k, v in prop.items() if k not in _STRING_RULES}
    return {**rest, "enum": fitting}


def _copy_optional(prop: dict[str, Any], options: list[str]) -> dict[str, Any]:
    branches = [b for b in prop["anyOf"] if isinstance(b, dict)]
    nulls = [b for b in branches if b.get("type") == "null"]
    shaped = [b for b in branches if b not in nulls and _shaped(b)]
    if not nulls or len(shaped) != 1:
        return {**prop, "anyOf": [_copy_string(b, options) for b in prop["anyOf"]]}
    fitting = [o for o in options if _fits(shaped[0], o)]
    rest = {k: v for k, v in prop.items() if k not in ("anyOf", "default")}
    if not fitting:
        return {**rest, "type": "null"}
    return {**rest, "enum": _longest(fitting)}


def _shaped(prop: dict[str, Any]) -> bool:
    return "pattern" in prop or isinstance(prop.get("enum"), list)


def _longest(values: list[str]) -> list[str]:
    """The values no other value contains."""
    return [v for v in values if not any(v != w and v in w for w in values)]


_STRING_RULES = ("type", "enum", "pattern", "maxLength", "minLength")


def _fits(prop: dict[str, Any], value: str) -> bool:
    enum = prop.get("enum")
    if isinstance(enum, list) and value not in enum:
        return False
    pattern = prop.get("pattern")
    if isinstance(pattern, str):
        try:
            if re.search(pattern, value) is None:
                return False
        except re.error:
            return False
    return int(prop.get("minLength", 0)) <= len(value) <= int(prop.get("maxLength", len(value)))


# --- few-shot examples for the solution document (the single-stage decode) -----------------

MAX_EXAMPLE_TOOLS = 8


def example_call(item: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A user request and the call that answers it, from one tool's item schema."""
    props = item.get("properties", {})
    required = set(item.get("required", []))
    args = {
        k: example_value(v)
        for k, v in props.items()
        if k != "_tool" and (k in required or (isinstance(v, dict) and "examples" in v))
    }
    description = str(item.get("description", "")).split("\n")[0].strip().rstrip(".")
    name = item_name(item)
    plain = [str(v) for k, v in args.items() if not is_meta(k)]
    request = description or f"Use {name}"
    if plain:
        request += ": " + ", ".join(plain)
    return request, {"_tool": name, **args}


def few_shot(schema: dict[str, Any] | None, *, answering: bool = False) -> list[dict[str, str]]:
    """Example turns built from the tools' own schemas.

    A small model copies what it saw last, so the order depends on the step:
    when it may call tools, one example call per tool comes last (else it
    answers from memory); when a result just came in, an example of answering
    from a result comes last (else it calls again).
    """
    items = tool_items(schema)[:MAX_EXAMPLE_TOOLS]
    greeting = [
        {"role": "user", "content": "Hello! Who are you?"},
        {
            "role": "assistant",
            "content": solution_text([], "Hello! I am a helpful assistant. How can I help?"),
        },
    ]
    calls: list[dict[str, str]] = []
    for item in items:
        request, call = example_call(item)
        calls.append({"role": "user", "content": request})
        calls.append({"role": "assistant", "content": solution_text([call], None)})
    if answering:
        if not items:
            return greeting
        request, call = example_call(items[0])
        return [
            *greeting,
            {"role": "user", "content": request},
            {"role": "assistant", "content": solution_text([call], None)},
            {"role": "user", "content": f"Tool {item_name(items[0])} result: 42"},
            {"role": "assistant", "content": solution_text([], "The result is 42.")},
        ]
    thanks = [
        {"role": "user", "content": "Thank you!"},
        {"role": "assistant", "content": solution_text([], "You are welcome!")},
    ]
    return [*greeting, *calls, *thanks]


# --- helpers of the adapter ----------------------------------------------------------------


class Tally:
    """Token counts over the generations of one step (llama.cpp's own timings)."""

    def __init__(self) -> None:
        self.input_tokens = 0
        self.output_tokens = 0
        self.finish: str | None = None

    def add(self, chunk: Any) -> None:
        timings = chunk.get("timings") if isinstance(chunk, dict) else None
        if isinstance(timings, dict):
            self.input_tokens += int(timings.get("prompt_n", 0)) + int(timings.get("cache_n", 0))
            self.output_tokens += int(timings.get("predicted_n", 0))

    def usage(self) -> Usage:
        return Usage(self.input_tokens, self.output_tokens, 1)


def completion_text(result: Any) -> str:
    try:
        return str(result["choices"][0]["text"])
    except (KeyError, IndexError, TypeError):
        return ""


def latest_user_text(messages: list[Any]) -> str | None:
    for message in reversed(messages):
        if isinstance(message, UserMessage):
            return message.content if isinstance(message.content, str) else str(message.content)
    return None


def plain_conversation(messages: list[Any]) -> list[dict[str, str]]:
    """The run's messages as plain chat turns, for an answer in free text.

    Calls the model made are shown as one line each and results come back as a
    user turn, so the roles alternate as chat templates expect.
    """
    out: list[dict[str, str]] = []
    results: list[str] = []
    for m in messages:
        if isinstance(m, ToolResultMessage):
            status = "error" if m.is_error else "result"
            results.append(f"Tool {m.tool_name} {status}: {with_stand_ins(m.content, m.files)}")
            continue
        if results:
            out.append({"role": "user", "content": "\n".join(results)})
            results = []
        if isinstance(m, SystemMessage):
            out.append({"role": "system", "content": m.content})
        elif isinstance(m, UserMessage):
            out.append({"role": "user", "content": str(m.content)})
        elif isinstance(m, AssistantMessage):
            calls = [f"{c.name} {json.dumps(c.arguments)}" for c in m.tool_calls]
            text = m.text or ""
            if calls:
                text = (text + "\n" if text else "") + "Calling " + "; ".join(calls)
            out.append({"role": "assistant", "content": text})
    if results:
        out.append({"role": "user", "content": "\n".join(results)})
    return out
