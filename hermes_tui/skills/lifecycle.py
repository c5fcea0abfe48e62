"""A skill's life: active, then stale, then archived — and what a skill's uses led to.

* **Active** skills are offered everywhere. A learned skill (one Hermes wrote) that nothing has
  used, written or refined for ``stale_days`` is **stale**: it leaves the system-prompt index but
  still answers search, hints and ``use_skill``. After ``archive_days`` it is **archived**: its
  folder moves to ``HERMES_HOME/skills-archive/`` (never deleted) and it leaves search and hints.
  ``use_skill`` by its exact name, or ``hermes-tui skills restore NAME``, brings it back.
* Pinned skills never age, and guest skills (imported, hand-written, bundled) are never moved.
* Each use is booked against its turn: ``done``, ``error`` (the turn ended in an error or ran out
  of steps), ``corrected`` (the user ran /retry or /undo on it) or ``cancelled`` (counted neither way).
"""

from __future__ import annotations

from dataclasses import dataclass

DAY = 86400.0

# The loop's stopped_reason -> the outcome booked for the turn's skills.
TURN_OUTCOMES = {"done": "done", "error": "error", "max_steps": "error", "cancelled": "cancelled"}


@dataclass(frozen=True)
class Ages:
    """When a learned, unpinned skill goes stale and when it is archived (days since last touched)."""

    stale_days: int = 30
    archive_days: int = 90

    def stale_before(self, now: float) -> float:
        return now - self.stale_days * DAY

    def archive_before(self, now: float) -> float:
        return now - max(self.archive_days, self.stale_days) * DAY


DEFAULT_AGES = Ages()  # one shared default: Ages is frozen


@dataclass(frozen=True)
class SkillState:
    """One line of ``hermes-tui skills list``: where a skill is in its life and how it fared."""

    name: str
    state: str  # "active" | "stale" | "archived"
    pinned: bool
    learned: bool
    uses: int
    done: int
    failed: int  # errors and corrections
    last_used: float
    path: str
    failing: bool = False  # failed more often than it worked: out of the prompt and hints until pinned

    @property
    def success_rate(self) -> float | None:
        """Share of finished uses whose turn went well; None before any finished."""
        judged = self.done + self.failed
        return self.done / judged if judged else None


def state_of(learned: bool, pinned: bool, touched: float, now: float, ages: Ages) -> str:
    """``active`` or ``stale`` for a skill in the library (archived ones are not in it)."""
    if learned and not pinned and touched < ages.stale_before(now):
        return "stale"
    return "active"


def turn_outcome(stopped_reason: str) -> str:
    return TURN_OUTCOMES.get(stopped_reason, "error")


# -- what a skill's uses cost, where a learned one came from, and when one fails -------------------

REVIEW_FLAG = "learned, waiting in the inbox for review (HERMES_LEARN=review)"
FAILING_USES = 3  # judged uses before a skill whose failures outnumber its successes leaves the prompt


@dataclass(frozen=True)
class TurnCost:
    """What a turn cost: model calls, tool calls and tokens (prompt and completion)."""

    model_calls: int = 0
    tool_calls: int = 0
    tokens: int = 0


@dataclass(frozen=True)
class Provenance:
    """Where a learned version came from: the model that wrote it (``provider:model``), the session
    and turn (user message id) it was distilled from, and what that turn cost."""

    model: str
    session: int
    turn: int | None = None
    cost: TurnCost = TurnCost()

    def created_metadata(self) -> dict[str, str]:
        """The SKILL.md ``metadata`` keys of a new skill."""
        return {"learned_by": self.model, "learned_in": f"session {self.session}"}

    def refined_metadata(self, before: str, version: int) -> dict[str, str]:
        """``metadata.refined_by`` with this refinement added to the earlier ones (``before``)."""
        entry = f"{self.model} (session {self.session}, v{version})"
        return {"refined_by": f"{before}; {entry}" if before else entry}


@dataclass(frozen=True)
class SkillStats:
    """``hermes-tui skills stats``: a skill's uses and their mean cost, against the turn it was learned from."""

    name: str
    uses: int
    successes: int
    failures: int
    mean_tool_calls: float | None
    mean_tokens: float | None
    learned_tool_calls: int | None
    learned_tokens: int | None
    failing: bool

    @property
    def has_record(self) -> bool:
        """Anything to show: a judged use, a cost, the turn it was learned from."""
        return bool(self.successes or self.failures or self.mean_tool_calls is not None
                    or self.learned_tool_calls is not None)

    def summary(self) -> str:
        """One line for the Skills pane's preview."""
        line = f"{self.successes} worked · {self.failures} failed"
        if self.mean_tool_calls is not None:
            line += f" · {self.mean_tool_calls:.1f} tool calls, {self.mean_tokens or 0:.0f} tokens per use"
        if self.learned_tool_calls is not None:
            line += f" (learned from a turn of {self.learned_tool_calls} calls, {self.learned_tokens or 0} tokens)"
        if self.failing:
            line += " · failing: out of the prompt and hints until pinned"
        return line
