"""Near-duplicate skills: a proposal that describes a skill the library already has, in other words.

Why: a curator that names the same procedure "count-lines", "line-counter" and "count-lines-v2" in
three sessions would leave three skills where one should grow. Candidates come from the library's
one ranker (``SkillManager.search``); each is then compared field by field (name words, description
words, triggers) by the words they share, so "back up postgres" and "restore postgres" stay two skills.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hermes_tui.skills.index import query_words
from hermes_tui.skills.schema import Skill

THRESHOLD = 0.6  # weighted overlap at which a proposal is the same skill
WEIGHTS = {"name": 0.35, "description": 0.45, "triggers": 0.2}
CANDIDATES = 5


def similarity(a: Skill, b: Skill) -> float:
    """Weighted word overlap of name, description and triggers, in 0..1. Overlap is shared words over
    the smaller set: a reworded description that adds "quickly" or "how to" still covers the old one."""
    parts = {
        "name": (_words([_bare(a.name)]), _words([_bare(b.name)])),
        "description": (_words([a.description]), _words([b.description])),
        "triggers": (_words(a.triggers), _words(b.triggers)),
    }
    score = 0.0
    for field, (left, right) in parts.items():
        if left or right:
            smaller = min(len(left), len(right))
            score += WEIGHTS[field] * (len(left & right) / smaller if smaller else 0.0)
    return score


def distinct(a: Skill, b: Skill) -> bool:
    """Whether the names say these are skills about different things: a word of one name that its own
    description uses and the other skill never mentions ("codereadr-automation" against
    "tally-automation", "backup-postgres" against "restore-postgres")."""
    for one, other in ((a, b), (b, a)):
        subject = _words([_bare(one.name)]) & _words([one.description])
        if subject - _words([_bare(other.name), other.description, *other.triggers]):
            return True
    return False


def near_duplicate(proposal: Skill, candidates: Sequence[Skill]) -> Skill | None:
    """The candidate ``proposal`` repeats (the most similar above ``THRESHOLD``), if any."""
    scored = [(similarity(proposal, c), c) for c in candidates
              if c.name != proposal.name and not distinct(proposal, c)]
    best = max(scored, key=lambda pair: pair[0], default=None)
    return best[1] if best is not None and best[0] >= THRESHOLD else None


def _bare(name: str) -> str:
    """A skill name's words: without its namespace, hyphens as spaces."""
    return name.split("/")[-1].replace("-", " ")


def _words(texts: Iterable[str]) -> set[str]:
    return {_stem(w) for text in texts for w in query_words(text)}


def _stem(word: str) -> str:
    """Enough folding for overlap: "lines"/"line", "counting"/"count" (not a linguist's stemmer)."""
    for suffix in ("ing", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word
