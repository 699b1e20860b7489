"""``personatree import``: chat exports (ChatGPT, Claude, OpenAI-style, LangChain) as a
user's interactions, through :meth:`~personatree.api.PersonaTree.import_chat`."""

from __future__ import annotations

from typing import Any, Mapping

import typer
from rich.markup import escape

from ..errors import ChatFormatError
from ..portability.chats import read_chat_export
from .common import BATCH, CreateOpt, JsonOpt, StoreOpt, console, errors, print_json, progress_bar
from .memory import count_table
from .opening import open_tree
from .reading import read_source

__all__ = ["chat_export_interactions", "register"]


def register(app: typer.Typer) -> None:
    """Add the ``import`` command to ``app``."""
    app.command("import")(import_)


def chat_export_interactions(text: str, *, source: str = "input") -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Interactions for ``observe_many`` from a chat export, and its counts.

    See :mod:`personatree.portability.chats` for the formats read and the turns made.

    Raises
    ------
    ChatFormatError
        For an export of no known format (naming where).
    """
    read = read_chat_export(text, source)
    return read.interactions, read.counts()


def _judge_line(usage: Any) -> dict[str, Any] | None:
    """The LLM judge's calls for the import and the share it answered itself."""
    if usage is None:
        return None
    total = usage.total()
    share = total.answered_share
    return {"calls": total.calls, "answered_by_model": total.answered,
            "answered_share": None if share is None else round(share, 3), "fallbacks": total.fallbacks}


def _rows(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with nested counts flattened (``left_out.system``) for the table."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            out.update({f"{key}.{k}": v for k, v in value.items()})
        else:
            out[key] = value
    return out


def import_(
    user: str,
    source: str = typer.Argument(..., help="Chat export (JSON or JSONL); '-' for stdin."),
    store: str = StoreOpt,
    as_json: bool = JsonOpt,
    create: bool = CreateOpt,
) -> None:
    """Import a chat export as USER's interactions: ChatGPT or Claude conversations.json,
    JSONL of {"messages": [...]}, or a list of messages (OpenAI or LangChain roles)."""
    with errors():
        text = read_source(source)
        # Read before the store opens: a file of the wrong format fails at once.
        total = len(read_chat_export(text, source).interactions)
        if not total:
            raise ChatFormatError(f"{source} has no user messages to import")
        with open_tree(store, must_exist=False, create_dirs=create) as tree, \
                progress_bar(total, "importing") as update:
            report = tree.import_chat(user, text, source=source, batch_size=BATCH, progress=update)
            data = report.to_dict()
            judge = _judge_line(tree.judge_usage(report.user_id))
        if judge is not None:
            data["judge"] = judge
        if as_json:
            print_json(data)
            return
        console.print(count_table(_rows(data), title=f"imported into {escape(user)}"))
