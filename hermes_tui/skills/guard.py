"""The skill guard: spot skills that try to steer the agent instead of describing a procedure.

Every skill's name, description, triggers and body pass through ``scan`` before the skill can be
listed, hinted or loaded; the curator and ``create_skill`` run it before saving. It looks for five
kinds of hostile text (each a ``Rule``): instructions to override the rules, role impersonation,
reading credentials or ``.env``, sending data to a URL, and piping a download into a shell. It
is a tripwire for the common shapes, not a proof of safety: a flagged skill is quarantined until
the user approves or deletes it, and the shell is still not a sandbox.

Benign patterns it must let through: ``curl https://api… | jq``, ``pip install``, ``git push``,
a POST of literal JSON to an API, reading a project's own config files.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    """``pattern`` is only tried on lines holding one of ``keywords`` (lowercase substrings): every
    pattern is line-local, and a 20 KB body must be checked in well under a millisecond."""

    kind: str  # what the user is told
    keywords: tuple[str, ...]
    pattern: re.Pattern[str]


def _rule(kind: str, keywords: str, *patterns: str) -> Rule:
    return Rule(kind, tuple(keywords.split()), re.compile("|".join(f"(?:{p})" for p in patterns), re.I | re.M))


_SECRET_FILE = (
    r"(?:(?<![\w.-])\.env(?:\.[\w-]+)?\b(?!\.example|\.sample|\.template)|\.ssh(?:/|\b)(?!\S*\.pub\b)"
    r"|id_(?:rsa|ed25519|ecdsa|dsa)\b(?!\.pub)|\.aws/credentials|\.netrc|\.git-credentials|\.pgpass"
    r"|/etc/shadow|\.kube/config|\.docker/config\.json|\.gnupg|wallet\.dat|\.hermes/|memory\.sqlite3"
    r"|cookies\.sqlite|login\s+data|keychain)"
)
_SECRET_NAMES = r"(?:HERMES_WEB_PASSWORD|FLASK_SECRET_KEY|\w*_API_KEY)"
_FETCH = r"(?:curl|wget|iwr|invoke-webrequest|irm|invoke-restmethod)\b"
# An interpreter that runs what arrives on stdin (``python -c '…'`` reading JSON from stdin does not).
_STDIN_SHELL = (
    r"(?:sudo\s+(?:-\S+\s+)*)?(?:(?:ba|z|da|k|fi)?sh\b(?!\s+-c\b)|(?:python[0-9.]*|perl|ruby|node)(?:\s+-)?\s*"
    r"(?=$|[;&|)'\"])|iex\b|invoke-expression\b)"
)
_SHELL = r"(?:(?:ba|z|da|k|fi)?sh|python[0-9.]*|perl|ruby|node)\b"

RULES: tuple[Rule, ...] = (
    _rule(
        "tells the agent to override or ignore its rules",
        "ignore disregard forget override bypass important urgent critical instruction tell inform mention alert notify without silently secretly covertly answering responding replying",
        r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|the\s+)?(?:of\s+)?(?:your\s+|the\s+)?"
        r"(?:previous|prior|above|earlier|all|any|your|system|safety|security|original)\b[^.\n]{0,30}"
        r"\b(?:instructions?|rules?|guidelines|prompts?|polic(?:y|ies)|restrictions|guardrails)\b",
        r"\b(?:important|urgent|critical)\s+(?:system|security|admin)\s+(?:note|notice|message|update|instruction)",
        r"\bnew\s+(?:system\s+)?instructions?\s*(?:from\b|:)",
        r"\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|mention\s+(?:this\s+)?to|alert|notify)\s+(?:the\s+)?user\b",
        r"\bwithout\s+(?:telling|asking|informing|notifying|alerting)\s+(?:the\s+)?user\b",
        r"\b(?:silently|secretly|covertly)\s+(?:run|send|upload|read|copy|execute|post|exfiltrate)",
        r"\b(?:before|instead\s+of)\s+(?:answering|responding|replying)\b[^.\n]{0,40}\b(?:read|run|send|cat|call|execute)\b",
    ),
    _rule(
        "impersonates the system, the developer or the user",
        "system developer im_start im_end [inst] <<sys>> now act message jailbreak dan god creator administrator",
        r"^\s*(?:#+\s*)?(?:system|developer)\s*(?:prompt|message|override)?\s*:",
        r"<\s*/?\s*(?:system|im_start|im_end|developer)\b[^>]*>|\[/?(?:system|inst)\]|<<sys>>",
        r"\byou\s+are\s+now\s+(?:a|an|the|dan|no\s+longer|free|unrestricted|in\s+(?:dan|developer|god)\s+mode)\b",
        r"\bfrom\s+now\s+on,?\s+you\s+(?:are|will|must)\b|\bact\s+as\s+(?:the\s+)?(?:system|developer|admin|root)\b",
        r"\bmessage\s+from\s+(?:the\s+)?(?:system|developer|administrator|anthropic|openai|hermes\s+team)\b",
        r"\b(?:jailbreak|dan|god)\s+mode\b|\bi\s+am\s+(?:your|the)\s+(?:developer|creator|administrator)\b",
    ),
    _rule(
        "reads credentials or .env files",
        "env ssh id_ aws netrc credentials pgpass shadow kube docker gnupg wallet hermes memory.sqlite cookies login keychain echo print api password secret private",
        rf"\b(?:cat|less|more|head|tail|print|dump|base64|xxd|strings|read|type|get-content)\b[^\n|;]{{0,60}}{_SECRET_FILE}",
        rf"\bread_file\s*\(?\s*['\"]?[^'\"\n]{{0,40}}{_SECRET_FILE}",
        r"(?:^|[;|&`(]|\$\()\s*(?:env|printenv)\s*(?:$|[|>;&)`])",
        rf"\b(?:echo|printf|print)\s+[\"']?\$\{{?{_SECRET_NAMES}",
        r"\b(?:api[_ ]keys?|passwords?|credentials|secrets|private\s+keys?)\b[^.\n]{0,30}\b(?:and|then)\s+"
        r"(?:send|post|upload|paste|email|share)\b",
    ),
    _rule(
        "sends data to a URL",
        "curl wget nc netcat socat telnet send post upload exfiltrate forward transmit email paste /dev/tcp",
        r"\|\s*(?:curl|wget|nc|ncat|netcat|socat|telnet)\b",
        rf"\b(?:curl|wget)\b[^\n]{{0,200}}(?:-T|--upload-file|-d|--data(?:-binary|-raw|-urlencode)?|-F\s*['\"]?\w+=|"
        rf"--post-file)[\s=]*['\"]?@?(?:~|\$HOME|/etc/|[^\s'\"]*{_SECRET_FILE})",
        rf"\b(?:curl|wget)\b[^\n]{{0,200}}(?:\$\(\s*(?:cat|env|printenv|base64|tar|ls)\b|`(?:cat|env|printenv)\b)",
        r"\b(?:send|post|upload|exfiltrate|forward|transmit|email|paste)\b[^.\n]{0,60}\b(?:conversation|chat\s+history|"
        r"transcript|memory|memories|environment\s+variables|credentials|secrets|api\s+keys?|tokens|passwords|"
        r"private\s+keys?|ssh\s+keys?|\.env)\b[^.\n]{0,60}\b(?:to|into)\b[^.\n]{0,30}(?:https?://|webhook|server|endpoint)",
        r"/dev/tcp/",
    ),
    _rule(
        "pipes a download into a shell",
        "curl wget iwr invoke-web irm invoke-rest",
        rf"\b{_FETCH}[^\n|;]*\|\s*{_STDIN_SHELL}",
        rf"{_SHELL}\s*(?:-c\s*)?[\"']?\s*<\(\s*{_FETCH}",
        rf"{_SHELL}\s+-c\s+[\"']?\$\(\s*{_FETCH}",
        rf"\b(?:eval|exec|source)\b[^\n]{{0,10}}[\"']?\$\(\s*{_FETCH}|\bsource\s+<\(\s*{_FETCH}",
    ),
)


@dataclass(frozen=True)
class Finding:
    kind: str
    excerpt: str

    def __str__(self) -> str:
        return f"{self.kind}: “{self.excerpt}”"


def scan(parts: Iterable[str]) -> list[Finding]:
    """Every rule that matches any of ``parts`` (name, description, triggers, body), once each."""
    lines = "\n".join(parts).splitlines()
    lowered = [line.lower() for line in lines]
    findings: list[Finding] = []
    for rule in RULES:
        chosen = [line for line, low in zip(lines, lowered, strict=True) if any(k in low for k in rule.keywords)]
        match = rule.pattern.search("\n".join(chosen)) if chosen else None
        if match:
            excerpt = " ".join(match.group(0).split())
            findings.append(Finding(rule.kind, excerpt[:80] + ("…" if len(excerpt) > 80 else "")))
    return findings


def verdict(parts: Iterable[str]) -> str:
    """One line saying why the text is held back, or "" when it passes."""
    return "; ".join(str(f) for f in scan(parts))
