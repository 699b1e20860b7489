"""Versioned prompt templates of the LLM judge, shipped as package data.

Each operation has a file ``<operation>.v<N>.txt`` with a ``=== system ===`` and a
``=== user ===`` section. Instructions and the output format live in the system
message; the user message carries only data, between ``<data>`` and ``</data>``.
Placeholders are ``<<name>>`` and are filled in one pass, so a filled value (user
text) is never expanded again. Bumping a version changes the cache key of every
response made with it, so an improved prompt never reuses stale answers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Mapping

__all__ = ["PromptTemplate", "PROMPT_VERSIONS", "load_prompt", "data_block"]

#: The prompt version each operation uses by default.
PROMPT_VERSIONS: Mapping[str, int] = {"extract": 1, "validate": 1, "route": 1, "summarize": 1, "update": 1}

_SECTION_RE = re.compile(r"^=== (system|user) ===\s*$", re.MULTILINE)
_PLACEHOLDER_RE = re.compile(r"<<([a-z_]+)>>")


@dataclass(frozen=True, slots=True)
class PromptTemplate:
    """One operation's prompt at one version.

    Attributes
    ----------
    operation : str
        ``extract``, ``validate``, ``route``, ``summarize`` or ``update``.
    version : int
    system, user : str
        The two message templates with ``<<name>>`` placeholders.
    """

    operation: str
    version: int
    system: str
    user: str

    @property
    def id(self) -> str:
        """``"<operation>.v<version>"`` (part of every cache key)."""
        return f"{self.operation}.v{self.version}"

    def render(self, **values: str) -> list[dict[str, str]]:
        """Chat messages with the placeholders filled.

        Parameters
        ----------
        **values : str
            One value per placeholder; ``data`` goes into the user message.

        Returns
        -------
        list of dict
            ``[{"role": "system", ...}, {"role": "user", ...}]``.

        Raises
        ------
        KeyError
            If a placeholder has no value.
        """
        return [
            {"role": "system", "content": _fill(self.system, values)},
            {"role": "user", "content": _fill(self.user, values)},
        ]


def _fill(template: str, values: Mapping[str, str]) -> str:
    # One regex pass: a value containing "<<data>>" is inserted literally, never re-expanded.
    return _PLACEHOLDER_RE.sub(lambda m: values[m.group(1)], template)


@lru_cache(maxsize=None)
def load_prompt(operation: str, version: int | None = None) -> PromptTemplate:
    """Load a packaged prompt template.

    Parameters
    ----------
    operation : str
        ``extract``, ``validate``, ``route``, ``summarize`` or ``update``.
    version : int, optional
        Default :data:`PROMPT_VERSIONS` ``[operation]``.

    Returns
    -------
    PromptTemplate

    Raises
    ------
    FileNotFoundError
        If no such template is shipped.
    """
    v = PROMPT_VERSIONS[operation] if version is None else version
    text = resources.files(__name__).joinpath(f"{operation}.v{v}.txt").read_text(encoding="utf-8")
    parts = _SECTION_RE.split(text)
    # parts: [header, "system", body, "user", body]
    sections = {parts[i]: parts[i + 1].strip("\n") for i in range(1, len(parts) - 1, 2)}
    return PromptTemplate(operation, v, sections["system"], sections["user"])


def data_block(payload: object) -> str:
    """Serialize untrusted data for a ``<data>`` block.

    JSON-encodes ``payload`` and escapes ``<``, ``>`` and ``&`` as ``\\u003c`` etc.,
    so user text can never close the ``</data>`` delimiter or open a fake one, while
    the model still reads the exact characters back from the JSON.

    Parameters
    ----------
    payload : JSON-serializable object

    Returns
    -------
    str
    """
    import json

    text = json.dumps(payload, ensure_ascii=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
