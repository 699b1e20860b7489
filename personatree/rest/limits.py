"""The request size limits, and the early 413 for a declared ``Content-Length``.

A body whose declared length is over its limit is refused before a byte of it is
read (:class:`DeclaredLengthLimit`); a body without one (chunked) is counted as it is
read by FastAPI's own per-route limit (``max_body_size``), which stops reading as soon
as the limit is passed. Both answer with the same 413 problem.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from .problems import problem_response

__all__ = ["DeclaredLengthLimit", "Limits"]


@dataclass(frozen=True, slots=True)
class Limits:
    """Request size limits.

    Attributes
    ----------
    max_body_bytes : int
        Largest request body of every endpoint but import.
    max_import_bytes : int
        Largest body of the import endpoints (a whole export).
    """

    max_body_bytes: int = 1 << 20
    max_import_bytes: int = 64 << 20


class DeclaredLengthLimit:
    """ASGI middleware: a 413 problem for a declared ``Content-Length`` over the limit.

    Answered before a byte of the body is read. Bodies without a length (chunked) are
    counted as they are read by FastAPI's own limit, which answers with the same problem.
    """

    def __init__(self, app: ASGIApp, *, limits: Limits, import_suffixes: tuple[str, ...] = ("/import", "/import/chat"),
                 ) -> None:
        self.app, self.limits, self.import_suffixes = app, limits, import_suffixes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = str(scope.get("path", ""))
            limit = (self.limits.max_import_bytes if path.endswith(self.import_suffixes)
                     else self.limits.max_body_bytes)
            declared = Headers(scope=scope).get("content-length")
            if declared is not None and declared.isdigit() and int(declared) > limit:
                response = problem_response(413, f"the request body is over the limit of {limit:,} bytes",
                                            instance=path, headers={"Connection": "close"})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
