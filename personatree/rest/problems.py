"""Errors as problem details (RFC 9457, ``application/problem+json``), in one place.

Every error the server returns, whether the library raised it, the request failed
validation, the route does not exist or the body is too large, is a JSON object
``{"type", "title", "status", "detail", "instance"}`` with the status code that fits:

=====================================  ======
library error                          status
=====================================  ======
``InputError`` (bad message, query)    422
``NotFoundError`` (user, node, id)     404
``InvariantError``, ``StaleStateError``  409
``VacuumPendingError``                 409
``StoreBusyError``                     503 (with ``Retry-After``)
``RateLimitError``                     503
``JudgeTimeoutError``                  504
other ``JudgeError``                   502
anything else                          500
=====================================  ======

A 5xx says which kind of error happened but not its message (which may name files or
hosts); the full error goes to the server's log.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.body_limit import MAX_BODY_SIZE_SCOPE_KEY

from ..errors import (
    InputError,
    InvariantError,
    JudgeError,
    JudgeTimeoutError,
    NotFoundError,
    PersonaTreeError,
    RateLimitError,
    StaleStateError,
    StoreBusyError,
    VacuumPendingError,
)

__all__ = ["PROBLEM_JSON", "Problem", "ProblemError", "install_handlers", "problem_response", "status_of"]

PROBLEM_JSON = "application/problem+json"
TYPE_PREFIX = "urn:personatree:problem:"
log = logging.getLogger("personatree.rest")

# Most specific first: the first class an error is an instance of gives its status.
_STATUS: tuple[tuple[type[PersonaTreeError], int], ...] = (
    (VacuumPendingError, 409),
    (StoreBusyError, 503),
    (StaleStateError, 409),
    (InvariantError, 409),
    (InputError, 422),
    (NotFoundError, 404),
    (RateLimitError, 503),
    (JudgeTimeoutError, 504),
    (JudgeError, 502),
)
_TITLES = {
    400: "Bad request", 401: "Unauthorized", 403: "Forbidden", 404: "Not found",
    405: "Method not allowed", 409: "Conflict", 413: "Content too large", 415: "Unsupported media type",
    422: "Unprocessable content", 500: "Internal server error", 502: "Bad gateway",
    503: "Service unavailable", 504: "Gateway timeout",
}


class Problem(BaseModel):
    """A problem details object (RFC 9457)."""

    type: str = Field(description="A URI naming the kind of problem.")
    title: str = Field(description="A short summary of the kind of problem.")
    status: int = Field(description="The HTTP status code.")
    detail: str | None = Field(None, description="What went wrong in this request.")
    instance: str | None = Field(None, description="The path of the request.")
    error: str | None = Field(None, description="The personatree error class, for library errors.")
    errors: list[dict[str, Any]] | None = Field(None, description="Each invalid field, for 422 validation errors.")


class ProblemError(Exception):
    """Raised by the server's own code to answer with a problem (auth, conflicts, limits)."""

    def __init__(self, status: int, detail: str, *, kind: str | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status, self.detail, self.kind, self.headers = status, detail, kind, headers or {}


def status_of(exc: PersonaTreeError) -> int:
    """The HTTP status of a library error (see the module docstring)."""
    for cls, status in _STATUS:
        if isinstance(exc, cls):
            return status
    return 500


def _kebab(name: str) -> str:
    """``UnknownUserError`` -> ``unknown-user``."""
    name = name.removesuffix("Error") or name
    return "".join("-" + c.lower() if c.isupper() and i else c.lower() for i, c in enumerate(name))


def problem_response(status: int, detail: str | None, *, instance: str | None = None, kind: str | None = None,
                     error: str | None = None, errors: list[dict[str, Any]] | None = None,
                     headers: dict[str, str] | None = None) -> JSONResponse:
    """A ``application/problem+json`` response."""
    title = _TITLES.get(status, "Error")
    body = Problem(type=TYPE_PREFIX + (kind or title.lower().replace(" ", "-")), title=title, status=status,
                   detail=detail, instance=instance, error=error, errors=errors)
    return JSONResponse(body.model_dump(exclude_none=True), status_code=status, media_type=PROBLEM_JSON,
                        headers=headers)


async def _library_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, PersonaTreeError)
    status = status_of(exc)
    name = type(exc).__name__
    headers = {"Retry-After": "1"} if status == 503 else None
    if status >= 500:
        log.error("%s %s failed: %s: %s", request.method, request.url.path, name, exc)
        detail = f"the server failed with {name}; see its log"
    else:
        detail = str(exc)
    return problem_response(status, detail, instance=request.url.path, kind=_kebab(name), error=name,
                            headers=headers)


async def _own_problem(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ProblemError)
    return problem_response(exc.status, exc.detail, instance=request.url.path, kind=exc.kind, headers=exc.headers)


async def _validation(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    # The rejected values are left out: they may be large, or be someone's private text.
    errors = [{"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")), "type": str(e.get("type", ""))}
              for e in exc.errors()]
    where = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors[:5])
    return problem_response(422, f"invalid request: {where}", instance=request.url.path, kind="invalid-request",
                            errors=errors)


async def _http(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    detail = str(exc.detail)
    limit = request.scope.get(MAX_BODY_SIZE_SCOPE_KEY)
    if exc.status_code == 413 and isinstance(limit, int):
        detail = f"the request body is over the limit of {limit:,} bytes"
    return problem_response(exc.status_code, detail, instance=request.url.path, headers=dict(exc.headers or {}))


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("%s %s failed", request.method, request.url.path)
    return problem_response(500, "unexpected server error; see its log", instance=request.url.path)


def install_handlers(app: FastAPI) -> None:
    """Make every error of ``app`` a problem details response."""
    app.add_exception_handler(PersonaTreeError, _library_error)
    app.add_exception_handler(ProblemError, _own_problem)
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(StarletteHTTPException, _http)
    app.add_exception_handler(Exception, _unexpected)
