"""What a user sets for the model, per agent or per run, in one provider-neutral object.

Each adapter maps the fields to its own request parameters. A field an adapter has no
place for is an error naming the field and the provider (``unsupported``), never
dropped: a user who asked for a reasoning effort must not get a run without it and
believe otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from .._errors import ConfigurationError

ReasoningEffort = Literal["none", "minimal", "low", "medium", "high"]
"""How hard a reasoning model thinks before it answers (OpenAI's scale)."""

SETTING_NAMES = ("temperature", "max_tokens", "top_p", "parallel_tool_calls", "reasoning_effort")
"""The fields an adapter maps one by one (``tool_choice`` is the loop's, ``extra`` is sent
as it is)."""


@dataclass(frozen=True, slots=True)
class ModelSettings:
    """Sampling and reasoning settings for a model, given to ``Agent(settings=...)`` for
    every run or to ``agent.run(..., settings=...)`` for one; a run's settings override the
    agent's field by field. ``None`` leaves a field to the provider's default."""

    temperature: float | None = None
    """Sampling temperature."""
    max_tokens: int | None = None
    """The most output tokens one model turn may produce (reasoning included where the
    provider counts it there)."""
    top_p: float | None = None
    """Nucleus sampling: the probability mass the next token is drawn from."""
    tool_choice: str | None = None
    """``auto``, ``none``, ``required`` or a tool's name, for every step; a
    ``prepare_step`` plan overrides it for one step, and the last step is always ``none``."""
    parallel_tool_calls: bool | None = None
    """Whether the model may call several tools in one turn; sent only when tools are offered."""
    reasoning_effort: ReasoningEffort | None = None
    """How hard a reasoning model thinks (OpenAI ``reasoning_effort`` / ``reasoning.effort``,
    Gemini ``thinking_level``)."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Provider-specific request parameters sent as they are (``seed``, ``service_tier``
    ...); for Gemini, fields of ``GenerateContentConfig``. Merged key by key with the
    agent's."""

    def merged(self, override: ModelSettings | None) -> ModelSettings:
        """These settings with every field ``override`` sets replacing this one's."""
        if override is None:
            return self
        values = {
            f.name: getattr(override, f.name)
            for f in fields(self)
            if f.name != "extra" and getattr(override, f.name) is not None
        }
        return ModelSettings(
            **{f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"} | values,
            extra={**self.extra, **override.extra},
        )

    def to_dict(self) -> dict[str, Any]:
        """The fields that are set, by name (``extra`` as it is): what the journal keeps
        of a run's settings, so that the run's next segment asks the model the same way."""
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"}
        data = {name: value for name, value in values.items() if value is not None}
        if self.extra:
            data["extra"] = dict(self.extra)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelSettings:
        """Settings from ``to_dict``'s form; names it does not know are left out (a
        journal written by a later version)."""
        names = {f.name for f in fields(cls)}
        return cls(**{name: value for name, value in data.items() if name in names})

    def given(self) -> dict[str, Any]:
        """The mapped fields that are set, by name (``tool_choice`` and ``extra`` aside)."""
        values = {name: getattr(self, name) for name in SETTING_NAMES}
        return {name: value for name, value in values.items() if value is not None}


NO_SETTINGS = ModelSettings()


def unsupported(settings: ModelSettings, takes: Iterable[str], provider: str) -> None:
    """Raise a ``ConfigurationError`` naming the first set field ``provider`` cannot take."""
    allowed = set(takes)
    for name in settings.given():
        if name not in allowed:
            raise ConfigurationError(
                f"{provider} cannot take the setting {name}: "
                f"leave ModelSettings.{name} unset for this model"
            )
