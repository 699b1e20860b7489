"""The one way the library imports litellm: lazily, and without touching the network."""

from __future__ import annotations

import os
from types import ModuleType

__all__ = ["import_litellm"]


def import_litellm() -> ModuleType:
    """The ``litellm`` module, imported so that it never fetches anything.

    At import time litellm downloads its model price map from GitHub unless
    ``LITELLM_LOCAL_MODEL_COST_MAP`` is set; the library must work offline (and a
    network call at import would make token counts and judge costs depend on the
    network), so the variable is set to ``"True"`` first, unless the user has set it.
    The import is lazy because importing litellm takes about two seconds, which every
    process that never counts tokens or calls a model would pay.

    Returns
    -------
    types.ModuleType
        The imported ``litellm`` package.
    """
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm  # noqa: PLC0415  (lazy, see above)

    return litellm
