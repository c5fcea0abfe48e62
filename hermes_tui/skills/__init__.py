"""Skills: ``manager`` is the library's API (find, rank, create, refine, archive), ``index`` its
SQLite + FTS5 cache and ranker, ``schema``/``layout`` read SKILL.md files and folders, ``guard``
screens them, ``patch``/``merge`` change them surgically, ``lifecycle``/``similar``/``importer``/
``commands`` are the rest of their life and the ``skills`` subcommands."""
