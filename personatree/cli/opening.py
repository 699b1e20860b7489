"""Opening the store a ``--store`` value names, the way every command does.

Commands that only read refuse a store file that does not exist (instead of
creating an empty one); the commands that write create it, in a folder that exists:
a store path whose folder is missing is refused as a likely typo unless
``--create`` asks for the folders to be made.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import StoreError

if TYPE_CHECKING:
    from ..api import PersonaTree
    from ..ports import Store

__all__ = ["open_tree", "store_file"]


def store_file(store: str) -> Path | None:
    """The SQLite file a ``--store`` value names, or ``None`` for non-file stores."""
    if "://" not in store:
        return Path(store)
    scheme, _, rest = store.partition("://")
    if scheme.lower() == "sqlite" and rest.startswith("/") and len(rest) > 1:
        return Path(rest[1:])
    return None


def open_tree(store: str, *, must_exist: bool = True, create_dirs: bool = False) -> PersonaTree:
    """Open a PersonaTree on ``store``; the model loads only if the command embeds.

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
    from ..api import PersonaTree
    from ..config import PersonaTreeConfig
    from ..store import open_store

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


def _recorded_embedder(st: Store) -> str | None:
    """The embedder spec a store records (see ``PersonaTree.open``), if any."""
    from ..api import recorded_embedder
    from ..embedders import spec_of

    meta = recorded_embedder(st)
    return None if meta is None else spec_of(meta["name"])
