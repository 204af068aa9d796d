"""Path stripping is an option of the wire encoders: what the server (and a replica that
continues a run, in ``durable/``) sets so that a run error does not map its disk."""

from __future__ import annotations

import pytest

from _sse import frames
from callwright.events import RunError
from callwright.wire._base import SSEEncoder
from callwright.wire.agui import AGUIEncoder
from callwright.wire.aisdk import AISDKEncoder

ERROR = RunError("model file /srv/secret/models/weights.gguf is missing", "model_error")


def message_of(frame: bytes) -> str:
    (payload,) = frames(frame.decode())
    text = payload.get("message", payload.get("errorText"))
    assert isinstance(text, str)
    return text


@pytest.mark.parametrize("encoder", [AGUIEncoder, AISDKEncoder])
def test_run_errors_keep_their_paths_unless_the_encoder_strips_them(
    encoder: type[SSEEncoder],
) -> None:
    assert "/srv/secret/models/" in message_of(encoder().encode(ERROR))
    stripped = message_of(encoder(strip_paths=True).encode(ERROR))  # type: ignore[call-arg]
    assert "/srv" not in stripped
    assert stripped.endswith("model file …/weights.gguf is missing")  # the AI SDK: [code] …
    own = encoder(strip_paths=True).error("cannot open C:\\Users\\me\\key.pem", "x")  # type: ignore[call-arg]
    assert message_of(own).endswith("cannot open …\\key.pem")
