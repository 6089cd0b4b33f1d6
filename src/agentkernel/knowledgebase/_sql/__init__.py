"""What the SQL backends share: a base class, the read-only statement guard, rows as records.

``backend`` is ``SQLBackend``, the base of ``SQLManager`` and ``StarburstManager`` (the
declaration, the limits, the guard in front of every statement, the row cap); ``guard``
decides whether a statement is exactly one read-only statement (parsing it with ``sqlglot``
in the backend's dialect) and appends the fallback LIMIT; ``names`` resolves identifiers the
way the server does; ``functions`` holds the per-dialect allow-lists of built-ins without
side effects; ``connections`` runs a statement on a pooled connection under the limits;
``records`` turns result rows into knowledge records. Private: the two
managers are the public faces.
"""
