"""The archived leaves' rows of the leaf matrix, stacked after the tree's own leaves.

A user's archive (leaves consolidation's bounds took out of the tree) is searched like
any orphan leaf, so its embeddings are rows of the leaf matrix. They are stacked once
per archive change (:func:`archive_rows`) and appended to the tree's rows per version
(:func:`with_archive_rows`), leaving out any leaf the tree holds again.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from ..graph import MemoryGraph
from ..types import Node

__all__ = ["archive_rows", "with_archive_rows"]


def archive_rows(archive: Iterable[Node], matrix: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The ids and stacked embeddings of the archived leaves that have one.

    Parameters
    ----------
    archive : iterable of Node
        The archived leaves.
    matrix : ndarray
        The tree's leaf matrix (gives the width of an empty result).

    Returns
    -------
    (list of str, ndarray)
        Ids and float32 rows, in the same order.
    """
    keep = [n for n in archive if n.embedding is not None]
    rows = (
        np.stack([np.asarray(n.embedding, dtype=np.float32) for n in keep])
        if keep else np.zeros((0, matrix.shape[1] if matrix.ndim == 2 else 0), np.float32)
    )
    return [n.id for n in keep], rows


def with_archive_rows(
    graph: MemoryGraph, ids: list[str], matrix: np.ndarray, archived: tuple[list[str], np.ndarray]
) -> tuple[list[str], np.ndarray]:
    """The leaf level's ids and read-only matrix with the archived rows appended.

    Parameters
    ----------
    graph : MemoryGraph
        The tree: an archived leaf it holds again is left out (the tree's row counts).
    ids, matrix : list of str, ndarray
        The tree's leaf rows.
    archived : (list of str, ndarray)
        :func:`archive_rows` of the archive.

    Returns
    -------
    (list of str, ndarray)
        Unchanged when there is nothing to append, or when the archive was embedded
        by another embedder (not comparable: it is searched lexically only).
    """
    a_ids, a_rows = archived
    if not a_ids:
        return ids, matrix
    tree = {n.id for n in graph.nodes()}  # one set, not a graph lookup per archived leaf
    mask = [i for i, x in enumerate(a_ids) if x not in tree]
    if len(mask) != len(a_ids):
        a_ids, a_rows = [a_ids[i] for i in mask], a_rows[mask]
    if matrix.shape[0] == 0:
        out = a_rows
    elif a_rows.shape[1] != matrix.shape[1]:
        return ids, matrix
    else:
        out = np.concatenate([matrix, a_rows])
    out.setflags(write=False)
    return ids + a_ids, out
