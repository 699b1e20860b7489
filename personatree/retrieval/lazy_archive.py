"""A user's archived leaves read from the store only when a recall shows them.

A new process that reads a user's retrieval state back from its snapshot
(:mod:`.snapshot`) needs of the archive only what every query searches: the ids, the
embedding rows and the lexical postings, all in the snapshot. The leaves themselves
(content, provenance, attributes) are needed only for the few a recall scores or
shows, so they are read by id when first asked for: decoding every archived leaf of
a big user costs more than many warm recalls together.

Archived leaves never change in place (a leaf id names one sentence of one turn), so
a leaf read later is the leaf the snapshot was built from, unless a later commit
removed or replaced it; the state's refresh after such a commit reads the whole
archive and compares each leaf with the digest of its signature kept in the
snapshot (:func:`signature_digest`), so that it is refreshed exactly as a state
that held every leaf from the start.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any, Callable, Hashable, Iterable, Iterator, Mapping, Sequence

from ..types import Level, Node

__all__ = [
    "ArchiveChanged", "LazyArchive", "LazyNodes", "ArchiveFetch", "signature_digest", "store_fetch", "refreshed_signatures",
    "settled_signatures", "CHANGED",
]

#: Reads archived leaves of one user by id (all of them when ``None``); unknown ids
#: are left out.
ArchiveFetch = Callable[[Sequence[str] | None], list[Node]]

#: The signature of an archived leaf that a later commit removed or replaced: equal
#: to no signature, so a refresh drops the leaf and indexes whatever now has its id.
_CHANGED_TEXT = "\x00changed"
CHANGED: Hashable = (Level.LEAF, _CHANGED_TEXT)


class ArchiveChanged(KeyError):
    """An archived leaf of the snapshot is gone from the store: another process's commit
    removed it after this recall read the user's version. Recalling again reads the
    new version (and refreshes the state to it)."""


def signature_digest(sig: Hashable) -> str:
    """A short digest of a node signature (see ``retrieval.state.signature``).

    Parameters
    ----------
    sig : tuple
        ``(level, content, t_first, extra text, turn key)``.

    Returns
    -------
    str
        32 hex digits; equal signatures give equal digests.
    """
    parts: tuple[Any, ...] = sig  # type: ignore[assignment]
    level, content, t_first, extra, turn = parts
    text = f"{level.value}\x1f{content}\x1f{t_first.isoformat()}\x1f{extra}\x1f{turn}"
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def store_fetch(store: Any, user_id: str) -> ArchiveFetch | None:
    """An :data:`ArchiveFetch` over a store's ``archive(user_id, ids)``, or ``None``.

    Parameters
    ----------
    store : Store
    user_id : str

    Returns
    -------
    ArchiveFetch or None
        ``None`` for a store without an archive.
    """
    read = getattr(store, "archive", None)
    if read is None:
        return None

    def fetch(ids: Sequence[str] | None) -> list[Node]:
        return list(read(user_id, ids))

    return fetch


def refreshed_signatures(
    lazy: "LazyArchive",
    graph: Any,
    current: Mapping[str, Node],
    signature: Callable[[Node], Hashable],
) -> dict[str, Hashable]:
    """The signatures a state holding every archived leaf would have held.

    For each archived leaf the tree did not hold at the snapshot: its signature, when
    the node that has its id now (in the tree, else in the archive) still matches the
    snapshot's digest; else :data:`CHANGED`. A refresh comparing these with the new
    signatures then drops and re-indexes exactly what it would have in a state that
    read every leaf at the start.

    Parameters
    ----------
    lazy : LazyArchive
    graph : MemoryGraph
        The tree now.
    current : mapping of str to Node
        The archive now (:meth:`LazyArchive.read_all`).
    signature : callable
        ``retrieval.state.signature``.

    Returns
    -------
    dict of str to signature
    """
    def now(nid: str) -> Hashable | None:
        node = graph.node(nid) if nid in graph else current.get(nid)
        return signature(node) if node is not None else None

    return settled_signatures({nid: (Level.LEAF, d) for nid, d in lazy.digests.items()}, now)


def settled_signatures(
    digests: Mapping[str, tuple[Level, str]], now: Callable[[str], Hashable | None]
) -> dict[str, Hashable]:
    """Signatures kept as digests, recovered from the nodes that have their ids now (pure).

    Parameters
    ----------
    digests : mapping of str to (Level, str)
        Each node's level and :func:`signature_digest` when the digest was taken.
    now : callable
        Node id → the signature of the node that has the id now (``None``: none has).

    Returns
    -------
    dict of str to signature
        In the order of ``digests``: the signature now where its digest is the one
        kept, else one equal to no signature, of the node's level then (what a refresh
        drops the node by, as it would by the signature it held).
    """
    out: dict[str, Hashable] = {}
    for nid, (level, digest) in digests.items():
        sig = now(nid)
        out[nid] = sig if sig is not None and signature_digest(sig) == digest else (level, _CHANGED_TEXT)
    return out


class LazyArchive(Mapping[str, Node]):
    """The archived leaves of one user as of a snapshot, each read on first use.

    Parameters
    ----------
    ids : sequence of str
        Every archived leaf id, in archiving order.
    fetch : ArchiveFetch
        Reads leaves by id.
    digests : mapping of str to str
        The :func:`signature_digest` of each archived leaf the tree does not hold.
    content_version : int or None
        The user's content version the snapshot describes (``None``: unknown, so any
        later version counts as a change).
    current : callable, optional
        Reads the user's content version now; without it every later version counts
        as a change.
    tree_digests : mapping of str to (Level, str), optional
        The level and signature digest of each node of the tree at the snapshot, when
        the state holds the tree's signatures only so (see :func:`settled_signatures`);
        the first refresh settles them and sets this to ``None``.
    """

    def __init__(
        self,
        ids: Sequence[str],
        fetch: ArchiveFetch,
        digests: Mapping[str, str],
        content_version: int | None,
        current: Callable[[], int | None] | None = None,
        tree_digests: Mapping[str, tuple[Level, str]] | None = None,
    ) -> None:
        self.tree_digests = tree_digests
        self.ids = list(ids)
        self._known = frozenset(self.ids)
        self._fetch = fetch
        self._loaded: dict[str, Node] = {}
        self._lock = threading.Lock()
        self.digests = dict(digests)
        self.content_version = content_version
        self._current = current

    def unchanged(self) -> bool:
        """Whether no commit since the snapshot changed more than recall statistics."""
        if self.content_version is None or self._current is None:
            return False
        return self._current() == self.content_version

    def peek(self, key: str) -> Node | None:
        """The leaf ``key`` if it was read already, else ``None`` (reads nothing)."""
        return self._loaded.get(key)

    def __getitem__(self, key: str) -> Node:
        hit = self._loaded.get(key)
        if hit is not None:
            return hit
        if key not in self._known:
            raise KeyError(key)
        self.prefetch((key,))
        hit = self._loaded.get(key)
        if hit is None:
            raise ArchiveChanged(key)
        return hit

    def __contains__(self, key: object) -> bool:
        return key in self._known

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)

    def prefetch(self, keys: Iterable[str]) -> None:
        """Read the leaves of ``keys`` not read yet, in one store read.

        Parameters
        ----------
        keys : iterable of str
            Ids; those not archived or already read are skipped.
        """
        want = [k for k in dict.fromkeys(keys) if k in self._known and k not in self._loaded]
        if not want:
            return
        with self._lock:
            want = [k for k in want if k not in self._loaded]
            if want:
                for n in self._fetch(want):
                    self._loaded[n.id] = n

    def read_all(self) -> dict[str, Node]:
        """Every leaf the store's archive holds now (id → leaf, archiving order).

        Returns
        -------
        dict
            The current archive, which a commit since the snapshot may have changed.
        """
        return {n.id: n for n in self._fetch(None)}


class LazyNodes(dict[str, Node]):
    """``RetrievalState.nodes`` over a tree and a :class:`LazyArchive`.

    The tree's nodes are held; an archived leaf is read from the archive the first time
    it is looked up (``nodes[x]``, ``nodes.get(x)``). Membership and length count the
    archived leaves unread. Iterating reads every leaf (no recall path iterates).

    Parameters
    ----------
    tree : iterable of Node
        The tree's nodes.
    archive : LazyArchive
    """

    def __init__(self, tree: Iterable[Node], archive: LazyArchive) -> None:
        super().__init__((n.id, n) for n in tree)
        self.archive = archive
        # An archived id this dict does not hold is an archived leaf the tree does not
        # hold (the tree's are all held from the start): the archive's own id set
        # answers for them, without a set of its own per state.
        self._extra_set = archive._known
        both = len(archive._known.intersection(dict.keys(self)))  # type: ignore[arg-type]
        self._total = dict.__len__(self) + len(archive.ids) - both

    def __missing__(self, key: str) -> Node:
        if key not in self._extra_set:
            raise KeyError(key)
        node = self.archive[key]
        dict.__setitem__(self, key, node)
        return node

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or key in self._extra_set

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        """``self[key]``, or ``default`` when ``key`` is no node."""
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        if key in self._extra_set:
            try:
                return self[key]
            except KeyError:
                return default
        return default

    def __len__(self) -> int:
        return self._total

    def prefetch(self, keys: Iterable[str]) -> None:
        """Read the archived leaves among ``keys`` in one store read."""
        want = [k for k in keys if k in self._extra_set and not dict.__contains__(self, k)]
        if want:
            self.archive.prefetch(want)
            for k in want:
                node = self.archive.peek(k)
                if node is not None:
                    dict.__setitem__(self, k, node)

    def _all(self) -> None:
        self.prefetch([k for k in self.archive.ids if not dict.__contains__(self, k)])

    def __iter__(self) -> Iterator[str]:
        self._all()
        return dict.__iter__(self)

    def keys(self):  # type: ignore[override]
        """Every node id (reads the archived leaves not read yet)."""
        self._all()
        return dict.keys(self)

    def values(self):  # type: ignore[override]
        """Every node (reads the archived leaves not read yet)."""
        self._all()
        return dict.values(self)

    def items(self):  # type: ignore[override]
        """Every (id, node) (reads the archived leaves not read yet)."""
        self._all()
        return dict.items(self)
