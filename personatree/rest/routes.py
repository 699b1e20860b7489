"""The endpoints: each checks the caller's key, awaits one :class:`AsyncPersonaTree`
call and returns its result as a response model.

Every path names its user (``/v1/users/{user_id}/...``), so the key check happens
before any work: a key restricted to other users gets a 403 whether or not the user
exists, and no response ever holds another user's data.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Path, Query, Request, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ..aio import AsyncPersonaTree
from ..errors import UnknownUserError
from .keys import ApiKey, ApiKeys
from .limits import Limits
from .. import ForgetReport, ImportReport, InsertReport, Profile
from .models import (
    BatchOut,
    ChatImportOut,
    ConsolidateIn,
    ConsolidateOut,
    ExplanationOut,
    ObserveBatchIn,
    ObserveIn,
    RecallIn,
    RecallOut,
    SearchIn,
    SearchOut,
    StatsOut,
    UsersOut,
)
from .problems import Problem, ProblemError

__all__ = ["ROUTES", "caller", "user_scope"]

_bearer = HTTPBearer(auto_error=False, description="An API key of the server (see `personatree serve --help`).")


def _tree(request: Request) -> AsyncPersonaTree:
    tree: AsyncPersonaTree = request.app.state.tree
    return tree


async def caller(request: Request,
                 credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> ApiKey:
    """The key of the request, or a 401 problem."""
    challenge = {"WWW-Authenticate": "Bearer"}
    if credentials is None or not credentials.credentials:
        raise ProblemError(401, "an API key is required: send 'Authorization: Bearer <key>'",
                           kind="missing-api-key", headers=challenge)
    keys: ApiKeys = request.app.state.keys
    key = keys.find(credentials.credentials)
    if key is None:
        raise ProblemError(401, "the API key is not valid", kind="invalid-api-key", headers=challenge)
    request.state.key_name = key.name
    return key


UserId = Annotated[str, Path(min_length=1, max_length=256, description="Whose memory.")]
NodeId = Annotated[str, Path(min_length=1, max_length=256, description="A node of the user's tree.")]
Key = Annotated[ApiKey, Depends(caller)]


async def user_scope(user_id: UserId, key: Key) -> str:
    """The path's user, or a 403 problem when the key may not act for it."""
    if not key.allows(user_id):
        raise ProblemError(403, f"the API key {key.name!r} may not access user {user_id!r}", kind="foreign-user")
    return user_id


User = Annotated[str, Depends(user_scope)]
Tree = Annotated[AsyncPersonaTree, Depends(_tree)]


async def list_users(key: Key, tree: Tree) -> UsersOut:
    """The users with data that this key may see."""
    return UsersOut(users=[u for u in await tree.users() if key.allows(u)])


async def observe(user: User, body: ObserveIn, tree: Tree) -> InsertReport:
    """Record one interaction; the leaves extracted from it and what insertion did with each."""
    return (await tree.observe_many(user, [body.interaction()]))[0]


async def observe_batch(user: User, body: ObserveBatchIn, tree: Tree) -> BatchOut:
    """Record many interactions of one user in order; nothing is stored if one is invalid."""
    reports = await tree.observe_many(user, [i.interaction() for i in body.interactions])
    return BatchOut(reports=reports)


async def import_user(user: User, tree: Tree,
                      document: Annotated[dict[str, Any], Body(description="A personatree export document.")]
                      ) -> ImportReport:
    """Import an export (``GET .../export`` of this or another server) as this user."""
    if document.get("user_id") != user:
        raise ProblemError(422, f"the export is of user {document.get('user_id')!r}, not {user!r}",
                           kind="user-mismatch")
    try:
        await tree.stats(user)
    except UnknownUserError:
        pass
    else:
        raise ProblemError(409, f"user {user!r} already has data; delete it first", kind="user-exists")
    return await tree.import_export(document)


async def import_chat(user: User, tree: Tree,
                      export: Annotated[list[Any] | dict[str, Any], Body(
                          description="A ChatGPT or Claude data export (conversations.json), or OpenAI-style "
                                      "conversations with a messages list.")]) -> ChatImportOut:
    """Import a chat export as the user's interactions; importing it again stores nothing new."""
    report = await tree.import_chat(user, export, source="the request body")
    return ChatImportOut(user_id=user, summary=report.to_dict())


async def recall(user: User, body: RecallIn, tree: Tree) -> RecallOut:
    """Context about the user relevant to the query, within a token budget."""
    r = await tree.recall(user, body.query, budget=body.budget, model=body.model, levels=body.levels,
                          from_user=body.from_user)
    return RecallOut(user_id=user, text=r.text, tokens=r.tokens, budget=r.budget, route=r.route,
                     items=list(r.items), trace=list(r.trace) if body.trace else None)


async def search(user: User, body: SearchIn, tree: Tree) -> SearchOut:
    """Plain similarity search over the user's nodes, best first."""
    hits = await tree.search(user, body.query, k=body.k, levels=body.levels)
    return SearchOut(user_id=user, hits=hits)


async def explain(user: User, node_id: NodeId, tree: Tree,
                  max_observations: Annotated[int, Query(ge=0, le=1000)] = 20) -> ExplanationOut:
    """Why a node is believed: its support path, its evidence and the observations behind it."""
    ex = await tree.explain(user, node_id, max_observations=max_observations)
    return ExplanationOut(explanation=ex, text=ex.render())


async def profile(user: User, tree: Tree, budget: Annotated[int | None, Query(ge=1)] = None) -> Profile:
    """The standing profile block (top claims, pivotal patterns, recent evidence)."""
    return await tree.profile(user, budget=budget)


async def forget(user: User, node_id: NodeId, tree: Tree, cascade: bool = False) -> ForgetReport:
    """Remove a node (with ``cascade``, its support subtree) and what was derived only from it."""
    return await tree.forget(user, node_id, cascade=cascade)


async def export(user: User, tree: Tree) -> dict[str, Any]:
    """Everything stored about the user, in the export format (``schemas/export.schema.json``)."""
    return await tree.export(user)


async def delete_user(user: User, tree: Tree, vacuum: bool = False) -> Response:
    """Delete every stored row of the user (with ``vacuum``, compact the store too)."""
    await tree.delete_user(user, vacuum=vacuum)
    return Response(status_code=204)


async def consolidate(user: User, tree: Tree, body: Annotated[ConsolidateIn | None, Body()] = None,
                      full: bool = False) -> ConsolidateOut:
    """Plan (and unless ``dry_run``, apply) one consolidation pass."""
    args = body or ConsolidateIn.model_validate({})
    plan = await tree.consolidate(user, dry_run=args.dry_run, now=args.now)
    return ConsolidateOut(user_id=plan.user_id, applied=not args.dry_run and not plan.is_empty(),
                          empty=plan.is_empty(), now=plan.now, base_version=plan.base_version, digest=plan.digest,
                          method=plan.method, counts=plan.counts(), plan=plan.to_dict() if full else None)


async def stats(user: User, tree: Tree) -> StatsOut:
    """Counts of nodes per level, edges per kind, orphans and observations."""
    return StatsOut(**await tree.stats(user))


_ERRORS: dict[int | str, dict[str, Any]] = {status: {"model": Problem, "description": text} for status, text in (
    (401, "Missing or invalid API key"), (403, "The key may not access this user"),
    (404, "Unknown user or node"), (413, "Request body too large"), (422, "Invalid input"),
)}
_409: dict[int | str, dict[str, Any]] = {409: {"model": Problem, "description": "Conflict"}}
U = "/v1/users/{user_id}"

#: (method, path, endpoint, status, extra responses, whether the path takes whole exports)
ROUTES: tuple[tuple[str, str, Any, int, dict[int | str, dict[str, Any]], bool], ...] = (
    ("GET", "/v1/users", list_users, 200, {}, False),
    ("POST", U + "/observations", observe, 200, {}, False),
    ("POST", U + "/observations/batch", observe_batch, 200, {}, False),
    ("POST", U + "/import", import_user, 201, _409, True),
    ("POST", U + "/import/chat", import_chat, 200, {}, True),
    ("POST", U + "/recall", recall, 200, {}, False),
    ("POST", U + "/search", search, 200, {}, False),
    ("GET", U + "/nodes/{node_id}/explanation", explain, 200, {}, False),
    ("GET", U + "/profile", profile, 200, {}, False),
    ("DELETE", U + "/nodes/{node_id}", forget, 200, _409, False),
    ("GET", U + "/export", export, 200, {}, False),
    ("DELETE", U, delete_user, 204, _409, False),
    ("POST", U + "/consolidate", consolidate, 200, _409, False),
    ("GET", U + "/stats", stats, 200, {}, False),
)


def build_router(*, limits: Limits) -> APIRouter:
    """The API's routes, each with its body limit (the import path takes whole exports)."""
    router = APIRouter()
    for method, path, endpoint, status, extra, takes_exports in ROUTES:
        options: dict[str, Any] = {"response_class": Response} if status == 204 else {}
        router.add_api_route(
            path, endpoint, methods=[method], status_code=status, responses={**_ERRORS, **extra},
            tags=["memory"], **options,
            max_body_size=limits.max_import_bytes if takes_exports else limits.max_body_bytes,
        )
    return router
