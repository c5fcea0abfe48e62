"""Memory: ``store`` (sessions and messages in SQLite, its API), ``records`` and ``forget`` (its
rows, and ``forget_session``: what forgetting deletes, from every surface), ``resume`` (what a
resumed session sends and shows: undone messages left out), ``usage`` (tokens and cost per session
and model), ``exports`` (files written from a session, removed when it is forgotten), ``schema``
(the named steps and the FTS5 indexes), ``pool`` (connections), ``query``/``search``/``text``
(parsing, ranking, snippets), ``maintenance`` and ``doctor`` (upkeep, repair), ``facts`` (the
curated memory), ``framing`` (recalled text marked as data)."""
