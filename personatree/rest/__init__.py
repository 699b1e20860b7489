"""A REST/JSON server over the memory (``personatree serve``; the ``server`` extra).

Endpoints under ``/v1/users/{user_id}/`` for observe, import (exports and chat
exports), recall, search, explain, profile, forget, export, delete-user, consolidate
and stats, an OpenAPI document at ``/openapi.json``, bearer-token API keys restricted to sets of users
(:mod:`.keys`), and errors as problem details (:mod:`.problems`). Built with FastAPI
over :class:`~personatree.aio.AsyncPersonaTree`; served by uvicorn.
"""

from __future__ import annotations

from .app import TreeOpener, create_app
from .keys import KEYS_ENV, ApiKey, ApiKeys, load_keys
from .limits import Limits

__all__ = ["ApiKey", "ApiKeys", "KEYS_ENV", "Limits", "TreeOpener", "create_app", "load_keys"]
