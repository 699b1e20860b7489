"""The ``personatree`` command line: a thin layer over the Python API.

Every command takes ``--store`` (a SQLite path or store URL; the environment
variable ``PERSONATREE_STORE`` sets the default) and most take ``--json`` for
machine-readable output. Library errors become one clean line on stderr and a
non-zero exit, never a traceback. Long ingestions show a progress bar on stderr,
so that stdout stays clean for ``--json``.

Commands that only read refuse a store file that does not exist (instead of
creating an empty one); ``observe``, ``import``, ``demo`` and ``mcp`` create it, in
a folder that exists: a store path whose folder is missing is refused as a likely typo
unless ``--create`` asks for the folders to be made.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

import orjson
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .errors import InputError, PersonaTreeError, StoreError

__all__ = ["app", "main"]

app = typer.Typer(
    name="personatree",
    help="Evidence-tree memory for LLM agents: observe, consolidate, recall, explain.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
err_console = Console(stderr=True)

StoreOpt = typer.Option(
    "personatree.db", "--store", "-s", envvar="PERSONATREE_STORE",
    help="SQLite file or store URL (env PERSONATREE_STORE).",
)
JsonOpt = typer.Option(False, "--json", help="Print JSON for scripts.")
CreateOpt = typer.Option(
    False, "--create",
    help="Create the store's missing folders. Without it a new store is created only in a folder "
         "that exists, so a mistyped --store path is an error rather than a new empty memory.",
)


@contextlib.contextmanager
def errors() -> Iterator[None]:
    """Turn library and file errors into one clean line on stderr and exit code 1."""
    try:
        yield
    except PersonaTreeError as exc:
        _fail(f"{type(exc).__name__}: {exc}")
    except OSError as exc:
        # Writing --out files, reading inputs, binding a port: the message is enough.
        _fail(f"{type(exc).__name__}: {exc}")
    except KeyboardInterrupt:
        err_console.print("interrupted", highlight=False)
        raise typer.Exit(130) from None


def _fail(message: str) -> NoReturn:
    # markup=False: the message may contain user text with square brackets.
    err_console.print("error: " + message, highlight=False, markup=False, soft_wrap=True)
    raise typer.Exit(1) from None


def store_file(store: str) -> Path | None:
    """The SQLite file a ``--store`` value names, or ``None`` for non-file stores."""
    if "://" not in store:
        return Path(store)
    scheme, _, rest = store.partition("://")
    if scheme.lower() == "sqlite" and rest.startswith("/") and len(rest) > 1:
        return Path(rest[1:])
    return None


def open_tree(store: str, *, must_exist: bool = True, create_dirs: bool = False) -> Any:
    """Open a PersonaTree on ``store`` (imported lazily: the model loads only when needed).

    Parameters
    ----------
    store : str
        A SQLite path, ``sqlite:///file.db``, ``memory://`` or another store URL.
    must_exist : bool
        Refuse a SQLite file that does not exist yet (commands that only read).
    create_dirs : bool
        Create the missing folders of a new SQLite file (``--create``); without it a
        new file is created only in a folder that exists.

    Raises
    ------
    StoreError
        If ``must_exist`` and the file is missing, or the file's folder is missing and
        ``create_dirs`` is not set.
    """
    path = store_file(store)
    if must_exist and path is not None and not path.exists():
        raise StoreError(f"no store at {path} (give --store or set PERSONATREE_STORE)")
    if path is not None and not path.exists():
        _check_folder(path.expanduser(), create_dirs)
    from .api import PersonaTree
    from .config import PersonaTreeConfig
    from .store import open_store

    # Open the store before the model loads: a bad URL or an unreadable file fails in
    # milliseconds instead of after the embedder and judge have started.
    config = PersonaTreeConfig()
    st = open_store(store, busy_timeout_s=config.busy_timeout_s)
    try:
        # A store records the embedder it was built with: use that one, so the CLI
        # reads any store its library wrote.
        recorded = _recorded_embedder(st)
        if recorded is not None:
            config = config.model_copy(update={"embedder": recorded})
        _quiet_model_loading()
        return PersonaTree.open(store, config, store=st)
    except BaseException:
        st.close()
        raise


def _check_folder(path: Path, create: bool) -> None:
    """Refuse (or with ``create``, make) the missing folder of a new store file."""
    folder = path.parent
    if folder.is_dir():
        return
    if folder.exists():
        raise StoreError(f"cannot create the store {path}: {folder} is not a folder")
    if not create:
        raise StoreError(f"the folder {folder} does not exist, so there is no store at {path}; check the "
                         "--store path, or pass --create to create the folder and a new store")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the folder {folder}: {exc}") from None


def _recorded_embedder(st: Any) -> str | None:
    """The embedder spec a store records (see ``PersonaTree.open``), if any."""
    from .api import recorded_embedder
    from .embedders import spec_of

    meta = recorded_embedder(st)
    return None if meta is None else spec_of(meta["name"])


def _quiet_model_loading() -> None:
    # transformers draws a "Loading weights" bar on every start; for a CLI that runs
    # once per command it is noise on stderr (and garbage in logs of scheduled jobs).
    try:
        from transformers.utils import logging as hf_logging
    except Exception:  # transformers absent or broken: the embedder will say so itself
        return
    hf_logging.disable_progress_bar()


@contextlib.contextmanager
def progress_bar(total: int, label: str) -> Iterator[Callable[[int], None]]:
    """A rich progress bar on stderr for ``total`` items; yields ``update(done)``.

    Shown only on a terminal and for more than one batch, so scripts and small inputs
    get clean output.
    """
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    show = total > _PROGRESS_MIN and err_console.is_terminal
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=err_console, transient=True, disable=not show) as bar:
        task = bar.add_task(label, total=total)
        yield lambda done: bar.update(task, completed=done)


_PROGRESS_MIN = 32
_BATCH = 32


def print_json(data: Any) -> None:
    """Write ``data`` as JSON to stdout."""
    sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2, default=str).decode() + "\n")


@app.command()
def demo(store: str = typer.Option("personatree-demo.db", "--store", "-s", help="SQLite file for the demo.")) -> None:
    """Ingest a sample conversation, consolidate it, print the tree and explain a claim."""
    from .demo import run_demo

    with errors():
        run_demo(store, console).close()


def _read_interactions(source: str) -> list[dict[str, Any]]:
    text = sys.stdin.read() if source == "-" else _read_file(source)
    text = text.strip()
    if not text:
        raise InputError("no input")
    try:
        if text.startswith("["):
            data = orjson.loads(text)
        elif text.startswith("{") and "\n" not in text:
            data = [orjson.loads(text)]
        else:
            data = [obj for _, obj in json_lines(text, "stdin" if source == "-" else source)]
    except orjson.JSONDecodeError as exc:
        raise InputError(f"input is not JSON or JSONL: {exc}") from None
    items: list[dict[str, Any]] = []
    for i, obj in enumerate(data if isinstance(data, list) else [data]):
        if isinstance(obj, dict) and "messages" in obj:
            items.append(obj)
        elif isinstance(obj, dict) and "role" in obj:
            # A bare message per line: one interaction each.
            items.append({"messages": [obj]})
        else:
            raise InputError(f"item {i} is neither an interaction with 'messages' nor a message")
    return items


def json_lines(text: str, source: str) -> list[tuple[int, Any]]:
    """The JSON value of every non-blank line of a JSONL text, with its line number.

    Raises
    ------
    InputError
        Naming the file's real line (counted from 1) and the column within it.
    """
    out: list[tuple[int, Any]] = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append((line_no, orjson.loads(line)))
        except orjson.JSONDecodeError as exc:
            raise InputError(f"{source} line {line_no}, column {exc.colno}: not JSON ({exc.msg})") from None
    return out


def _read_file(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from None


@app.command()
def observe(
    user: str,
    source: str = typer.Argument("-", help="JSON/JSONL file of interactions or messages; '-' for stdin."),
    store: str = StoreOpt,
    as_json: bool = JsonOpt,
    create: bool = CreateOpt,
) -> None:
    """Record interactions (JSON list, JSONL, or messages) for USER.

    Each item is {"messages": [{"role", "content"}...], "at"?, "session_id"?, "metadata"?}
    or a bare message {"role", "content"} (one interaction each).
    """
    with errors():
        items = _read_interactions(source)
        tree = open_tree(store, must_exist=False, create_dirs=create)
        try:
            with progress_bar(len(items), "observing") as update:
                reports = tree.observe_many(user, items, batch_size=_BATCH, progress=update)
        finally:
            tree.close()
        rows = [{"observation_id": r.observation_id, "duplicate": r.duplicate, "leaves": len(r.decisions),
                 "attached": r.attached, "conflicts": r.conflicts, "orphans": r.orphans} for r in reports]
        if as_json:
            print_json(rows)
            return
        t = Table("observation", "dup", "leaves", "attached", "conflicts", "orphans")
        for r in rows:
            t.add_row(r["observation_id"], "yes" if r["duplicate"] else "", *(str(r[k]) for k in
                      ("leaves", "attached", "conflicts", "orphans")))
        console.print(t)


@app.command()
def show(user: str, store: str = StoreOpt) -> None:
    """Print USER's tree with confidences, counts and dates."""
    with errors():
        tree = open_tree(store)
        try:
            # markup=False: the tree text is full of [type conf] brackets rich would eat.
            console.print(tree.render(user), highlight=False, markup=False, soft_wrap=True)
        finally:
            tree.close()


@app.command()
def explain(user: str, node_id: str, store: str = StoreOpt, as_json: bool = JsonOpt) -> None:
    """Show why NODE_ID is believed: support path, evidence, conflicts and observations."""
    with errors():
        tree = open_tree(store)
        try:
            ex = tree.explain(user, node_id)
        finally:
            tree.close()
        if as_json:
            import dataclasses

            print_json(dataclasses.asdict(ex))
        else:
            console.print(ex.render(), highlight=False, markup=False, soft_wrap=True)


@app.command()
def search(
    user: str,
    query: str,
    k: int = typer.Option(10, "-k", min=1, help="How many hits."),
    level: str | None = typer.Option(None, help="leaf, mid or root."),
    store: str = StoreOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Plain similarity search over USER's nodes."""
    with errors():
        tree = open_tree(store)
        try:
            hits = tree.search(user, query, k=k, level=level)
        finally:
            tree.close()
        if as_json:
            print_json([{"node_id": h.node_id, "level": h.level.value, "schema_type": h.schema_type,
                         "content": h.content, "score": h.score, "confidence": h.confidence,
                         "archived": h.archived} for h in hits])
            return
        t = Table("score", "level", "type", "conf", "content")
        for h in hits:
            level = f"{h.level.value} (archived)" if h.archived else h.level.value
            t.add_row(f"{h.score:.3f}", level, h.schema_type, f"{h.confidence:.2f}", escape(h.content))
        console.print(t)


@app.command()
def stats(user: str, store: str = StoreOpt, as_json: bool = JsonOpt) -> None:
    """Counts of USER's nodes, edges, orphans and observations."""
    with errors():
        tree = open_tree(store)
        try:
            data = tree.stats(user)
        finally:
            tree.close()
        if as_json:
            print_json(data)
            return
        t = Table("what", "count")
        for key, value in data.items():
            t.add_row(key, str(value))
        console.print(t)


@app.command()
def users(store: str = StoreOpt, as_json: bool = JsonOpt) -> None:
    """List the users in the store."""
    with errors():
        tree = open_tree(store)
        try:
            ids = tree.users()
        finally:
            tree.close()
        if as_json:
            print_json(ids)
        else:
            for uid in ids:
                console.print(uid, highlight=False, markup=False)


@app.command()
def export(
    user: str,
    out: Path | None = typer.Option(None, "--out", "-o", help="Write to this file instead of stdout."),
    store: str = StoreOpt,
) -> None:
    """Export everything stored about USER as JSON."""
    with errors():
        tree = open_tree(store)
        try:
            data = tree.export(user)
        finally:
            tree.close()
        blob = orjson.dumps(data, option=orjson.OPT_INDENT_2)
        if out is None:
            sys.stdout.write(blob.decode() + "\n")
        else:
            out.write_bytes(blob)
            console.print(f"wrote {out} ({len(blob):,} bytes)")


@app.command()
def forget(
    user: str,
    node_id: str,
    cascade: bool = typer.Option(False, help="Also remove the node's whole support subtree."),
    store: str = StoreOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Remove a node and whatever was derived only from it."""
    with errors():
        tree = open_tree(store)
        try:
            rep = tree.forget(user, node_id, cascade=cascade)
        finally:
            tree.close()
        if as_json:
            print_json({"removed": rep.removed, "changed": rep.changed})
        else:
            console.print(f"removed {len(rep.removed)} node(s): {', '.join(rep.removed)}")


@app.command("delete-user")
def delete_user(
    user: str,
    yes: bool = typer.Option(False, "--yes", help="Confirm the deletion."),
    store: str = StoreOpt,
) -> None:
    """Delete every row stored for USER."""
    if not yes:
        err_console.print("error: deleting a user needs --yes")
        raise typer.Exit(2)
    with errors():
        tree = open_tree(store)
        try:
            tree.delete_user(user)
        finally:
            tree.close()
        console.print(f"deleted {user}", markup=False)


@app.command()
def rebuild(user: str, store: str = StoreOpt, as_json: bool = JsonOpt) -> None:
    """Replay USER's log into a fresh tree and store it."""
    with errors():
        tree = open_tree(store)
        try:
            rep = tree.rebuild(user)
        finally:
            tree.close()
        data = {"events": rep.events, "nodes": rep.nodes, "edges": rep.edges, "equal": rep.equal}
        if as_json:
            print_json(data)
        else:
            console.print(json.dumps(data))


# -- import: OpenAI-style chat exports ---------------------------------------------------

_TIME_FIELDS = ("timestamp", "created_at", "create_time", "time", "at")
_ID_FIELDS = ("conversation_id", "id", "session_id")


def _message_text(content: Any) -> str:
    """Text of an OpenAI message ``content``: a string, or a list of parts with ``text``."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        if isinstance(content.get("parts"), list):  # ChatGPT's {"content_type", "parts"}
            return "\\n".join(p for p in content["parts"] if isinstance(p, str))
        return str(content.get("text") or "")
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                out.append(part["text"])
        return "\\n".join(out)
    return ""


def _timestamp(obj: Any) -> datetime | str | None:
    """A message or conversation time: ISO text, or epoch seconds (or milliseconds)."""
    if not isinstance(obj, dict):
        return None
    for name in _TIME_FIELDS:
        v = obj.get(name)
        if isinstance(v, bool) or v is None or v == "":
            continue
        if isinstance(v, (int, float)):
            secs = v / 1000.0 if v > 1e11 else float(v)  # JavaScript exports use milliseconds
            return datetime.fromtimestamp(secs, tz=UTC)
        if isinstance(v, str):
            return v
    return None


def chat_export_interactions(text: str, *, source: str = "input") -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Interactions for ``observe_many`` from an OpenAI-style chat export.

    The export is JSONL with one conversation per line, ``{"messages": [{"role",
    "content", "timestamp"?}...], "id"?, "title"?, "create_time"?}`` (a JSON list of such
    conversations works too). Each user message opens an interaction; the assistant and
    tool messages that follow it join it; system messages are skipped (they describe
    the assistant, not the user). Observation ids derive from the conversation and the
    turn, so importing the same file twice stores nothing new.

    Parameters
    ----------
    text : str
        The file contents.
    source : str
        Name used in error messages.

    Returns
    -------
    (list of dict, dict)
        The interactions and counts (``conversations``, ``interactions``, ``skipped``).

    Raises
    ------
    InputError
        For a line that is not JSON or a conversation without a ``messages`` list.
    """
    stripped = text.strip()
    if not stripped:
        raise InputError(f"{source} is empty")
    conversations: list[tuple[int, Any]]
    try:
        if stripped.startswith("["):
            conversations = list(enumerate(orjson.loads(stripped), start=1))
        else:
            conversations = json_lines(text, source)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"{source} is not JSONL of conversations: {exc}") from None
    items: list[dict[str, Any]] = []
    skipped = 0
    for line_no, conv in conversations:
        if not isinstance(conv, dict) or not isinstance(conv.get("messages"), list):
            raise InputError(f"{source} line {line_no}: expected an object with a 'messages' list")
        conv_id = next((str(conv[k]) for k in _ID_FIELDS if conv.get(k) not in (None, "")), None)
        conv_key = conv_id or hashlib.sha256(orjson.dumps(conv, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]
        session = (conv_id or f"import-{conv_key}")[:120]
        conv_at = _timestamp(conv)
        groups: list[list[dict[str, Any]]] = []
        for m in conv["messages"]:
            if not isinstance(m, dict):
                raise InputError(f"{source} line {line_no}: a message is not an object")
            role = str(m.get("role") or (m.get("author") or {}).get("role") or "")
            body = _message_text(m.get("content")).strip()
            if role not in ("user", "assistant", "tool") or not body:
                continue
            msg = {"role": role, "content": body, "_at": _timestamp(m)}
            if role == "user" and (not groups or any(x["role"] == "user" for x in groups[-1])):
                groups.append([msg])
            elif groups:
                groups[-1].append(msg)
            else:
                groups.append([msg])  # a greeting before the first user turn joins that turn
        for turn, group in enumerate(groups):
            if not any(x["role"] == "user" for x in group):
                skipped += 1
                continue
            at = next((x["_at"] for x in group if x["role"] == "user" and x["_at"] is not None), None)
            at = at or next((x["_at"] for x in group if x["_at"] is not None), None) or conv_at
            messages = [{"role": x["role"], "content": x["content"]} for x in group]
            digest = hashlib.sha256(orjson.dumps([conv_key, turn, messages])).hexdigest()[:24]
            item: dict[str, Any] = {
                "messages": messages,
                "session_id": session,
                "observation_id": f"imp_{digest}",
                "metadata": {"source": "import", "conversation": conv_key, "turn": turn,
                             **({"title": str(conv["title"])[:200]} if conv.get("title") else {})},
            }
            if at is not None:
                item["at"] = at
            items.append(item)
    return items, {"conversations": len(conversations), "interactions": len(items), "skipped": skipped}


@app.command("import")
def import_(
    user: str,
    source: str = typer.Argument(..., help="Chat export: JSONL, one conversation per line; '-' for stdin."),
    store: str = StoreOpt,
    as_json: bool = JsonOpt,
    create: bool = CreateOpt,
) -> None:
    """Import an OpenAI-style chat export (JSONL of {"messages": [...]}) as USER's interactions."""
    with errors():
        text = sys.stdin.read() if source == "-" else _read_file(source)
        items, counts = chat_export_interactions(text, source=source)
        if not items:
            raise InputError(f"{source} has no user messages to import")
        tree = open_tree(store, must_exist=False, create_dirs=create)
        try:
            with progress_bar(len(items), f"importing {counts['conversations']} conversations") as update:
                reports = tree.observe_many(user, items, batch_size=_BATCH, progress=update)
        finally:
            tree.close()
        data = {
            **counts,
            "new": sum(not r.duplicate for r in reports),
            "duplicates": sum(r.duplicate for r in reports),
            "leaves": sum(len(r.decisions) for r in reports),
            "attached": sum(r.attached for r in reports),
            "conflicts": sum(r.conflicts for r in reports),
            "orphans": sum(r.orphans for r in reports),
        }
        if as_json:
            print_json(data)
            return
        t = Table("what", "count", title=f"imported into {escape(user)}")
        for key, value in data.items():
            t.add_row(key, str(value))
        console.print(t)


# -- profile, view, mcp -------------------------------------------------------------------


@app.command()
def profile(
    user: str,
    limit: int = typer.Option(12, "--limit", "-n", min=1, help="Most claims and patterns to show."),
    store: str = StoreOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Print USER's profile block: the top claims and patterns an agent keeps in every prompt."""
    from .view.profile import profile_block

    with errors():
        tree = open_tree(store)
        try:
            block = profile_block(tree, user, limit=limit)
        finally:
            tree.close()
        if as_json:
            print_json(block.to_dict())
            return
        if block.note:
            err_console.print(f"[dim]note: {escape(block.note)}[/]", highlight=False)
        if block.lines:
            t = Table("level", "type", "conf", "+/-", "claim", title=f"profile of {escape(user)}")
            for x in block.lines:
                t.add_row(x.level, x.schema_type, f"{x.confidence:.2f}", f"+{x.n_support}/-{x.n_conflict}",
                          escape(x.content))
            console.print(t)
        elif block.text:
            console.print(block.text, highlight=False, markup=False)


@app.command()
def view(
    user: str,
    out: Path | None = typer.Option(None, "--out", "-o", help="HTML file to write (default USER.html)."),
    open_browser: bool = typer.Option(False, "--open", help="Open the page in a web browser."),
    store: str = StoreOpt,
) -> None:
    """Write an interactive HTML page of USER's tree (self-contained: opens offline)."""
    from .view import tree_html

    with errors():
        tree = open_tree(store)
        try:
            page = tree_html(tree, user)
        finally:
            tree.close()
        path = out or Path(f"{user}.html")
        path.write_text(page, encoding="utf-8")
        console.print(f"wrote {path} ({len(page.encode()):,} bytes)", highlight=False)
        if open_browser:
            import webbrowser

            webbrowser.open(path.resolve().as_uri())


@app.command()
def mcp(
    user: str | None = typer.Option(None, "--user", "-u", help="Default user of tool calls without user_id."),
    lock_user: bool = typer.Option(False, "--lock-user", help="Refuse any user other than --user."),
    transport: str = typer.Option("stdio", "--transport", "-t", help="stdio or http (streamable HTTP)."),
    host: str = typer.Option("127.0.0.1", help="HTTP host."),
    port: int = typer.Option(8765, min=1, max=65535, help="HTTP port."),
    path: str = typer.Option("/mcp", help="HTTP endpoint path."),
    budget: int | None = typer.Option(None, "--budget", "-b", min=1, help="Default recall token budget."),
    store: str = StoreOpt,
    create: bool = CreateOpt,
) -> None:
    """Serve the memory to agents over MCP (tools: remember, recall, explain, profile, forget).

    A --store file that does not exist is created (in a folder that exists; --create also
    makes missing folders) and announced on stderr.
    """
    from .errors import ConfigError
    from .mcp_server import build_server, run_server

    with errors():
        if transport not in ("stdio", "http"):
            raise ConfigError(f"unknown transport {transport!r}; use stdio or http")
        if lock_user and not user:
            raise ConfigError("--lock-user needs --user")
        store_path = store_file(store)
        is_new = store_path is not None and not store_path.expanduser().exists()
        tree = open_tree(store, must_exist=False, create_dirs=create)
        if is_new:
            # A server runs unattended: say that it starts on an empty memory.
            err_console.print(f"personatree: created a new, empty store at {store_path}", highlight=False,
                              markup=False)
        try:
            build_server(tree, default_user=user, lock_user=lock_user)  # fail early on a missing SDK
            if transport == "http":
                err_console.print(f"personatree MCP on http://{host}:{port}{path} (store {store})", highlight=False)
            run_server(tree, transport=transport, host=host, port=port, path=path,  # type: ignore[arg-type]
                       default_user=user, lock_user=lock_user, default_budget=budget)
        finally:
            tree.close()


COMPONENTS = ("personatree.consolidate.command", "personatree.retrieval.command", "personatree.bench.command",
              "personatree.store.command")


def _register_components(modules: tuple[str, ...] = COMPONENTS) -> list[str]:
    """Let each component add its commands; return the modules that were registered.

    A component missing from a build (its ``command`` module or its package absent)
    is skipped. Any other error, including a ``ModuleNotFoundError`` for something the
    component itself imports, is a real bug and propagates.
    """
    import importlib

    done: list[str] = []
    for module in modules:
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name is not None and (module == exc.name or module.startswith(exc.name + ".")):
                continue
            raise
        mod.register(app)
        done.append(module)
    return done


_register_components()


def main() -> None:
    """Entry point of the ``personatree`` script."""
    app()
