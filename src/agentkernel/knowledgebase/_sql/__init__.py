"""What the SQL backends share: the read-only statement guard and the rows-to-records mapping.

``guard`` decides whether a statement is exactly one read-only statement (parsing it with
``sqlglot`` in the backend's dialect) and appends the fallback LIMIT; ``names`` resolves
identifiers the way the server does; ``functions`` holds the per-dialect allow-lists of
built-ins without side effects; ``records`` turns result rows into knowledge records.
Private: ``SQLManager`` and ``StarburstManager`` are the public faces.
"""
