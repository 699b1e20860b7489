"""The pieces of :class:`personatree.store.postgres.PostgresStore`, one concept a module.

* :mod:`.url` — PostgreSQL URLs: ``?schema=`` and password masking.
* :mod:`.text` — the NUL escape of text columns, applied to the codec's row tuples.
* :mod:`.adapt` — embeddings in binary (``vector`` or ``real[]``) through numpy.
* :mod:`.locks` — the advisory-lock key spaces.
* :mod:`.statements` — the row tables' SQL, generated from the codec's columns.
* :mod:`.schema` — shipped migrations, migrating, the embedding column type.
* :mod:`.connection` — the pool, transactions and error translation (the base class).
* :mod:`.reads`, :mod:`.writes` (commits, the journal, user locks), :mod:`.keyvalue`
  (metadata and caches), :mod:`.maintenance` (counts, checksums, integrity, vacuum):
  the store's methods, as mixins of the base class.

Importing this package needs psycopg 3 and psycopg_pool (the ``postgres`` extra);
:mod:`personatree.store` imports it only on first use of the PostgreSQL store.
"""
