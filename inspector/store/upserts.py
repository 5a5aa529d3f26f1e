"""Insert-or-replace as one statement, per dialect: text built once per table.

Text, not the dialects' insert constructs: SQLAlchemy compiles those again on every
execution (they have no cache key), a millisecond of CPU per call on the hot paths
(a ramdisk's data, an introspection's Ironic snapshot).
"""

from sqlalchemy import Table, TextClause, bindparam, text

#: What each dialect appends to the INSERT to replace the row it collides with.
_CONFLICT = {
    "postgresql": " ON CONFLICT ({keys}) DO UPDATE SET {excluded}",
    "sqlite": " ON CONFLICT ({keys}) DO UPDATE SET {excluded}",
    "mysql": " ON DUPLICATE KEY UPDATE {values}",
    "mariadb": " ON DUPLICATE KEY UPDATE {values}",
}


def statements(table: Table, keys: tuple[str, ...], values: tuple[str, ...]) -> dict:
    """{dialect: the upsert of `table`}: inserts keys and values (parameters named after
    the columns) and on a collision of `keys` replaces `values`."""
    columns = (*keys, *values)
    # Names from our models, never from input.
    head = f"INSERT INTO {table.name} ({', '.join(columns)}) "
    head += f"VALUES ({', '.join(':' + name for name in columns)})"
    parts = {
        "keys": ", ".join(keys),
        "excluded": ", ".join(f"{name} = excluded.{name}" for name in values),
        "values": ", ".join(f"{name} = VALUES({name})" for name in values),
    }
    return {
        dialect: _typed(head + conflict.format(**parts), table, columns)
        for dialect, conflict in _CONFLICT.items()
    }


def _typed(sql: str, table: Table, columns: tuple[str, ...]) -> TextClause:
    return text(sql).bindparams(*(bindparam(name, type_=table.c[name].type) for name in columns))
