"""MemoryPane: live full-text search over every session, results with the matched words marked.

Typing is debounced (a search per pause, not per key) and each search runs in a thread
worker. Snippets and queries are user text, so they become ``Content`` built piece by piece:
``[bold]`` typed by a user shows as those characters, never as markup.
"""

from __future__ import annotations

import re
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.content import Content
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from hermes_tui.memory import facts
from hermes_tui.memory.facts import Fact, FactStore
from hermes_tui.memory.search import SearchHit
from hermes_tui.memory.store import HIT_END, HIT_START, MemoryStore
from hermes_tui.skills.manager import SkillManager
from hermes_tui.tui import actions
from hermes_tui.tui.confirm import ConfirmScreen
from hermes_tui.tui.messages import EditFile, OpenTranscript
from hermes_tui.tui.transcript import clock, printable
from hermes_tui.tui.workers import off_thread

DEBOUNCE_SECONDS = 0.25
RESULT_LIMIT = 50
# Plain style strings, not component classes: a partial CSS style with an alpha colour blends
# toward white, which washes the meta line out on light themes. These read on dark and light
# themes, on the cursor row and off it.
MATCH_STYLE = "bold on $warning 50%"
META_STYLE = "dim"
_SPACE = re.compile(r"\s+")


def highlight_snippet(snippet: str) -> Content:
    """A store snippet as one line of Content, with the HIT_START..HIT_END runs styled."""
    head, *marked = snippet.split(HIT_START)
    parts: list[str | tuple[str, str]] = [_flat(head)]
    for chunk in marked:
        hit, _, rest = chunk.partition(HIT_END)
        parts += [(_flat(hit), MATCH_STYLE), _flat(rest)]
    return Content.assemble(*parts)


def _flat(text: str) -> str:
    """One line, nothing the terminal would interpret (markers are split off before this)."""
    return _SPACE.sub(" ", printable(text))


def hit_prompt(hit: SearchHit) -> Content:
    """Two lines: where the message is (session, role, date), then the snippet."""
    meta = Content.styled(f"session {hit.session_id} · {hit.role} · {clock(hit.created)}", META_STYLE)
    return Content.assemble(meta, "\n", highlight_snippet(hit.snippet))


SEARCH_HELP = 'Type to search. "exact phrase"  deploy*  docker OR podman  -word  role:user  tool:read_file'
"""The query syntax (hermes_tui/memory/query.py) in one line."""


class MemoryPane(Widget):
    """Search box, status line and the list of hits; Enter opens the transcript at the hit."""

    DEFAULT_CSS = """
    MemoryPane {
        height: 1fr;
        layout: vertical;
    }
    MemoryPane > #memory-status {
        height: 1;
        padding: 0 1;
        color: $text-muted;
    }
    MemoryPane > #memory-hits {
        height: 1fr;
    }
    """

    BINDINGS = actions.bindings("memory")  # declared once, in actions.ACTIONS

    def __init__(self, *, memory: MemoryStore, skills: SkillManager, **widget_kwargs: Any) -> None:
        super().__init__(**widget_kwargs)
        del skills  # every pane takes both stores; this one only searches memory
        self._store = memory
        self._hits: list[SearchHit] = []
        self._facts: list[Fact] = []  # shown while the search box is empty
        self._query = ""
        self._debounce: Timer | None = None

    def compose(self) -> ComposeResult:
        yield Input(placeholder="Search every session: words, names, commands…", id="memory-query")
        yield Static(Content(SEARCH_HELP), id="memory-status")
        yield OptionList(id="memory-hits", markup=False)

    # -- public API

    def refresh_data(self) -> None:
        """Run the current query again (new messages may match)."""
        self._search_now(self.query_one("#memory-query", Input).value)

    def focus_main(self) -> None:
        self.screen.set_focus(self.query_one("#memory-query", Input))  # at once, not after queued keys

    def set_query(self, text: str) -> None:
        """Search for ``text`` at once (the ``/memory`` command)."""
        self._search_now(text)
        self.query_one("#memory-query", Input).value = text

    @property
    def hits(self) -> list[SearchHit]:
        """The hits on screen, in order."""
        return list(self._hits)

    # -- searching

    def _search_now(self, query: str) -> None:
        if self._debounce is not None:
            self._debounce.stop()
            self._debounce = None
        self._query = query
        self._search(query)

    def _search(self, query: str) -> None:
        """Search the sessions, or, for an empty query, read the curated facts."""
        def job() -> tuple[list[SearchHit], list[Fact]]:
            if query.strip():
                return self._store.recall(query, limit=RESULT_LIMIT), []
            store = self._fact_store()
            return [], store.facts() + store.pending()

        def then(found: tuple[list[SearchHit], list[Fact]] | None, error: str | None) -> None:
            hits, facts_found = found or ([], [])
            self._show(query, hits, error, facts_found)

        off_thread(self, job, then, what=f"memory search for {query!r}", group="memory-search", exclusive=True)

    def _fact_store(self) -> FactStore:
        return facts.for_config(self.app.config)  # type: ignore[attr-defined]  # self.app is the HermesApp

    def _show(self, query: str, hits: list[SearchHit], error: str | None, found: list[Fact] | None = None) -> None:
        if query != self._query or not self.is_attached:
            return  # a newer query is on its way, or the pane is gone
        self._hits = hits
        self._facts = list(found or [])
        results = self.query_one("#memory-hits", OptionList)
        options: list[Option | None] = []
        for hit in hits:
            if options:
                options.append(None)  # a divider line between hits
            options.append(Option(hit_prompt(hit)))
        for fact in self._facts:
            waiting = " · waiting for your approval (edit the file to approve)" if fact.pending else ""
            meta = Content.styled(f"{fact.scope} · {fact.id}{waiting}", META_STYLE)
            options.append(Option(Content.assemble(meta, "  ", _flat(fact.text))))
        results.set_options(options)
        if options:
            results.highlighted = 0
        self.query_one("#memory-status", Static).update(self._status(query, error))
        self.refresh_bindings()

    def _status(self, query: str, error: str | None) -> Content:
        if error is not None:
            return Content.assemble(("Search failed: ", "$text-error"), error)
        if not query.strip():
            if not self._facts:
                return Content("Nothing remembered yet (/remember TEXT, or ask Hermes). " + SEARCH_HELP)
            count = len(self._facts)
            return Content(f"{count} fact{'s' if count != 1 else ''} Hermes remembers "
                           f"({self._key('edit_fact')} edit, {self._key('delete_fact')} delete). {SEARCH_HELP}")
        if not self._hits:
            return Content.assemble("No matches for “", printable(query), "”")
        count = len(self._hits)
        more = " (the best shown)" if count >= RESULT_LIMIT else ""
        return Content.assemble(f"{count} match{'es' if count != 1 else ''} for “", printable(query), f"”{more}")

    # -- events

    @on(Input.Changed, "#memory-query")
    def _query_changed(self, event: Input.Changed) -> None:
        if self._debounce is not None:
            self._debounce.stop()
            self._debounce = None
        if event.value == self._query:
            return  # already searched (set_query, or typed back to it)
        value = event.value
        self._debounce = self.set_timer(DEBOUNCE_SECONDS, lambda: self._search_now(value))

    @on(Input.Submitted, "#memory-query")
    def _query_submitted(self, event: Input.Submitted) -> None:
        if event.value != self._query:
            self._search_now(event.value)
        self.action_focus_hits()

    @on(OptionList.OptionSelected, "#memory-hits")
    def _hit_selected(self, event: OptionList.OptionSelected) -> None:
        self._open(event.option_index)

    def on_descendant_focus(self) -> None:
        self.refresh_bindings()

    def on_descendant_blur(self) -> None:
        self.refresh_bindings()

    # -- actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """``o``, ``/`` and ``x`` are letters for the search box while it has focus."""
        if action in ("open", "focus_search", "delete_fact") and self.query_one("#memory-query", Input).has_focus:
            return False
        if action in ("edit_fact", "delete_fact"):
            return True if self._highlighted_fact() is not None else None
        if action == "open" and self.query_one("#memory-hits", OptionList).highlighted is None:
            return None
        return True

    def action_open(self) -> None:
        highlighted = self.query_one("#memory-hits", OptionList).highlighted
        if highlighted is not None:
            self._open(highlighted)

    def action_edit_fact(self) -> None:
        fact = self._highlighted_fact()
        if fact is not None:
            self.post_message(EditFile(self._fact_store().path(fact.scope), "memory"))

    def action_delete_fact(self) -> None:
        fact = self._highlighted_fact()
        if fact is None:
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._delete(fact)

        self.app.push_screen(ConfirmScreen(f"Forget this fact ({fact.scope})?\n\n{printable(fact.text)}",
                                           confirm_label="Forget"), answered)

    def _delete(self, fact: Fact) -> None:
        def then(_: object, error: str | None) -> None:
            if error is not None:
                self.app.notify(f"Could not forget it: {error}", severity="error", markup=False)
            if self.is_attached:
                self.refresh_data()

        off_thread(self, lambda: self._fact_store().remove(fact.id), then, what="forgetting a fact",
                   group="memory-facts")

    def _highlighted_fact(self) -> Fact | None:
        if self._query.strip() or not self._facts:
            return None
        index = self.query_one("#memory-hits", OptionList).highlighted
        return self._facts[index] if index is not None and 0 <= index < len(self._facts) else None

    @staticmethod
    def _key(action: str) -> str:
        return next(a.key_text for a in actions.ACTIONS if a.scope == "memory" and a.action == action)

    def action_focus_search(self) -> None:
        self.focus_main()

    def action_focus_hits(self) -> None:
        if self._hits or self._facts:
            self.query_one("#memory-hits", OptionList).focus()

    def _open(self, index: int) -> None:
        if 0 <= index < len(self._hits):
            hit = self._hits[index]
            self.post_message(OpenTranscript(hit.session_id, hit.message_id or None))  # 0: a summary
