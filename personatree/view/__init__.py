"""An interactive, self-contained HTML view of one user's evidence tree.

Roots (claims) sit on top, their patterns (mids) below, and the evidence (leaves)
stacked under each pattern; conflicts are red. Clicking a node shows its support
path, the evidence under it with the verbatim observations and dates, and what
contradicts it. The page inlines its CSS, data and JavaScript, so it opens from
disk, in a notebook (``IPython.display.HTML``) or in an air-gapped browser.

>>> from personatree import PersonaTree                       # doctest: +SKIP
>>> from personatree.view import tree_html, write_html         # doctest: +SKIP
>>> write_html(PersonaTree.open("memory.db"), "maya", "maya.html")  # doctest: +SKIP
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from ..types import utc
from .data import view_payload
from .page import render_page
from .profile import ProfileBlock, ProfileLine, profile_block

__all__ = [
    "ProfileBlock",
    "ProfileLine",
    "notebook_html",
    "profile_block",
    "render_page",
    "tree_html",
    "view_payload",
    "write_html",
]


def tree_html(tree: Any, user_id: str, *, now: datetime | None = None, title: str | None = None) -> str:
    """A self-contained interactive HTML page of ``user_id``'s tree.

    Parameters
    ----------
    tree : PersonaTree
        An open memory.
    user_id : str
        Whose tree.
    now : datetime, optional
        When confidences are read (default: the tree's clock).
    title : str, optional
        Page title; default ``"memory of <user>"``.

    Returns
    -------
    str
        A complete HTML document (no external references).

    Raises
    ------
    UnknownUserError
        If nothing is stored for the user.
    """
    graph = tree.graph(user_id)
    when = utc(now) if now is not None else tree.clock.now()
    obs_ids: list[str] = []
    seen: set[str] = set()
    for n in graph.nodes():
        for p in n.provenance:
            if p.observation_id not in seen:
                seen.add(p.observation_id)
                obs_ids.append(p.observation_id)
    observations = tree.store.observations(graph.user_id, obs_ids) if obs_ids else []
    payload = view_payload(graph, tree.registry, when, observations, title=title)
    return render_page(payload)


def write_html(tree: Any, user_id: str, path: str | Path, **kwargs: Any) -> Path:
    """Write :func:`tree_html` to ``path`` and return the path."""
    out = Path(path)
    out.write_text(tree_html(tree, user_id, **kwargs), encoding="utf-8")
    return out


def notebook_html(page: str, *, height: int = 640) -> str:
    """Wrap a page in a sandboxed ``<iframe srcdoc>`` for Jupyter.

    The page styles ``html`` and ``body``; inside an iframe those rules cannot leak
    into the notebook, and the notebook's CSS cannot break the page.

    Parameters
    ----------
    page : str
        A page from :func:`tree_html`.
    height : int
        Frame height in pixels.

    Returns
    -------
    str
        HTML to pass to ``IPython.display.HTML``.
    """
    import html as _html

    return (f'<iframe srcdoc="{_html.escape(page, quote=True)}" style="width:100%;height:{int(height)}px;'
            f'border:1px solid #ddd;border-radius:6px" sandbox="allow-scripts"></iframe>')
