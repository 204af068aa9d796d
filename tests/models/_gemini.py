"""The Gemini API's stream as a replay server sends it: SSE ``data:`` lines of
``GenerateContentResponse`` JSON, built from the google-genai SDK's own types and dumped as
the API sends them (camelCase, standard base64). Shared by the adapter's tests and its
end-to-end tests with the npm clients."""

from __future__ import annotations

import base64
from typing import Any

from google.genai import types

MODEL = "gemini-x"
# signatures as the API sends them: standard base64, here with the characters ('+', '/')
# that the SDK's URL-safe alphabet writes differently, so a round trip is really checked
SIG_1 = base64.b64encode(b"\xfb\xef\xbe first signature \xff\xfe").decode()
SIG_2 = base64.b64encode(b"\xfb\xff second signature \x3f\xbf").decode()
SIG_TEXT = base64.b64encode(b"\xfa\xfb\xfc a text part's signature").decode()


def part(p: types.Part, signature: str | None = None) -> dict[str, Any]:
    """One part as the API writes it; a signature goes in as the API's base64 text."""
    data: dict[str, Any] = p.model_dump(mode="json", by_alias=True, exclude_none=True)
    if signature is not None:
        data["thoughtSignature"] = signature
    return data


def text(value: str, signature: str | None = None) -> dict[str, Any]:
    return part(types.Part(text=value), signature)


def thought(value: str) -> dict[str, Any]:
    return part(types.Part(text=value, thought=True))


def call(
    name: str, args: dict[str, Any], id: str | None = None, signature: str | None = None
) -> dict[str, Any]:
    function_call = types.FunctionCall(id=id, name=name, args=args)
    return part(types.Part(function_call=function_call), signature)


def usage(prompt: int, candidates: int, thoughts: int = 0, cached: int = 0) -> dict[str, Any]:
    metadata = types.GenerateContentResponseUsageMetadata(
        prompt_token_count=prompt,
        candidates_token_count=candidates,
        thoughts_token_count=thoughts or None,
        cached_content_token_count=cached or None,
        total_token_count=prompt + candidates + thoughts,
    )
    return metadata.model_dump(mode="json", by_alias=True, exclude_none=True)


def chunk(
    *parts: dict[str, Any], finish: str | None = None, tokens: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One streamed ``GenerateContentResponse``."""
    candidate = types.Candidate(
        content=types.Content(role="model", parts=[]),
        finish_reason=types.FinishReason(finish) if finish else None,
        index=0,
    )
    response = types.GenerateContentResponse(
        candidates=[candidate], model_version=MODEL, response_id="resp-1"
    )
    data: dict[str, Any] = response.model_dump(mode="json", by_alias=True, exclude_none=True)
    data["candidates"][0]["content"]["parts"] = list(parts)
    if tokens is not None:
        data["usageMetadata"] = tokens
    return data


def answer(replay: Any, *parts: dict[str, Any], finish: str = "STOP") -> None:
    replay.sse([chunk(*parts, finish=finish, tokens=usage(10, 2))], done=False)


OPAQUE = {"args", "response", "parametersJsonSchema"}
"""Fields whose values are the user's own JSON, kept as they are."""


def sent(replay: Any, index: int) -> dict[str, Any]:
    """A request body with its field names in camelCase: the SDK writes some nested ones
    in snake_case, which the API accepts as well (proto3 JSON takes both spellings)."""
    body: dict[str, Any] = camel(replay.requests[index]["json"])
    return body


def camel(value: Any) -> Any:
    if isinstance(value, list):
        return [camel(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        head, *rest = key.split("_")
        name = head + "".join(w.title() for w in rest)
        out[name] = item if name in OPAQUE else camel(item)
    return out


def signature_bytes(value: str) -> bytes:
    """A signature's bytes, whichever base64 alphabet wrote it."""
    return base64.urlsafe_b64decode(value.replace("+", "-").replace("/", "_"))
