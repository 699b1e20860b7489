"""Similarity specific to one person: cosines with what all their statements share taken out.

A person's statements share a direction in embedding space (their register, and most
of all their small talk: greetings, praise of the other speaker, "that sounds
awesome"), so by plain cosine their pleasantries are close to anything they say. The
cosine of two statements once the person's mean statement is subtracted from both
ranks what is specific to them: the habit a change ends comes ahead of the chat, and
a question finds the statement about its topic ahead of pleasantries that are merely
close to everything. Pure functions over arrays.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["centred_cosines", "common_direction", "specific_similarity"]

#: The mean statement is shrunk towards zero as if this many zero rows were averaged in:
#: with a handful of statements, each is most of the mean, and taking it out would turn
#: any two of them into opposites.
_PRIOR_ROWS = 32


def common_direction(blocks: Sequence[np.ndarray]) -> np.ndarray:
    """What the rows of ``blocks`` share: their sum over (rows + 32) (pure).

    Parameters
    ----------
    blocks : sequence of ndarray
        Embedding rows, all of one width.

    Returns
    -------
    ndarray of float32
        The rows' mean, shrunk towards zero when they are few.
    """
    n = sum(len(b) for b in blocks)
    total = np.zeros(blocks[0].shape[1], np.float64)
    for b in blocks:
        if len(b):
            # A product with a vector of ones: one pass over the rows, without the
            # float64 copy of them that summing at float64 would make.
            total += np.ones(len(b), b.dtype) @ b
    return (total / (n + _PRIOR_ROWS)).astype(np.float32)


def specific_similarity(
    sims: np.ndarray, rows: np.ndarray, new: np.ndarray, mean: np.ndarray
) -> np.ndarray:
    """Cosines of unit rows and new statements with ``mean`` subtracted from all (pure).

    Computed from the plain cosines, so no centred copy of the rows is made: for unit
    vectors, ``(x - m)·(c - m) = x·c - x·m - c·m + m·m`` and
    ``|x - m|² = 1 - 2 x·m + m·m``.

    Parameters
    ----------
    sims : ndarray, shape (n_rows, n_new)
        Cosines of the rows with the new statements.
    rows : ndarray, shape (n_rows, d)
        Unit rows (as every :class:`~personatree.ports.Embedder` gives them).
    new : ndarray, shape (n_new, d)
        Unit rows.
    mean : ndarray, shape (d,)
        The direction taken out (:func:`common_direction`).

    Returns
    -------
    ndarray of float32, shape (n_rows, n_new)
        0 where a centred vector is zero.
    """
    m = np.asarray(mean, np.float32)
    return centred_cosines(sims, np.asarray(rows @ m, np.float32), np.asarray(new @ m, np.float32), float(m @ m))


def centred_cosines(
    sims: np.ndarray, row_mean: np.ndarray, new_mean: np.ndarray, mean_sq: float
) -> np.ndarray:
    """:func:`specific_similarity` from the cosines and each vector's product with the mean (pure).

    For a caller that keeps each row's product with the mean (it changes only with
    the rows), so that a query costs no pass over the rows beyond its cosines.

    Parameters
    ----------
    sims : ndarray, shape (n_rows, n_new)
        Cosines of unit rows with unit new vectors.
    row_mean, new_mean : ndarray
        Each row's and each new vector's dot product with the mean.
    mean_sq : float
        The mean's squared norm.

    Returns
    -------
    ndarray of float32, shape (n_rows, n_new)
        0 where a centred vector is zero.
    """
    # The (rows × new) array is made once, in float32, and worked on in place: an
    # import compares 64 statements with every archived one.
    mm = np.float32(mean_sq)
    rm = np.asarray(row_mean, np.float32)
    nm = np.asarray(new_mean, np.float32)
    out = np.array(sims, np.float32)
    out -= rm[:, None]
    out -= nm[None, :]
    out += mm
    out *= _inverse_norms(rm, mm)[:, None]
    out *= _inverse_norms(nm, mm)[None, :]
    return out


def _inverse_norms(dot_mean: np.ndarray, mm: np.float32) -> np.ndarray:
    # 1 / |v - m| for unit v; 0 where v is all mean (no direction of its own left).
    sq = 1 - 2 * dot_mean + mm
    inv = np.zeros(len(sq), np.float32)
    np.divide(1.0, np.sqrt(np.maximum(sq, 0)), out=inv, where=sq > 1e-6)
    return inv
