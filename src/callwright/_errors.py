"""The roots of what callwright raises and warns with, so a user can catch it all at once.

Every exception the library raises to a user derives from ``CallwrightError``; where
one used to be a plain builtin (``ValueError``, ``RuntimeError``) it keeps that base
too, so code written against the builtin still catches it. Every deprecation warns
with ``CallwrightDeprecationWarning``, so a user can filter or escalate ours alone.
"""

from __future__ import annotations

import warnings


class CallwrightError(Exception):
    """The base of every exception callwright raises to a user."""


class ConfigurationError(CallwrightError, ValueError):
    """The agent or its model is set up in a way that cannot work (an unknown model
    string, a mode the model lacks, a missing API key); the message says what to change."""


class Rejected(CallwrightError):
    """A request refused before anything of it was used: nothing written, no approval spent.
    Carries an HTTP status and a stable code. The journal raises it (``callwright.store``
    exports it) and so do the approval checks (``callwright.approvals``), in every mode."""

    def __init__(self, message: str, code: str, status: int = 409) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status


class MissingAPIKey(ConfigurationError):
    """A provider's model has no API key: none was passed and its variable is unset."""

    def __init__(self, label: str, key_env: str, adapter: str, *, also_env: str = "") -> None:
        also = f" (or {also_env})" if also_env else ""
        super().__init__(
            f"no {label} API key: export {key_env}=...{also}, pass api_key= to {adapter}, "
            'or use model="local" for the embedded model'
        )
        self.key_env = key_env
        """The environment variable the key is read from."""


class CallwrightDeprecationWarning(DeprecationWarning):
    """A deprecated callwright name or spelling was used; the message names its successor."""


def warn_deprecated(old: str, new: str) -> None:
    """Warn, at the caller's caller, that ``old`` is deprecated in favour of ``new``."""
    warnings.warn(f"{old} is deprecated: use {new}", CallwrightDeprecationWarning, stacklevel=3)
