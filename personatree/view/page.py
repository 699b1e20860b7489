"""Assemble the self-contained HTML page: CSS, data and JavaScript inlined, no network."""

from __future__ import annotations

import html
from functools import cache
from importlib import resources
from typing import Any

import orjson

__all__ = ["render_page"]


@cache
def _asset(name: str) -> str:
    return resources.files("personatree.view").joinpath("assets", name).read_text("utf-8")


def _script_json(data: Any) -> str:
    """JSON that is safe inside ``<script>``: no ``</script>`` or ``<!--`` can close it early."""
    text = orjson.dumps(data, default=str).decode()
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") \
        .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def render_page(payload: dict[str, Any]) -> str:
    """The page for a payload built by :func:`personatree.view.data.view_payload`.

    Parameters
    ----------
    payload : dict
        The view data.

    Returns
    -------
    str
        A complete HTML document with no external references.
    """
    c = payload["counts"]
    counts = (f"{c.get('root', 0)} claims · {c.get('mid', 0)} patterns · {c.get('leaf', 0)} evidence · "
              f"{c.get('conflicts', 0)} conflicts")
    generated = str(payload.get("generated", ""))[:16].replace("T", " ")
    title = html.escape(str(payload["title"]))
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="personatree">
<title>{title}</title>
<style>{_asset("view.css")}</style>
</head>
<body>
<header>
  <h1>{title}</h1>
  <span class="counts">{html.escape(counts)} · read {html.escape(generated)} UTC</span>
  <span class="legend" aria-label="legend">
    <span><i style="background:var(--root)"></i>claim (root)</span>
    <span><i style="background:var(--mid)"></i>pattern (mid)</span>
    <span><i style="background:var(--leaf)"></i>evidence (leaf)</span>
    <span><i style="background:var(--conflict)"></i>conflict</span>
    <span>size &amp; opacity = confidence</span>
  </span>
  <input id="filter" type="search" placeholder="highlight text…" aria-label="highlight nodes containing text">
</header>
<main>
  <div id="scroller"><div id="canvas"><svg id="edges"></svg></div></div>
  <aside id="panel" aria-live="polite"></aside>
</main>
<script id="pt-data" type="application/json">{_script_json(payload)}</script>
<script>{_asset("view.js")}</script>
</body>
</html>
"""
