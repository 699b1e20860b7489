"""A LangGraph ``BaseStore`` backed by personatree (``pip install 'personatree[langgraph]'``).

A LangGraph agent reads and writes long-term memory through ``store.put``,
``store.get``, ``store.search`` and ``store.list_namespaces``. With
:class:`PersonaTreeStore` every ``put`` becomes evidence in a personatree user's
tree, and ``search(..., query=...)`` ranks the stored items by how well the evidence
extracted from them matches the query.

Namespace → user mapping
------------------------
personatree keeps one tree per user, LangGraph keeps items under namespaces. The
adapter maps a namespace to a user with ``user_index`` (default ``-1``: the last
label, as in LangGraph's ``("memories", user_id)`` convention) or any callable
``user_of(namespace) -> user_id``. Several namespaces may map to one user (for example
``("memories", "maya")`` and ``("prefs", "maya")`` both feed Maya's tree); each item
still lives under its own namespace and key.

What a put stores
-----------------
``put(namespace, key, value)`` appends one observation to the user's verbatim log whose
message is the value's text (``value["content"]``, ``"text"``, ``"memory"``, … or the
``key: value`` pairs) and whose metadata keeps the namespace, key and value. An update
of a key appends a new observation: ``get`` returns the newest value, and the older
statement stays in the tree as history (that is what evidence is). ``delete`` makes the
item unreadable and forgets every leaf extracted from any of its versions; the raw log
keeps the text until the user is deleted (``PersonaTree.delete_user``). With
``index=False`` the value is stored as a non-user message, which the judges do not read,
so it never becomes evidence and ranks last in query searches.

Not supported: TTL (``supports_ttl = False``).
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
except ModuleNotFoundError as exc:  # pragma: no cover - exercised only without the extra
    if exc.name is not None and exc.name.split(".")[0] != "langgraph":
        raise
    from ..errors import ConfigError

    raise ConfigError("the LangGraph store needs langgraph: pip install 'personatree[langgraph]'") from None

from ..errors import InputError
from ..types import Level

if TYPE_CHECKING:  # pragma: no cover
    from ..api import PersonaTree

__all__ = ["PersonaTreeStore", "default_text_of"]

#: Metadata key of the observations written by this adapter.
META_KEY = "langgraph"
#: Store-wide registry of namespaces → user (so list_namespaces need not scan every user).
REGISTRY_KEY = "langgraph.namespaces"
#: Per-user cache namespace of tombstones: item key → id of the last deleted observation.
TOMBSTONES = "langgraph.deleted"

_TEXT_FIELDS = ("content", "text", "memory", "data", "fact", "note", "summary")


def default_text_of(value: Mapping[str, Any]) -> str:
    """The text of an item that becomes the user's message.

    The first non-empty string among ``content``, ``text``, ``memory``, ``data``,
    ``fact``, ``note`` and ``summary``; otherwise the value's ``key: value`` pairs, one
    per line (so ``{"food": "likes pizza"}`` reads ``food: likes pizza``).
    """
    for name in _TEXT_FIELDS:
        v = value.get(name)
        if isinstance(v, str) and v.strip():
            return v.strip()
    lines = []
    for k, v in value.items():
        text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, sort_keys=True, default=str)
        lines.append(f"{k}: {text}")
    return "\n".join(lines) or "{}"


def _key_str(namespace: tuple[str, ...], key: str) -> str:
    return json.dumps([list(namespace), key], ensure_ascii=False, separators=(",", ":"))


@dataclass(slots=True)
class _Rec:
    """One item's history in the log: (observation id, time, value) per put."""

    versions: list[tuple[str, datetime, dict[str, Any]]] = field(default_factory=list)
    deleted: str | None = None  # id of the newest observation a delete made unreadable

    def live(self) -> list[tuple[str, datetime, dict[str, Any]]]:
        if self.deleted is None:
            return self.versions
        ids = [v[0] for v in self.versions]
        if self.deleted not in ids:
            return self.versions
        return self.versions[ids.index(self.deleted) + 1:]


@dataclass(slots=True)
class _UserIndex:
    version: int
    items: dict[tuple[tuple[str, ...], str], _Rec]


class PersonaTreeStore(BaseStore):
    """LangGraph long-term memory stored as personatree evidence.

    Parameters
    ----------
    tree : PersonaTree
        The memory (the caller keeps ownership and closes it).
    user_index : int
        Which namespace label is the user id (default ``-1``, the last one).
    user_of : callable, optional
        ``user_of(namespace) -> user_id``; overrides ``user_index``.
    text_of : callable, optional
        ``text_of(value) -> str``: the text that becomes evidence (default
        :func:`default_text_of`).

    Examples
    --------
    >>> from personatree import PersonaTree                            # doctest: +SKIP
    >>> from personatree.integrations.langgraph import PersonaTreeStore  # doctest: +SKIP
    >>> store = PersonaTreeStore(PersonaTree.open("memory.db"))        # doctest: +SKIP
    >>> store.put(("memories", "maya"), "m1", {"content": "I love hiking."})  # doctest: +SKIP
    >>> store.search(("memories", "maya"), query="outdoor hobbies")    # doctest: +SKIP
    """

    supports_ttl = False

    def __init__(
        self,
        tree: "PersonaTree",
        *,
        user_index: int = -1,
        user_of: Callable[[tuple[str, ...]], str] | None = None,
        text_of: Callable[[Mapping[str, Any]], str] | None = None,
    ) -> None:
        self.tree = tree
        self.user_index = user_index
        self._user_of = user_of
        self._text_of = text_of or default_text_of
        self._lock = threading.RLock()
        self._indexes: dict[str, _UserIndex] = {}
        self._counter = itertools.count()

    # -- mapping ----------------------------------------------------------------------

    def user_of(self, namespace: tuple[str, ...]) -> str:
        """The personatree user an item namespace belongs to."""
        if self._user_of is not None:
            return self._user_of(tuple(namespace))
        try:
            return namespace[self.user_index]
        except IndexError:
            raise InputError(
                f"namespace {namespace!r} has no label at user_index {self.user_index}"
            ) from None

    def _registry(self) -> dict[str, str]:
        raw = self.tree.store.get_meta(REGISTRY_KEY)
        return json.loads(raw) if raw else {}

    def _register(self, namespace: tuple[str, ...], user: str) -> None:
        key = json.dumps(list(namespace), ensure_ascii=False)
        reg = self._registry()
        if reg.get(key) != user:
            reg[key] = user
            self.tree.store.set_meta(REGISTRY_KEY, json.dumps(reg, ensure_ascii=False, sort_keys=True))

    def _namespaces(self) -> dict[tuple[str, ...], str]:
        return {tuple(json.loads(k)): u for k, u in self._registry().items()}

    # -- the per-user index of items (rebuilt from the log when the store moved on) ---

    def _index(self, user: str) -> _UserIndex:
        version = self.tree.store.version(user)
        idx = self._indexes.get(user)
        if idx is not None and idx.version == version:
            return idx
        items: dict[tuple[tuple[str, ...], str], _Rec] = {}
        if version:
            for o in self.tree.store.observations(user):
                meta = o.metadata.get(META_KEY) if isinstance(o.metadata, Mapping) else None
                if not isinstance(meta, Mapping):
                    continue
                k = (tuple(meta["namespace"]), str(meta["key"]))
                items.setdefault(k, _Rec()).versions.append((o.id, o.at, dict(meta["value"])))
            for (ns, key), rec in items.items():
                rec.deleted = self.tree.store.cache_get(TOMBSTONES, _key_str(ns, key), user_id=user)
        idx = _UserIndex(version, items)
        self._indexes[user] = idx
        return idx

    def _item(self, ns: tuple[str, ...], key: str, rec: _Rec) -> Item | None:
        live = rec.live()
        if not live:
            return None
        return Item(value=dict(live[-1][2]), key=key, namespace=ns, created_at=live[0][1], updated_at=live[-1][1])

    # -- operations -------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run operations in order; as in LangGraph's ``InMemoryStore``, reads see the
        state before the batch's writes, and of several puts to one key the last wins."""
        ops = list(ops)
        results: list[Result] = []
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        with self._lock:
            for op in ops:
                if isinstance(op, GetOp):
                    results.append(self._get(op))
                elif isinstance(op, SearchOp):
                    results.append(self._search(op))
                elif isinstance(op, ListNamespacesOp):
                    results.append(self._list_namespaces(op))
                elif isinstance(op, PutOp):
                    puts[(tuple(op.namespace), str(op.key))] = op
                    results.append(None)
                else:
                    raise InputError(f"unknown operation type {type(op).__name__}")
            writes = [op for op in puts.values() if op.value is not None]
            by_user: dict[str, list[PutOp]] = {}
            for op in writes:
                by_user.setdefault(self.user_of(tuple(op.namespace)), []).append(op)
            for user, user_ops in by_user.items():
                self._put_many(user, user_ops)
            for op in puts.values():
                if op.value is None:
                    self._delete(tuple(op.namespace), str(op.key))
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread (embedding and SQLite are blocking)."""
        return await asyncio.to_thread(self.batch, list(ops))

    def _get(self, op: GetOp) -> Item | None:
        ns = tuple(op.namespace)
        try:
            user = self.user_of(ns)
        except ValueError:
            return None
        rec = self._index(user).items.get((ns, str(op.key)))
        return None if rec is None else self._item(ns, str(op.key), rec)

    def _put_many(self, user: str, ops: list[PutOp]) -> None:
        """Store the puts of one user as observations, in one ``observe_many`` call
        (one embedding batch and one transaction)."""
        if any(op.ttl is not None for op in ops):
            raise NotImplementedError("TTL is not supported by PersonaTreeStore")
        now = self.tree.clock.now()
        interactions: list[dict[str, Any]] = []
        new: list[tuple[tuple[str, ...], str, str, dict[str, Any]]] = []
        for op in ops:
            ns, key = tuple(op.namespace), str(op.key)
            value = dict(op.value or {})
            text = self._text_of(value)
            if isinstance(op.index, list) and op.index:
                # Explicit fields to index, in LangGraph's path syntax ("a.b", "items[*].text").
                from langgraph.store.base.embed import get_text_at_path

                picked = [t for path in op.index for t in get_text_at_path(value, path) if t.strip()]
                text = "\n".join(picked) or text
            # A fresh id per put: the same value put twice is two statements in the log,
            # and a put after a delete must not be swallowed as a duplicate of the old one.
            digest = hashlib.sha256(
                f"{_key_str(ns, key)}\x1f{now.isoformat()}\x1f{next(self._counter)}\x1f{id(self)}".encode()
            ).hexdigest()[:24]
            obs_id = f"lg_{digest}"
            interactions.append({
                "messages": [{"role": "user" if op.index is not False else "system", "content": text}],
                "at": now,
                "session_id": f"langgraph:{'.'.join(ns)}"[:200],
                "observation_id": obs_id,
                "metadata": {META_KEY: {"namespace": list(ns), "key": key, "value": value}},
            })
            new.append((ns, key, obs_id, value))
        before = self.tree.store.version(user)
        idx = self._index(user)
        self.tree.observe_many(user, interactions)
        for ns in dict.fromkeys(n[0] for n in new):
            self._register(ns, user)
        for ns, key, obs_id, value in new:
            idx.items.setdefault((ns, key), _Rec()).versions.append((obs_id, now, value))
        self._settle(user, idx, before)

    def _delete(self, ns: tuple[str, ...], key: str) -> None:
        try:
            user = self.user_of(ns)
        except ValueError:
            return
        before = self.tree.store.version(user)
        idx = self._index(user)
        rec = idx.items.get((ns, key))
        if rec is None or not rec.live():
            return
        last = rec.versions[-1][0]
        self.tree.store.cache_put(TOMBSTONES, _key_str(ns, key), last, user_id=user)
        rec.deleted = last
        # Forget the evidence of every version: a deleted memory must stop shaping the tree.
        obs_ids = {v[0] for v in rec.versions}
        for leaf in self.tree.nodes(user, Level.LEAF):
            if any(p.observation_id in obs_ids for p in leaf.provenance):
                try:
                    self.tree.forget(user, leaf.id)
                except KeyError:  # already removed with an earlier leaf's summary
                    continue
        self._settle(user, idx, before)

    def _settle(self, user: str, idx: _UserIndex, before: int) -> None:
        # Our writes moved the version on; keep the incrementally updated index only
        # if nobody else wrote in between (otherwise rebuild from the log next time).
        self._indexes[user] = idx if idx.version == before else _UserIndex(-1, {})
        if idx.version == before:
            idx.version = self.tree.store.version(user)

    def _candidates(self, prefix: tuple[str, ...]) -> list[tuple[str, tuple[str, ...], str, Item]]:
        users = sorted({u for ns, u in self._namespaces().items() if ns[: len(prefix)] == prefix})
        out: list[tuple[str, tuple[str, ...], str, Item]] = []
        for user in users:
            for (ns, key), rec in self._index(user).items.items():
                if ns[: len(prefix)] != prefix:
                    continue
                item = self._item(ns, key, rec)
                if item is not None:
                    out.append((user, ns, key, item))
        return out

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        cands = [c for c in self._candidates(prefix) if not op.filter or _matches(c[3].value, op.filter)]
        if not op.query:
            # Newest first, like a feed of memories.
            cands.sort(key=lambda c: (c[3].updated_at, c[1], c[2]), reverse=True)
            return [_search_item(c[3], None) for c in cands[op.offset: op.offset + op.limit]]
        scores: dict[tuple[tuple[str, ...], str], float] = {}
        for user in sorted({c[0] for c in cands}):
            mine = {(c[1], c[2]): c for c in cands if c[0] == user}
            current = {self._index(user).items[k].versions[-1][0]: k for k in mine}
            n_leaves = self.tree.stats(user)["leaves"]
            if not n_leaves:
                continue
            k = min(n_leaves, max(100, 10 * (op.offset + op.limit)))
            for hit in self.tree.search(user, op.query, k=k, levels=[Level.LEAF]):
                for p in self.tree.node(user, hit.node_id).provenance:
                    item_key = current.get(p.observation_id)
                    if item_key is not None and hit.score > scores.get(item_key, float("-inf")):
                        scores[item_key] = hit.score
        scored = sorted((c for c in cands if (c[1], c[2]) in scores),
                        key=lambda c: (-scores[(c[1], c[2])], c[1], c[2]))
        page = scored[op.offset: op.offset + op.limit]
        out = [_search_item(c[3], float(scores[(c[1], c[2])])) for c in page]
        if len(out) < op.limit:
            # As InMemoryStore does: items without a vector fill the page, unscored.
            rest = [c for c in cands if (c[1], c[2]) not in scores]
            rest.sort(key=lambda c: (c[3].updated_at, c[1], c[2]), reverse=True)
            out.extend(_search_item(c[3], None) for c in rest[: op.limit - len(out)])
        return out

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        live: set[tuple[str, ...]] = set()
        for ns, user in self._namespaces().items():
            if op.match_conditions and not all(_does_match(c, ns) for c in op.match_conditions):
                continue
            idx = self._index(user)
            if any(n == ns and self._item(n, k, rec) is not None for (n, k), rec in idx.items.items()):
                live.add(ns)
        names = sorted({ns[: op.max_depth] for ns in live} if op.max_depth is not None else live)
        return names[op.offset: op.offset + op.limit]

    # -- personatree extras for prompt building -----------------------------------------

    def recall(self, namespace: tuple[str, ...], query: str, budget: int | None = None, *,
               from_user: bool = False) -> str:
        """personatree's query-conditioned, token-budgeted context for the namespace's user.

        ``from_user=True`` when ``query`` is the user's own latest message (see
        :meth:`personatree.PersonaTree.recall`).
        """
        return str(self.tree.recall(self.user_of(tuple(namespace)), query, budget=budget,
                                    from_user=from_user).text)

    def profile(self, namespace: tuple[str, ...], limit: int = 12) -> str:
        """The standing profile block (top claims and patterns) of the namespace's user."""
        from ..view.profile import profile_block

        return profile_block(self.tree, self.user_of(tuple(namespace)), limit=limit).text


def _search_item(item: Item, score: float | None) -> SearchItem:
    return SearchItem(namespace=item.namespace, key=item.key, value=item.value,
                      created_at=item.created_at, updated_at=item.updated_at, score=score)


def _does_match(cond: MatchCondition, ns: tuple[str, ...]) -> bool:
    path = tuple(cond.path)
    if len(ns) < len(path):
        return False
    pairs = zip(ns, path) if cond.match_type == "prefix" else zip(reversed(ns), reversed(path))
    if cond.match_type not in ("prefix", "suffix"):
        raise InputError(f"unsupported match type {cond.match_type!r}")
    return all(p == "*" or a == p for a, p in pairs)


def _matches(value: Mapping[str, Any], flt: Mapping[str, Any]) -> bool:
    """LangGraph's filter semantics: exact (nested) matches and $eq/$ne/$gt/$gte/$lt/$lte."""
    return all(_compare(value.get(k), v) for k, v in flt.items())


def _compare(have: Any, want: Any) -> bool:
    if isinstance(want, Mapping):
        if any(str(k).startswith("$") for k in want):
            return all(_operator(have, op, v) for op, v in want.items())
        return isinstance(have, Mapping) and all(_compare(have.get(k), v) for k, v in want.items())
    if isinstance(want, (list, tuple)):
        return (isinstance(have, (list, tuple)) and len(have) == len(want)
                and all(_compare(a, b) for a, b in zip(have, want)))
    return bool(have == want)


def _operator(have: Any, op: str, want: Any) -> bool:
    if op == "$eq":
        return bool(have == want)
    if op == "$ne":
        return bool(have != want)
    if have is None:
        return False
    try:
        a, b = float(have), float(want)
    except (TypeError, ValueError):
        return False
    if op == "$gt":
        return a > b
    if op == "$gte":
        return a >= b
    if op == "$lt":
        return a < b
    if op == "$lte":
        return a <= b
    raise InputError(f"unsupported filter operator {op!r}")
