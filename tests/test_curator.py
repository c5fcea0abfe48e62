"""The strict skill-proposal parser and the transcript renderer."""

from __future__ import annotations

import pytest

from hermes_tui.learning.curator import ProposalError, parse_proposal, render_transcript

GOOD = """NAME: Deploy Flask To Railway
DESCRIPTION: Deploy a Flask app to Railway with gunicorn
TRIGGERS: deploy, railway , flask,gunicorn
BODY:
1. Add a Procfile.

2. Run `railway up`."""


def test_parses_fields_and_normalises_name() -> None:
    proposal = parse_proposal(GOOD)
    assert proposal is not None
    assert proposal.name == "deploy-flask-to-railway"
    assert proposal.triggers == ["deploy", "railway", "flask", "gunicorn"]
    assert proposal.body == "1. Add a Procfile.\n\n2. Run `railway up`."


@pytest.mark.parametrize("wrapped", [f"```\n{GOOD}\n```", f"```markdown\n{GOOD}\n```", f"\n\n  {GOOD}  \n\n"])
def test_tolerates_fences_and_whitespace(wrapped: str) -> None:
    assert parse_proposal(wrapped).name == "deploy-flask-to-railway"


@pytest.mark.parametrize("none", ["NONE", "none", "  NONE.  ", "```\nNONE\n```", "**NONE**"])
def test_none(none: str) -> None:
    assert parse_proposal(none) is None


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "Sure! Here is a skill.",
        GOOD.replace("NAME: Deploy Flask To Railway\n", ""),
        GOOD.replace("DESCRIPTION: Deploy a Flask app to Railway with gunicorn", "DESCRIPTION:"),
        GOOD.split("BODY:")[0] + "BODY:\n   ",
        GOOD.replace("TRIGGERS", "KEYWORDS"),
        "NAME: ---\nDESCRIPTION: d\nTRIGGERS: t\nBODY:\nb",
        "Here you go:\n" + GOOD,
        GOOD.replace("TRIGGERS: deploy", "NAME: again\nTRIGGERS: deploy"),
    ],
)
def test_strict_on_fields(bad: str) -> None:
    with pytest.raises(ProposalError):
        parse_proposal(bad)


def test_transcript_trims_tool_results_and_skips_system() -> None:
    text = render_transcript([
        {"role": "system", "content": "SYSTEM PROMPT"},
        {"role": "user", "content": "count lines"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "run_bash", "arguments": '{"command": "wc -l f"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "run_bash", "content": "x" * 5000},
    ])
    assert "SYSTEM PROMPT" not in text
    assert "[assistant calls run_bash]" in text and "wc -l f" in text
    assert "characters trimmed" in text and len(text) < 1200
