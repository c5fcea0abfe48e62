"""Memory: ``store`` (sessions and messages in SQLite, its API), ``records`` and ``forget`` (its
rows and what forgetting deletes), ``schema`` (the named steps and the FTS5 indexes), ``pool``
(connections), ``query``/``search``/``text`` (parsing, ranking, snippets), ``maintenance`` and
``doctor`` (upkeep, repair), ``facts`` (the curated memory), ``framing`` (recalled text marked as data)."""
