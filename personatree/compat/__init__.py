"""Other memory libraries' interfaces over a PersonaTree store.

:mod:`personatree.compat.mem0`: Mem0's ``Memory`` (``add``, ``search``, ``get_all``,
``get``, ``update``, ``delete``, ``delete_all``, ``history``, ``reset``,
``from_config``), so code written for Mem0 switches with one import line.
"""
