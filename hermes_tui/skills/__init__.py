"""Skills: ``manager`` is the library's API (find, rank, create, refine, archive) over ``library``
(index in step, lock, writes) and ``versions`` (history, proposals); ``files`` reads safely, ``index``
is its SQLite + FTS5 cache and ranker (``index_schema``: its tables and rows), ``schema``/``layout``
read SKILL.md files and folders, ``guard`` screens them, ``patch``/``merge`` change them surgically,
``lifecycle``/``similar``/``importer``/``commands`` are the rest of their life and the ``skills`` subcommands."""
