"""The memory store's schema: its named steps (``SCHEMA``), the FTS5 indexes and their triggers,
and the reindex a step that replaces an index asks for.

What the index sees of a row is in plain columns Hermes fills as it writes (``index_column``,
``INDEX_COLUMN``), so the file stays an ordinary SQLite file (step 11). Steps are append only:
a released step is never edited, even where a later one replaces what it made. One module
because the steps are a history, read top to bottom: each one's SQL is what some file ran.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING

from hermes_tui.db import Migrations
from hermes_tui.memory.maintenance import FTS_TABLES
from hermes_tui.memory.text import INDEX_TAIL, SNIPPET_SCAN, index_text
from hermes_tui.progress import Progress

if TYPE_CHECKING:  # sqlite-utils (and click, pluggy) load only for a schema upgrade
    from sqlite_utils import Database


_FTS_SCHEMA = (
    # What the index sees of a message: its text, and the tool names it mentions (a tool
    # result's name, the functions an assistant calls) so "read_file" finds calls and results.
    # HIT_START/HIT_END become spaces (separators either way, so tokens are unchanged): a
    # snippet can then never contain them except as the markers snippet() adds.
    """
    CREATE VIEW messages_fts_source AS
    SELECT id,
           replace(replace(content, char(2), ' '), char(3), ' ') AS content,
           trim(coalesce(name, '') || ' ' || coalesce(
               (SELECT group_concat(json_extract(value, '$.function.name'), ' ')
                  FROM json_each(tool_calls) WHERE type = 'object'), '')) AS tool_names
      FROM messages
    """,
    """
    CREATE VIRTUAL TABLE messages_fts USING fts5(
        content, tool_names,
        content = 'messages_fts_source', content_rowid = 'id',
        tokenize = 'porter unicode61'
    )
    """,
    # External content: FTS5 stores only the index, and must be told the exact old values
    # to remove, hence the BEFORE triggers that read them while the row is still there.
    """
    CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts (rowid, content, tool_names)
        SELECT id, content, tool_names FROM messages_fts_source WHERE id = new.id;
    END
    """,
    """
    CREATE TRIGGER messages_fts_delete BEFORE DELETE ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, content, tool_names)
        SELECT 'delete', id, content, tool_names FROM messages_fts_source WHERE id = old.id;
    END
    """,
    """
    CREATE TRIGGER messages_fts_update_old BEFORE UPDATE OF content, name, tool_calls ON messages
    BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, content, tool_names)
        SELECT 'delete', id, content, tool_names FROM messages_fts_source WHERE id = old.id;
    END
    """,
    """
    CREATE TRIGGER messages_fts_update_new AFTER UPDATE OF content, name, tool_calls ON messages
    BEGIN
        INSERT INTO messages_fts (rowid, content, tool_names)
        SELECT id, content, tool_names FROM messages_fts_source WHERE id = new.id;
    END
    """,
)


def _v1_core(db: Database) -> None:
    """Sessions, messages, and the FTS5 index that triggers keep in step with ``messages``."""
    db.table("sessions").create(
        {
            "id": int,
            "source": str,
            "title": str,
            "summary": str,
            "started": float,
            "last_activity": float,
        },
        pk="id",
        not_null={"source", "started", "last_activity"},
    )
    db.table("sessions").create_index(["last_activity"])
    db.table("messages").create(
        {
            "id": int,
            "session_id": int,
            "role": str,
            "content": str,
            "tool_calls": str,
            "tool_call_id": str,
            "name": str,
            "created": float,
        },
        pk="id",
        not_null={"session_id", "role", "created"},
        foreign_keys=[("session_id", "sessions", "id")],
    )
    db.table("messages").create_index(["session_id", "id"])
    for sql in _FTS_SCHEMA:
        db.execute(sql)


_V2_INDEX = (
    # Replaces v1's index: what it sees of a message now comes from text.index_text (escapes
    # and control characters removed, CJK runs as character pairs, huge texts by head and
    # tail), a Python function every store connection registers. Triggers as in v1.
    "DROP TRIGGER messages_fts_insert",
    "DROP TRIGGER messages_fts_delete",
    "DROP TRIGGER messages_fts_update_old",
    "DROP TRIGGER messages_fts_update_new",
    "DROP TABLE messages_fts",
    "DROP VIEW messages_fts_source",
    """
    CREATE VIEW messages_fts_source AS
    SELECT id,
           hermes_index_text(content) AS content,
           trim(coalesce(name, '') || ' ' || coalesce(
               (SELECT group_concat(json_extract(value, '$.function.name'), ' ')
                  FROM json_each(tool_calls) WHERE type = 'object'), '')) AS tool_names
      FROM messages
    """,
    *_FTS_SCHEMA[1:],
    # (the stored messages are copied into the new index after the last step: see REINDEXING)
    # Session titles and summaries, searchable the same way (search_sessions).
    """
    CREATE VIEW sessions_fts_source AS
    SELECT id, hermes_index_text(title) AS title, hermes_index_text(summary) AS summary
      FROM sessions
    """,
    """
    CREATE VIRTUAL TABLE sessions_fts USING fts5(
        title, summary,
        content = 'sessions_fts_source', content_rowid = 'id',
        tokenize = 'porter unicode61'
    )
    """,
    """
    CREATE TRIGGER sessions_fts_insert AFTER INSERT ON sessions BEGIN
        INSERT INTO sessions_fts (rowid, title, summary)
        SELECT id, title, summary FROM sessions_fts_source WHERE id = new.id;
    END
    """,
    """
    CREATE TRIGGER sessions_fts_delete BEFORE DELETE ON sessions BEGIN
        INSERT INTO sessions_fts (sessions_fts, rowid, title, summary)
        SELECT 'delete', id, title, summary FROM sessions_fts_source WHERE id = old.id;
    END
    """,
    """
    CREATE TRIGGER sessions_fts_update_old BEFORE UPDATE OF title, summary ON sessions BEGIN
        INSERT INTO sessions_fts (sessions_fts, rowid, title, summary)
        SELECT 'delete', id, title, summary FROM sessions_fts_source WHERE id = old.id;
    END
    """,
    """
    CREATE TRIGGER sessions_fts_update_new AFTER UPDATE OF title, summary ON sessions BEGIN
        INSERT INTO sessions_fts (rowid, title, summary)
        SELECT id, title, summary FROM sessions_fts_source WHERE id = new.id;
    END
    """,
    "INSERT INTO sessions_fts (rowid, title, summary)"
    " SELECT id, title, summary FROM sessions_fts_source",
)


def _v2_clean_cjk_index(db: Database) -> None:
    """Index clean text, CJK by character pairs, huge messages by head and tail; summaries."""
    for sql in _V2_INDEX:
        db.execute(sql)


_V3_LONG = (
    # A search hit's metadata and snippet come from here for messages longer than the snippet
    # scan, so a hit on a 10 MB log never loads 10 MB: its row's later columns (created, name)
    # sit at the end of a chain of overflow pages, and substr() loads the whole value.
    """
    CREATE TABLE long_messages (
        id INTEGER PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
        session_id INTEGER NOT NULL,
        role TEXT NOT NULL,
        created FLOAT NOT NULL,
        tool_names TEXT,
        head TEXT NOT NULL,
        tail TEXT NOT NULL
    )
    """,
    f"""
    CREATE TRIGGER long_messages_insert AFTER INSERT ON messages
    WHEN length(new.content) > {SNIPPET_SCAN} BEGIN
        INSERT INTO long_messages (id, session_id, role, created, tool_names, head, tail)
        SELECT new.id, new.session_id, new.role, new.created, tool_names,
               substr(new.content, 1, {SNIPPET_SCAN}), substr(new.content, -{INDEX_TAIL})
          FROM messages_fts_source WHERE id = new.id;
    END
    """,
    f"""
    CREATE TRIGGER long_messages_update AFTER UPDATE OF content, name, tool_calls ON messages
    BEGIN
        DELETE FROM long_messages WHERE id = new.id;
        INSERT INTO long_messages (id, session_id, role, created, tool_names, head, tail)
        SELECT new.id, new.session_id, new.role, new.created, tool_names,
               substr(new.content, 1, {SNIPPET_SCAN}), substr(new.content, -{INDEX_TAIL})
          FROM messages_fts_source WHERE id = new.id AND length(new.content) > {SNIPPET_SCAN};
    END
    """,
    f"""
    INSERT INTO long_messages (id, session_id, role, created, tool_names, head, tail)
    SELECT m.id, m.session_id, m.role, m.created, s.tool_names,
           substr(m.content, 1, {SNIPPET_SCAN}), substr(m.content, -{INDEX_TAIL})
      FROM messages m JOIN messages_fts_source s ON s.id = m.id
     WHERE length(m.content) > {SNIPPET_SCAN}
    """,
)


def _v3_long_messages(db: Database) -> None:
    """Head, tail and metadata of long messages, for cheap snippets (see ``_V3_LONG``)."""
    for sql in _V3_LONG:
        db.execute(sql)


def _v4_background_merges(db: Database) -> None:
    """FTS5 merges move from inside appends to the upkeep thread (maintenance.py); a level
    merges at once only past 64 segments (the default, 16, made some appends take 30 ms)."""
    for table in FTS_TABLES:
        db.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('automerge', 0)")
        db.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('crisismerge', 64)")


def _v5_compactions(db: Database) -> None:
    """Compaction summaries: what is *sent* in place of a session's older messages.

    The messages themselves stay untouched in ``messages``; a row here says that the messages
    up to ``through_id`` are replaced by ``summary`` when the session is sent to the model,
    and that tool results up to ``trim_through_id`` are sent trimmed.
    """
    db.table("compactions").create(
        {"id": int, "session_id": int, "through_id": int, "trim_through_id": int, "summary": str, "created": float},
        pk="id",
        not_null={"session_id", "through_id", "summary", "created"},
        foreign_keys=[("session_id", "sessions", "id")],
    )
    db.table("compactions").create_index(["session_id", "id"])


def _v6_frequent_top(db: Database) -> None:
    """bm25's best messages for words too frequent to rank while searching (search.py)."""
    db.execute(
        """
        CREATE TABLE frequent_top (
            term TEXT NOT NULL,
            rowid_ INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
            score FLOAT NOT NULL,
            PRIMARY KEY (term, rowid_)
        ) WITHOUT ROWID
        """
    )
    db.execute("CREATE INDEX frequent_top_rowid ON frequent_top (rowid_)")
    db.execute("CREATE TABLE frequent_terms (term TEXT PRIMARY KEY, upto INTEGER NOT NULL)")


def tool_args_sql(calls: str) -> str:
    """The argument values of the tool calls in the JSON ``calls`` (a column, or a parameter)."""
    return f"""
    (SELECT group_concat(CASE WHEN json_valid(args) THEN (SELECT group_concat(a.value, ' ') FROM json_each(args) a)
                              ELSE args END, ' ')
       FROM (SELECT json_extract(value, '$.function.arguments') AS args
               FROM json_each({calls}) WHERE type = 'object'))"""


_TOOL_ARGS = tool_args_sql("tool_calls")

_V7_TOOL_ARGS = (
    # What the agent did becomes searchable: a third column holds the argument values of the
    # tools an assistant message calls (the commands run, the paths touched), so "wc" finds
    # eight ``wc -l *.py`` runs. The ``tool:`` filter still reads only tool_names.
    "DROP TRIGGER messages_fts_insert",
    "DROP TRIGGER messages_fts_delete",
    "DROP TRIGGER messages_fts_update_old",
    "DROP TRIGGER messages_fts_update_new",
    "DROP TABLE messages_fts",
    "DROP VIEW messages_fts_source",
    f"""
    CREATE VIEW messages_fts_source AS
    SELECT id,
           hermes_index_text(content) AS content,
           trim(coalesce(name, '') || ' ' || coalesce(
               (SELECT group_concat(json_extract(value, '$.function.name'), ' ')
                  FROM json_each(tool_calls) WHERE type = 'object'), '')) AS tool_names,
           hermes_index_text({_TOOL_ARGS}) AS tool_args
      FROM messages
    """,
    """
    CREATE VIRTUAL TABLE messages_fts USING fts5(
        content, tool_names, tool_args,
        content = 'messages_fts_source', content_rowid = 'id',
        tokenize = 'porter unicode61'
    )
    """,
    """
    CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts (rowid, content, tool_names, tool_args)
        SELECT id, content, tool_names, tool_args FROM messages_fts_source WHERE id = new.id;
    END
    """,
    """
    CREATE TRIGGER messages_fts_delete BEFORE DELETE ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, content, tool_names, tool_args)
        SELECT 'delete', id, content, tool_names, tool_args FROM messages_fts_source WHERE id = old.id;
    END
    """,
    """
    CREATE TRIGGER messages_fts_update_old BEFORE UPDATE OF content, name, tool_calls ON messages
    BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, content, tool_names, tool_args)
        SELECT 'delete', id, content, tool_names, tool_args FROM messages_fts_source WHERE id = old.id;
    END
    """,
    """
    CREATE TRIGGER messages_fts_update_new AFTER UPDATE OF content, name, tool_calls ON messages
    BEGIN
        INSERT INTO messages_fts (rowid, content, tool_names, tool_args)
        SELECT id, content, tool_names, tool_args FROM messages_fts_source WHERE id = new.id;
    END
    """,
    # (the stored messages are copied into the new index after the last step: see REINDEXING)
    # the new table's merge settings, as v4 set them for the old one
    "INSERT INTO messages_fts (messages_fts, rank) VALUES ('automerge', 0)",
    "INSERT INTO messages_fts (messages_fts, rank) VALUES ('crisismerge', 64)",
)


def _v7_tool_arguments(db: Database) -> None:
    """Index the arguments of tool calls beside their names (see ``_V7_TOOL_ARGS``)."""
    for sql in _V7_TOOL_ARGS:
        db.execute(sql)


def _v8_pending_summaries(db: Database) -> None:
    """Sessions whose summary is still to be written (learning/pending.py); ``told``: the user
    was told once that it is pending."""
    db.table("pending_summaries").create(
        {"session_id": int, "since": float, "told": int},
        pk="session_id",
        not_null={"since", "told"},
        foreign_keys=[("session_id", "sessions", "id")],
    )


def _v9_session_workspace(db: Database) -> None:
    """The workspace folder each session ran in, so ``-c`` and the TUI's start can find the last
    session of this folder. Sessions stored before this step have none (NULL)."""
    db.table("sessions").add_column("workspace", str)
    db.table("sessions").create_index(["workspace", "last_activity"])


def _v10_turn_outcomes(db: Database) -> None:
    """How a turn ended when it did not end with an answer ("cancelled", "error"), keyed by the
    user's message: an export or a resumed view can say so. Rows go with their message."""
    db.table("turn_outcomes").create(
        {"message_id": int, "outcome": str},
        pk="message_id",
        not_null={"outcome"},
        foreign_keys=[("message_id", "messages", "id")],
    )


def fts_triggers(table: str, fts: str, columns: Sequence[str], watched: Sequence[str]) -> list[str]:
    """The four triggers that keep the external-content FTS5 table ``fts`` in step with ``table``
    through its source view ``{fts}_source``. FTS5 must be told the exact old values to remove,
    hence the BEFORE triggers, which read them while the row is still there."""
    cols, source, of = ", ".join(columns), f"{fts}_source", ", ".join(watched)
    add = f"INSERT INTO {fts} (rowid, {cols}) SELECT id, {cols} FROM {source} WHERE id = new.id;"
    remove = f"INSERT INTO {fts} ({fts}, rowid, {cols}) SELECT 'delete', id, {cols} FROM {source} WHERE id = old.id;"
    return [
        f"CREATE TRIGGER {fts}_insert AFTER INSERT ON {table} BEGIN {add} END",
        f"CREATE TRIGGER {fts}_delete BEFORE DELETE ON {table} BEGIN {remove} END",
        f"CREATE TRIGGER {fts}_update_old BEFORE UPDATE OF {of} ON {table} BEGIN {remove} END",
        f"CREATE TRIGGER {fts}_update_new AFTER UPDATE OF {of} ON {table} BEGIN {add} END",
    ]


MESSAGE_INDEX_COLUMNS = ("content", "tool_names", "tool_args")
MESSAGE_WATCHED = ("content", "name", "tool_calls", "index_content", "index_tool_args")
SESSION_INDEX_COLUMNS = ("title", "summary")
SESSION_WATCHED = ("title", "summary", "index_title", "index_summary")
INDEX_COLUMN = "hermes_index_column"
"""The SQL function Hermes' own writes fill the index columns with (never used by the schema)."""


def index_column(text: str | None) -> str | None:
    """What an index column holds: what the index sees of ``text`` when that is not ``text``
    itself (escapes, CJK, huge texts), else NULL, so most rows store nothing twice."""
    indexed = index_text(text)
    return None if indexed == text else indexed


_V11_PLAIN_INDEX = (
    # The index no longer calls a Python function from the schema: what it sees of a row is in
    # plain columns, filled by Hermes when it writes (``index_column``; NULL: the text as it is).
    # So the file stays an ordinary SQLite file: the sqlite3 shell, Datasette or a backup script
    # can read it, search it with MATCH and snippet(), and insert a message (indexed as it is).
    "DROP TRIGGER messages_fts_insert",
    "DROP TRIGGER messages_fts_delete",
    "DROP TRIGGER messages_fts_update_old",
    "DROP TRIGGER messages_fts_update_new",
    "DROP TABLE messages_fts",
    "DROP VIEW messages_fts_source",
    "DROP TRIGGER sessions_fts_insert",
    "DROP TRIGGER sessions_fts_delete",
    "DROP TRIGGER sessions_fts_update_old",
    "DROP TRIGGER sessions_fts_update_new",
    "DROP TABLE sessions_fts",
    "DROP VIEW sessions_fts_source",
    "ALTER TABLE messages ADD COLUMN index_content TEXT",
    "ALTER TABLE messages ADD COLUMN index_tool_args TEXT",
    "ALTER TABLE sessions ADD COLUMN index_title TEXT",
    "ALTER TABLE sessions ADD COLUMN index_summary TEXT",
    f"""
    CREATE VIEW messages_fts_source AS
    SELECT id,
           coalesce(index_content, content) AS content,
           trim(coalesce(name, '') || ' ' || coalesce(
               (SELECT group_concat(json_extract(value, '$.function.name'), ' ')
                  FROM json_each(tool_calls) WHERE type = 'object'), '')) AS tool_names,
           coalesce(index_tool_args, {_TOOL_ARGS}) AS tool_args
      FROM messages
    """,
    """
    CREATE VIRTUAL TABLE messages_fts USING fts5(
        content, tool_names, tool_args,
        content = 'messages_fts_source', content_rowid = 'id',
        tokenize = 'porter unicode61'
    )
    """,
    *fts_triggers("messages", "messages_fts", MESSAGE_INDEX_COLUMNS, MESSAGE_WATCHED),
    # (the stored messages are filled and copied into the new index after the last step: REINDEXING)
    "INSERT INTO messages_fts (messages_fts, rank) VALUES ('automerge', 0)",
    "INSERT INTO messages_fts (messages_fts, rank) VALUES ('crisismerge', 64)",
    # Sessions are few: filled and indexed here.
    f"UPDATE sessions SET index_title = {INDEX_COLUMN}(title), index_summary = {INDEX_COLUMN}(summary)",
    """
    CREATE VIEW sessions_fts_source AS
    SELECT id, coalesce(index_title, title) AS title, coalesce(index_summary, summary) AS summary
      FROM sessions
    """,
    """
    CREATE VIRTUAL TABLE sessions_fts USING fts5(
        title, summary,
        content = 'sessions_fts_source', content_rowid = 'id',
        tokenize = 'porter unicode61'
    )
    """,
    *fts_triggers("sessions", "sessions_fts", SESSION_INDEX_COLUMNS, SESSION_WATCHED),
    "INSERT INTO sessions_fts (rowid, title, summary) SELECT id, title, summary FROM sessions_fts_source",
)


def _v11_plain_index(db: Database) -> None:
    """What the index sees in plain columns instead of a function in the schema (see
    ``_V11_PLAIN_INDEX``): other SQLite clients can read, search and add to the file."""
    for sql in _V11_PLAIN_INDEX:
        db.execute(sql)


_V12_MESSAGE_STATUS = (
    # How a step ended, in a column of its message (``conversation.Status``), instead of a side
    # table and, for denials and cancellations, a guess from the result's text on every read.
    "ALTER TABLE messages ADD COLUMN status TEXT NOT NULL DEFAULT 'ok'",
    """UPDATE messages SET status = (SELECT CASE outcome WHEN 'error' THEN 'failed' ELSE outcome END
                                        FROM turn_outcomes WHERE message_id = messages.id)
        WHERE id IN (SELECT message_id FROM turn_outcomes)""",
    "DROP TABLE turn_outcomes",
    # Results stored before v10 said so only in their text (these are the texts of that time).
    """UPDATE messages SET status = 'denied'
        WHERE role = 'tool' AND status = 'ok' AND content LIKE 'The user denied this % call.%'""",
    """UPDATE messages SET status = 'cancelled'
        WHERE role = 'tool' AND status = 'ok' AND content LIKE 'Cancelled by the user before it ran.%'""",
)


def _v12_message_status(db: Database) -> None:
    """Each message's status in a column (see ``_V12_MESSAGE_STATUS``)."""
    for sql in _V12_MESSAGE_STATUS:
        db.execute(sql)


def _v13_frozen_session_prompts(db: Database) -> None:
    """The parts of a session's system prompt fixed at its first turn (the curated facts ranked
    against its first message, the skills index), so a resumed session sends the same bytes and
    the provider's prompt cache still holds. Rows go with their session."""
    db.table("session_prompts").create(
        {"session_id": int, "memory": str, "skills_index": str},
        pk="session_id",
        not_null={"memory", "skills_index"},
        foreign_keys=[("session_id", "sessions", "id")],
    )


_V14_SESSION_TABLES = {
    # Tokens and cost per session and model (memory/usage.py), and the files an export or a copy
    # wrote from a session (memory/exports.py), so forgetting removes them from every surface.
    "session_usage": """CREATE TABLE session_usage (
        session_id INTEGER NOT NULL REFERENCES sessions(id),
        model TEXT NOT NULL,
        calls INTEGER NOT NULL DEFAULT 0,
        prompt_tokens INTEGER NOT NULL DEFAULT 0,
        completion_tokens INTEGER NOT NULL DEFAULT 0,
        cached_tokens INTEGER NOT NULL DEFAULT 0,
        cost_usd REAL,
        PRIMARY KEY (session_id, model)
    )""",
    "session_files": """CREATE TABLE session_files (
        session_id INTEGER NOT NULL REFERENCES sessions(id),
        path TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        PRIMARY KEY (session_id, path)
    )""",
}


def _v14_session_state(db: Database) -> None:
    """Session state moves from the terminal app's tables into the store, where every surface
    reads it: /undo's marks become the ``undone`` status (so ``-c -p``, ``--session`` and the
    web's Resume leave those messages out too), and the usage and exported-file tables are the
    core's. A file the TUI never opened has none of its tables: they are made empty."""
    tables = set(db.table_names())
    if "tui_undone_messages" in tables:
        db.execute("UPDATE messages SET status = 'undone'"
                   " WHERE id IN (SELECT message_id FROM tui_undone_messages)")
        db.execute("DROP TABLE tui_undone_messages")
    for table, create in _V14_SESSION_TABLES.items():
        if f"tui_{table}" in tables:
            db.execute(f"ALTER TABLE tui_{table} RENAME TO {table}")
        else:
            db.execute(create)


NEVER_REUSED = ("sessions", "messages")
_INTEGER_KEY = re.compile(r'("id"|\[id\]|\bid)(\s+INTEGER\s+PRIMARY\s+KEY)(?!\s+AUTOINCREMENT)', re.I)


def _v15_ids_never_reused(db: Database) -> None:
    """Session and message ids are never given out again: a plain INTEGER PRIMARY KEY hands a
    forgotten session's id (the largest) to the next one, and /undo in that new session then
    offered the forgotten turn. Both tables become AUTOINCREMENT.

    SQLite cannot add AUTOINCREMENT with ALTER TABLE, and a rebuild (new table, copy, drop,
    rename) cannot run here: the steps run in one transaction with foreign keys on, where the
    implicit DELETE of DROP TABLE cascades into ``long_messages`` and leaves violations no rename
    clears. AUTOINCREMENT changes nothing stored in the table itself (the same rowid b-tree; the
    counter lives in ``sqlite_sequence``), so this uses SQLite's documented procedure for such
    changes (lang_altertable.html, "other kinds of table schema changes"): the table's CREATE
    statement is edited in ``sqlite_schema`` and the schema cookie bumped. Indexes, triggers, the
    FTS5 tables and every foreign key stay as they were; the counters start at today's largest ids."""
    db.execute("CREATE TABLE _hermes_autoincrement_seed (id INTEGER PRIMARY KEY AUTOINCREMENT)")
    db.execute("DROP TABLE _hermes_autoincrement_seed")  # sqlite_sequence stays, as SQLite needs it
    version = db.execute("PRAGMA schema_version").fetchone()[0]
    db.execute("PRAGMA writable_schema = ON")
    try:
        for table in NEVER_REUSED:
            (sql,) = db.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", [table]).fetchone()
            edited, count = _INTEGER_KEY.subn(r"\1\2 AUTOINCREMENT", sql, count=1)
            if count:
                db.execute("UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = ?", [edited, table])
        db.execute(f"PRAGMA schema_version = {version + 1}")
    finally:
        db.execute("PRAGMA writable_schema = OFF")
    for table in NEVER_REUSED:
        db.execute("DELETE FROM sqlite_sequence WHERE name = ?", [table])
        db.execute(f"INSERT INTO sqlite_sequence (name, seq) SELECT ?, coalesce(max(id), 0) FROM {table}", [table])


def _v16_attachments(db: Database) -> None:
    """The images attached to a message, in order: the path as the user gave it and the sha256
    naming the bytes kept under HERMES_HOME/attachments/ (``memory.attachments``). Rows go with
    their message; the file goes when no row names it any more."""
    db.execute("""CREATE TABLE message_images (
        message_id INTEGER NOT NULL REFERENCES messages(id),
        position INTEGER NOT NULL,
        path TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        mime TEXT NOT NULL,
        width INTEGER NOT NULL,
        height INTEGER NOT NULL,
        PRIMARY KEY (message_id, position)
    )""")
    db.execute("CREATE INDEX message_images_sha256 ON message_images (sha256)")


def _v17_subagent_sessions(db: Database) -> None:
    """A sub-agent's session (the ``delegate`` tool) names the session that delegated to it.
    NULL for every other session; forgetting a parent forgets its sub-agents' sessions
    (``forget.py``), so no foreign key action is needed here."""
    db.execute("ALTER TABLE sessions ADD COLUMN parent_id INTEGER")
    db.execute("CREATE INDEX IF NOT EXISTS sessions_parent ON sessions (parent_id) WHERE parent_id IS NOT NULL")


SCHEMA = Migrations("memory", [
    _v1_core,
    _v2_clean_cjk_index,
    _v3_long_messages,
    _v4_background_merges,
    _v5_compactions,
    _v6_frequent_top,
    _v7_tool_arguments,
    _v8_pending_summaries,
    _v9_session_workspace,
    _v10_turn_outcomes,
    _v11_plain_index,
    _v12_message_status,
    _v13_frozen_session_prompts,
    _v14_session_state,
    _v15_ids_never_reused,
    _v16_attachments,
    _v17_subagent_sessions,
])
"""The memory's schema steps, by name (``db.Migrations``); ``PRAGMA user_version`` still counts
them, as files made before the names were recorded did.

Append only: a new table (e.g. for the web dashboard) is a new function at the end. The steps
run inside one ``BEGIN IMMEDIATE`` transaction with their records, so processes that open a
fresh file at the same moment cannot both apply one.
"""
MIGRATIONS = SCHEMA.steps

REINDEXING = (_v2_clean_cjk_index, _v7_tool_arguments, _v11_plain_index)
"""Steps that replace the message index with an empty one. The stored messages are copied into
the final index once, after the last step (``_reindex``), in chunks that report progress: a store
two such steps behind is indexed once, not twice. So no step may read ``messages_fts``."""

REINDEX_CHUNK = 5_000
"""Messages indexed per statement while reindexing (a report to the progress after each)."""


def reindex(conn: sqlite3.Connection, progress: Progress) -> None:
    """Fill the index columns of every stored message and copy it into the (new, empty) index,
    ``REINDEX_CHUNK`` at a time.

    The index's triggers are set aside meanwhile: filling a column they watch would otherwise
    ask FTS5 to remove rows it never held. (FTS5's 'rebuild' fails with "SQL logic error" on the
    source view; a plain copy does the same.) The columns are the index's own, so this stays
    right whatever a later step adds."""
    triggers = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'"
                            " AND name LIKE 'messages_fts_%'").fetchall()
    for name, _sql in triggers:
        conn.execute(f'DROP TRIGGER "{name}"')
    columns = ", ".join(row[1] for row in conn.execute("PRAGMA table_info(messages_fts)"))
    fill = (f"UPDATE messages SET index_content = {INDEX_COLUMN}(content),"
            f" index_tool_args = {INDEX_COLUMN}({_TOOL_ARGS}) WHERE id > ? AND id <= ?")
    copy = (f"INSERT INTO messages_fts (rowid, {columns}) SELECT id, {columns}"
            " FROM messages_fts_source WHERE id > ? AND id <= ?")
    total, first, last = conn.execute("SELECT count(*), min(id), max(id) FROM messages").fetchone()
    progress.start("Reindexing the memory store", total)
    try:
        low, left = (first or 0) - 1, total
        while left > 0:
            bound = conn.execute("SELECT id FROM messages WHERE id > ? ORDER BY id LIMIT 1 OFFSET ?",
                                 (low, REINDEX_CHUNK - 1)).fetchone()
            high = last if bound is None else bound[0]
            conn.execute(fill, (low, high))
            conn.execute(copy, (low, high))
            progress.advance(min(REINDEX_CHUNK, left))
            low, left = high, left - REINDEX_CHUNK
    finally:
        progress.done()
    for _name, sql in triggers:
        conn.execute(sql)


def refresh_index_columns(conn: sqlite3.Connection) -> int:
    """Bring every index column in line with its text; returns how many rows changed.

    For rows another SQLite client wrote: a message it added is indexed as it is (its columns
    are NULL), and one whose text it changed without clearing the column is still indexed by
    the old column (never inconsistently: the triggers read the same view on both sides). A
    full scan through Python, so it is for ``doctor``, not for every start. The triggers move
    each changed row's index entry."""
    column, args = INDEX_COLUMN, _TOOL_ARGS
    changed = conn.execute(
        f"UPDATE messages SET index_content = {column}(content), index_tool_args = {column}({args})"
        f" WHERE index_content IS NOT {column}(content) OR index_tool_args IS NOT {column}({args})").rowcount
    return changed + conn.execute(
        f"UPDATE sessions SET index_title = {column}(title), index_summary = {column}(summary)"
        f" WHERE index_title IS NOT {column}(title) OR index_summary IS NOT {column}(summary)").rowcount
