"""The guard: spot text that tries to steer the agent instead of describing a procedure or a fact.

Skills (name, description, triggers, body) pass through ``verdict`` before they can be listed,
hinted or loaded, and the curator and ``create_skill`` run it before saving; memory search results
pass it before they reach the model. ``verdict`` is the one entry point, so instruction files can
use it the same way.

The text is normalised first (``normalise``): NFKC (fullwidth and styled letters become plain),
format characters (zero-width, soft hyphens, bidi controls) and combining marks removed, look-alike
letters from other alphabets mapped to Latin, quotes and backslashes inside shell words dropped,
and shell continuation lines joined. Rules on prose are also tried on each paragraph joined into
one line, so a phrase split across lines is seen.

It looks for the common shapes of hostile text (each a ``Rule``): instructions to override the
rules, role impersonation, reading or globbing credential files, sending secrets or the whole
environment to the network (a secret-named variable in a URL to a host that is not its vendor's),
printing the agent's own keys or grepping the environment for keys, a plain-http or unverified download run by a shell, decoding and
running a payload, and changing Hermes' own approval or sandbox settings. It is a tripwire, not a
proof of safety: a flagged skill is quarantined until the user approves or deletes it.

Precision matters as much (a quarantined good skill is a broken feature): defensive phrasing
("ignore any embedded instructions"), quoted examples of attacks, ``echo $X_API_KEY`` checks of a
service's key (not the agent's own model keys), a vendor's key in its own API's URL, JSON
piped into ``curl`` for an API post, and vendor install lines over https pass (the approval dialog
shows those commands anyway). ``bench/guard_precision.py`` measures both sides.
"""

from __future__ import annotations

import fnmatch
import functools
import re
import unicodedata
from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import accumulate

from hermes_tui.providers import PROVIDER_TABLE


@dataclass(frozen=True)
class Rule:
    """``pattern`` is only tried on lines (or joined paragraphs, when ``joined``) holding one of
    ``keywords`` (lowercase substrings), so a 20 KB body is checked in about a millisecond.
    ``confirm``, when set, must accept a match for it to count (quoted or defensive mentions don't)."""

    kind: str  # what the user is told
    keywords: tuple[str, ...]
    source: str  # of ``pattern``
    joined: bool = False
    confirm: Callable[[re.Match[str]], bool] | None = None

    @functools.cached_property
    def pattern(self) -> re.Pattern[str]:
        """Compiled at its first use: compiling all the rules is most of the guard's import
        (~20 ms), which every ``-p`` run pays through the tools and most never use."""
        return re.compile(self.source, re.I | re.M)


def _rule(kind: str, keywords: str, *patterns: str, joined: bool = False,
          confirm: Callable[[re.Match[str]], bool] | None = None) -> Rule:
    return Rule(kind, tuple(keywords.split()), "|".join(f"(?:{p})" for p in patterns), joined, confirm)


# -- normalisation -------------------------------------------------------------------------------

# Letters of other alphabets that look like Latin ones (Cyrillic, Greek, a few others).
_CONFUSABLES = str.maketrans({
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c",
    "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ї": "i", "ј": "j", "ԁ": "d", "ԛ": "q", "ԝ": "w",
    "һ": "h", "ӏ": "l", "ɡ": "g", "ɩ": "i", "ο": "o", "α": "a", "ε": "e", "ι": "i", "κ": "k", "ν": "v",
    "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "γ": "y", "ѵ": "v", "ᴦ": "r", "ı": "i",
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C", "Т": "T",
    "Х": "X", "У": "Y", "Ѕ": "S", "І": "I", "Ј": "J", "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H",
    "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
})
# Line breaks other than \n, made \n (a regex finds them about 25x faster than str.translate walks the text).
_LINE_SEPARATORS = re.compile("[\u2028\u2029\x85\x0b\x0c]")
# A quote pair or a quote/backslash inside a shell word (the class comes first so the scan is fast).
_SHELL_QUOTES = re.compile(r"""(?:''|"")(?<=[\w.~/*?\]-]['"]{2})|['"\\](?<=[\w.~/*?\]-]['"\\])(?=[\w.])""")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def _plain(match: re.Match[str]) -> str:
    char = match.group()
    if unicodedata.category(char) in ("Cf", "Mn", "Me"):  # zero-width, soft hyphen, bidi, tags; combining marks
        return ""
    return _CONFUSABLES.get(ord(char), char)


def normalise(text: str) -> str:
    """The text as the rules read it: plain letters, no invisible characters, shell words unquoted."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", _LINE_SEPARATORS.sub("\n", text))
        text = _NON_ASCII.sub(_plain, text)
    text = _CONTINUATION.sub(" ", text)  # a shell command continued on the next line
    return _SHELL_QUOTES.sub("", text)  # .e""nv, .e'n'v and .\env are .env to a shell


_CONTINUATION = re.compile(r"\\\r?\n[ \t]*")
_FENCE = re.compile(r"^\s*(?:```|~~~)")
_QUOTE_MARKS = re.compile(r"^\s*(?:>\s*)*")


def _paragraphs(lines: list[str]) -> list[str]:
    """Each run of non-blank prose lines as one line (quote marks dropped; code blocks left out,
    their lines are checked one by one)."""
    out: list[str] = []
    current: list[str] = []
    in_code = False
    for line in [*lines, ""]:
        fence = _FENCE.match(line) is not None
        in_code = in_code != fence
        stripped = "" if fence or in_code else _QUOTE_MARKS.sub("", line).strip()
        if stripped:
            current.append(stripped)
        elif current:
            if len(current) > 1:
                out.append(" ".join(current))
            current = []
    return out


# -- the rules ---------------------------------------------------------------------------------------

_SECRET_FILE = (
    r"(?:(?<![\w.-])\.env(?:\.[\w-]+)?\b(?!\.example|\.sample|\.template|\s+path)|\.ssh(?:/|\b)(?!\S*\.pub\b)"
    r"|id_(?:rsa|ed25519|ecdsa|dsa)\b(?!\.pub)|\.aws/credentials|\.netrc|\.git-credentials|\.pgpass"
    r"|/etc/shadow|\.kube/config|\.docker/config\.json|\.gnupg|wallet\.dat|\.hermes/|memory\.sqlite3"
    r"|cookies\.sqlite|login\s+data|keychain|/proc/[^\s/]+/environ)"
)
_SECRET_NAMES = (".env", ".env.local", ".env.production", ".ssh", "id_rsa", "id_ed25519", ".netrc", ".pgpass",
                 ".git-credentials", "credentials", ".hermes", "memory.sqlite3", "environ", ".gnupg")
_READER = r"(?:cat|less|head|tail|tac|nl|base64|base32|xxd|od|hexdump|strings|get-content|gzip|zip|tar|source)"
_NET = r"(?:curl|wget|nc|ncat|netcat|socat|telnet|openssl\s+s_client)\b"
_SECRET_VAR = r"\$\{?\w*(?:API_KEY|TOKEN|SECRET|PASSWORD|PASSWD)\w*\}?"
# The whole environment (one variable, os.environ["X"] or process.env.X, is an ordinary read).
_WHOLE_ENV = (r"(?:os\.environ(?!\s*(?:\[|\.get\b|\.setdefault\b|\.pop\b|\.copy\b|\.update\b))|\bos\.getenv\(\s*\)"
              r"|process\.env(?![.\[\w])|/proc/[^\s/]+/environ|\bprintenv\b(?!\s+\w)|(?<![\w$-])env\s*(?=\|)"
              r"|\bexport\s+-p\b|\bset\s*(?=\|))")
_SENDER = (r"(?:requests\.(?:post|put|get|patch)\(|urlopen\(|urllib\.request|http\.client\.|httpx\.\w+\(|socket\.|"
           r"\bfetch\(|axios(?:\.\w+)?\(|XMLHttpRequest|sendBeacon\(|smtplib\.|\bcurl\s|\bwget\s|\bnc\s|netcat|socat)")
_FETCH = r"(?:curl|wget|iwr|invoke-webrequest|irm|invoke-restmethod)\b"
# A download a shell should not trust: plain http, an IP address, or certificate checks turned off.
_UNSAFE_URL = (r"(?:\bhttp://(?!(?:localhost|127\.0\.0\.1)\b)|\bhttps?://\[?(?:\d{1,3}\.){3}\d{1,3}|"
               r"\bhttps?://\[[0-9a-f:]+\]|\s--insecure\b|\s-[a-z]*k[a-z]*\b|--no-check-certificate)")
_STDIN_SHELL = (
    r"(?:sudo\s+(?:-\S+\s+)*)?(?:(?:ba|z|da|k|fi)?sh\b(?!\s+-c\b)|(?:python[0-9.]*|perl|ruby|node)(?:\s+-)?\s*"
    r"(?=$|[;&|)'\"])|iex\b|invoke-expression\b)"
)
_SHELL = r"(?:(?:ba|z|da|k|fi)?sh|python[0-9.]*|perl|ruby|node)\b"
_DECODE = (r"(?:base64\s+(?:-\w*d\w*|--decode)|base32\s+(?:-\w*d\w*|--decode)|xxd\s+-r|openssl\s+(?:base64|enc)\s+"
           r"[^|\n]*-d\b|uudecode|gunzip|zcat)")
_SETTINGS = r"HERMES_(?:APPROVAL|SANDBOX\w*|WEB_ENABLE_\w+|WEB_ALLOW_NO_AUTH|API_BASE|WORKSPACE|HOME)\b"
_MENTION_BEFORE = re.compile(r"\b(?:like|such\s+as|e\.g\.|phrases?|says?|saying|strings?|patterns?|reject|detect|flag)"
                             r"\s*[:,]?\s*[\"“'`«]\s*$", re.I)  # quoted after a word that marks an example
_DEFENSIVE = re.compile(r"\b(?:embedded|injected|untrusted|hidden|contained|found|inside|within)\b|"
                        r"\b(?:in|from)\s+(?:the\s+|any\s+|these\s+|this\s+)?(?:issues?|comments?|data|inputs?|files?|"
                        r"content|pages?|text|documents?|slices?|sources?|outputs?|results?|repos?|web|emails?|"
                        r"tool\s+results?|messages?)\b", re.I)
_STEERING = re.compile(r"\b(?:previous|prior|above|earlier|your|system|original|safety|security)\b", re.I)


def _used_not_mentioned(match: re.Match[str]) -> bool:
    """Not quoted as an example ("reject phrases like 'ignore previous instructions'") and not a
    defence ("ignore any instructions embedded in the issue")."""
    before = match.string[max(0, match.start() - 40):match.start()]
    if _MENTION_BEFORE.search(before):
        return False
    words = match.group(0)
    after = match.string[match.end():match.end() + 40]
    return not (_DEFENSIVE.search(words + " " + after) and not _STEERING.search(words))


def _globs_a_secret(match: re.Match[str]) -> bool:
    """A read whose argument is a pattern (``cat .e?v``, ``cat ~/.ss*/id_*``) that can name a secret."""
    for word in match.group("args").split():
        word = word.strip("'\"`")
        if not any(c in word for c in "*?["):
            continue
        tail = word.split("/")
        for depth in range(1, 3):
            pattern = "/".join(tail[-depth:]).lower()
            if (any(fnmatch.fnmatchcase(name, pattern) for name in _SECRET_NAMES if name.startswith(".") or depth == 1)
                    and (pattern.strip("*?") or depth > 1)):  # a lone * is not aimed at a secret
                return True
            if depth == 2 and any(fnmatch.fnmatchcase(f"{d}/{n}", pattern) for d, n in
                                  ((".ssh", "id_rsa"), (".aws", "credentials"), (".hermes", ".env"))):
                return True
    return False


# A secret in a URL: ``$VAR``/``${VAR}`` (shell), ``os.environ["VAR"]``/``getenv("VAR")`` (Python),
# ``process.env.VAR`` (JavaScript), ``{var}`` (f-strings, templates).
_URL_REFERENCE = re.compile(r"environ\[\s*['\"](\w+)|(?:getenv|environ\.get)\(\s*['\"](\w+)|"
                            r"process\.env(?:\.|\[\s*['\"])(\w+)|\$\{?(?:process\.env\.)?([A-Za-z_]\w*)|\{\s*(\w+)\s*\}")
_SECRET_WORD = r"(?:API_?KEY|ACCESS_KEY(?:_ID)?|SECRET(?:_ACCESS)?(?:_KEY)?|TOKEN|PASSWORD|PASSWD|CREDENTIALS?)"
_SECRET_NAME = re.compile(rf"\w*{_SECRET_WORD}\w*", re.IGNORECASE)
_SECRET_TAIL = re.compile(rf"_?{_SECRET_WORD}\w*$", re.IGNORECASE)
_URL_HOST = re.compile(r"https?://(?:[^/?#\s@]*@)?([^/?#\s:\"'`\\]+)", re.IGNORECASE)
_GENERIC_WORDS = frozenset("my the your our app bot user access auth client private secret api prod dev personal service "
                           "default main admin read write".split())
_VENDOR_HOSTS = {"gh": "github", "gl": "gitlab", "hf": "huggingface", "fred": "stlouisfed"}  # short names' hosts
# The keys and password Hermes itself holds: no skill has a reason to print them.
_OWN_SECRETS = "|".join(sorted({p.key_env_var for p in PROVIDER_TABLE.values() if p.key_env_var}
                               | {"FLASK_SECRET_KEY", "HERMES_WEB_PASSWORD"}))


def _leaks_in_url(match: re.Match[str]) -> bool:
    """A URL carrying a secret-named variable to a host that is not its vendor's (``?key=$OPENAI_API_KEY``
    to collect.example.net), or to a bare IP or plain-http host. ``$TENOR_API_KEY`` to
    tenor.googleapis.com, a generic ``$API_KEY``, and a host that is itself a variable pass."""
    url = match.group(0)
    host = _URL_HOST.match(url)
    names = [next(g for g in found.groups() if g) for found in _URL_REFERENCE.finditer(url)]
    secrets = [name for name in names if _SECRET_NAME.fullmatch(name)]
    if not secrets or host is None or any(c in host.group(1) for c in "${}%<>"):
        return False
    if re.match(_UNSAFE_URL, url, re.IGNORECASE):
        return True
    place = re.sub(r"[^a-z0-9]", "", host.group(1).lower())
    for name in secrets:
        words = [w for w in _SECRET_TAIL.sub("", name).lower().split("_") if w and w not in _GENERIC_WORDS]
        if words and not any(_VENDOR_HOSTS.get(w, w) in place for w in words):
            return True
    return False


RULES: tuple[Rule, ...] = (
    _rule(
        "tells the agent to override or ignore its rules",
        "ignore disregard forget override bypass important urgent critical instruction tell inform mention alert notify without silently secretly covertly answering responding replying",
        r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|the\s+)?(?:of\s+)?(?:your\s+|the\s+)?"
        r"(?:previous|prior|above|earlier|all|any|your|system|safety|security|original)\b[^.\n]{0,30}"
        r"\b(?:instructions?|rules?|guidelines|prompts?|polic(?:y|ies)|restrictions|guardrails)\b",
        r"\b(?:important|urgent|critical)\s+(?:system|security|admin)\s+(?:note|notice|message|update|instruction)",
        r"\bnew\s+(?:system\s+)?instructions?\s*(?:from\b|:)",
        r"\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|mention\s+(?:this\s+)?to|alert|notify)\s+(?:the\s+)?user\b(?!\s+to\b)",
        r"\bwithout\s+(?:telling|asking|informing|notifying|alerting)\s+(?:the\s+)?user\b",
        r"\b(?:silently|secretly|covertly)\s+(?:run|send|upload|read|copy|execute|post|exfiltrate)",
        r"\b(?:before|instead\s+of)\s+(?:answering|responding|replying)\b[^.\n]{0,40}\b(?:read|run|send|cat|call|execute)\b",
        joined=True, confirm=_used_not_mentioned,
    ),
    _rule(
        "impersonates the system, the developer or the user",
        "system developer im_start im_end [inst] <<sys>> now act message jailbreak dan god creator administrator",
        r"^(?:#+\s*)?(?:system|developer)\s*(?:prompt|message|override)?\s*:(?!\s*(?:[\"'{\[|`]|$))",
        r"<\s*/?\s*(?:system|im_start|im_end|developer)\b[^>]*>|\[/?(?:system|inst)\]|<<sys>>",
        r"\byou\s+are\s+now\s+(?:a|an|the|dan|no\s+longer|free|unrestricted|in\s+(?:dan|developer|god)\s+mode)\b",
        r"\bfrom\s+now\s+on,?\s+you\s+(?:are|will|must)\b|\bact\s+as\s+(?:the\s+)?(?:system|developer|admin|root)\b",
        r"\bmessage\s+from\s+(?:the\s+)?(?:system|developer|administrator|anthropic|openai|hermes\s+team)\b",
        r"\b(?:jailbreak|dan|god)\s+mode\b|\bi\s+am\s+(?:your|the)\s+(?:developer|creator|administrator)\b",
        joined=True, confirm=_used_not_mentioned,
    ),
    _rule(
        "reads credentials or .env files",
        "env ssh id_ aws netrc credentials pgpass shadow kube docker gnupg wallet hermes memory.sqlite cookies login keychain environ",
        rf"\b{_READER}\b[^\n|;]{{0,60}}{_SECRET_FILE}",
        rf"\bread_file\s*\(?\s*['\"]?[^'\"\n]{{0,40}}{_SECRET_FILE}",
        rf"\b(?:read|print|show|display|output|dump|reveal)\s+(?:out\s+)?(?:the\s+)?(?:contents?\s+of\s+)?"
        rf"(?:the\s+|your\s+|my\s+|~/)?{_SECRET_FILE}",
    ),
    _rule(
        "reads credentials or .env files",
        "api password credential secret private token",
        r"\b(?:api[_ ]keys?|passwords?|credentials|secrets|private\s+keys?|tokens)\b[^.\n]{0,30}\b(?:and|then)\s+"
        r"(?:send|post|upload|paste|email|share|include)\b[^.\n]{0,40}\b(?:to|into|in|on)\b[^.\n]{0,30}"
        r"(?:chat|reply|answer|response|webhook|server|endpoint|url|https?://|pastebin|gist|email|channel|\bme\b|\bus\b)",
        joined=True,
    ),
    _rule(
        "reads a secret file through a file-name pattern",
        "* ? [",  # a file-name pattern
        rf"\b{_READER}\b(?P<args>(?:[ \t]+[^\s|;&<>()]+){{1,6}})",
        confirm=_globs_a_secret,
    ),
    _rule(
        "sends secrets or the whole environment to the network",
        "curl wget nc netcat socat telnet s_client /dev/tcp /dev/udp",
        rf"(?:{_WHOLE_ENV}|\b{_READER}\b[^\n|;]{{0,60}}{_SECRET_FILE}|\b(?:echo|printf)\s+[^\n|;]*{_SECRET_VAR})"
        rf"[^\n]{{0,80}}\|\s*(?:[\w./-]+\s+){{0,3}}?{_NET}",
        rf"\b(?:curl|wget)\b[^\n]{{0,200}}(?:-T|--upload-file|-d|--data(?:-binary|-raw|-urlencode)?|-F\s*['\"]?\w+=|"
        rf"--post-file)[\s=]*['\"]?@?(?:~|\$HOME|/etc/|[^\s'\"]*{_SECRET_FILE})",
        r"\b(?:curl|wget)\b[^\n]{0,200}(?:\$\(\s*(?:cat|env|printenv|base64|tar)\b|`(?:cat|env|printenv)\b)",
        r"/dev/(?:tcp|udp)/",
    ),
    _rule(
        "sends secrets or the whole environment to the network",
        "environ process.env printenv getenv env send post upload exfiltrate forward transmit email paste",
        rf"{_WHOLE_ENV}[^\n]{{0,200}}{_SENDER}|{_SENDER}[^\n]{{0,200}}{_WHOLE_ENV}",
        r"\b(?:send|post|upload|exfiltrate|forward|transmit|email|paste)\b[^.\n]{0,60}\b(?:conversation|chat\s+history|"
        r"transcript|memory|memories|environment\s+variables|credentials|secrets|api\s+keys?|tokens|passwords|"
        r"private\s+keys?|ssh\s+keys?|\.env)\b[^.\n]{0,60}\b(?:to|into)\b[^.\n]{0,30}(?:https?://|webhook|server|endpoint)",
        joined=True,
    ),
    _rule(
        "sends secrets or the whole environment to the network",
        "key token secret password passwd credential",
        r"https?://\S+",  # no \b: normalising drops the quote of f"https://..."
        confirm=_leaks_in_url,
    ),
    _rule(
        "prints API keys or passwords",
        "printenv echo printf env export set",
        rf"\bprintenv\s+(?:-\S+\s+)*(?:{_OWN_SECRETS})\b",
        rf"\b(?:echo|printf)\b[^\n|;&]*\$\{{?(?:{_OWN_SECRETS})(?![\w:#%/^,\[])",
        r"\b(?:printenv|env|set|export\s+-p|declare\s+-x)\s*\|\s*(?:grep|egrep|rg)\b[^\n|;]*"
        r"(?:key|token|secret|passw|credential)",
    ),
    _rule(
        "pipes a download from an unverified source into a shell",
        "curl wget iwr invoke-web irm invoke-rest",
        rf"\b{_FETCH}[^\n|;]*{_UNSAFE_URL}[^\n|;]*\|\s*{_STDIN_SHELL}",
        rf"\b{_FETCH}[^\n|;]*\|\s*{_STDIN_SHELL}[^\n]*{_UNSAFE_URL}",
        rf"{_SHELL}\s*(?:-c\s*)?[\"']?\s*<\(\s*{_FETCH}[^\n)]*{_UNSAFE_URL}",
        rf"{_SHELL}\s+-c\s+[\"']?\$\(\s*{_FETCH}[^\n)]*{_UNSAFE_URL}",
        rf"\b(?:eval|exec|source)\b[^\n]{{0,10}}[\"']?\$\(\s*{_FETCH}[^\n)]*{_UNSAFE_URL}"
        rf"|\bsource\s+<\(\s*{_FETCH}[^\n)]*{_UNSAFE_URL}",
    ),
    _rule(
        "decodes a hidden payload and runs it",
        "base64 base32 xxd openssl uudecode gunzip zcat b64decode atob frombase64 fromhex decode -enc encodedcommand",
        rf"{_DECODE}[^\n]*\|\s*(?:sudo\s+)?{_STDIN_SHELL}",
        rf"\b(?:eval|exec|source)\b[^\n]{{0,20}}\$\([^\n)]*{_DECODE}",
        rf"{_SHELL}\s+-c\s+[\"']?\$\([^\n)]*{_DECODE}|{_SHELL}\s*<\([^\n)]*{_DECODE}",
        r"\b(?:exec|eval)\s*\(\s*(?:__import__\(\s*['\"](?:base64|codecs|zlib|binascii)['\"]\s*\)|base64|codecs|zlib|"
        r"binascii|bytes\.fromhex|atob|Buffer\.from)",
        r"\b(?:exec|eval)\s*\([^\n)]{0,40}(?:b64decode|a85decode|b32decode|unhexlify|fromhex|atob|decompress|"
        r"codecs\.decode|Buffer\.from)",
        r"\b(?:powershell|pwsh)(?:\.exe)?\b[^\n]{0,40}\s-(?:e|en|enc|encodedcommand)\s+[A-Za-z0-9+/=]{16,}",
        r"\[(?:System\.)?Convert\]::FromBase64String[^\n]*\|\s*(?:iex|invoke-expression)",
    ),
    _rule(
        "tells the agent to change Hermes' approval or sandbox settings",
        "hermes_ approval approve sandbox confirmation",
        rf"\b(?:export\s+|set\s+|setx\s+|env\s+)?{_SETTINGS}\s*(?:=|:=|\s+to\b|\s+as\b)",
        rf"\b(?:change|set|switch|flip|turn|put)\s+{_SETTINGS}",
        r"\b(?:disable|turn\s+off|switch\s+off|bypass|skip|remove|deactivate)\s+(?:all\s+)?(?:your|hermes'?s?|the\s+agent'?s?)"
        r"\s+(?:own\s+)?(?:approvals?|approval\s+(?:prompts?|dialogs?|checks?|mode)|sandbox(?:ing)?|confirmations?)\b",
        r"\b(?:approvals?|the\s+sandbox)\s+(?:is|are)\s+(?:now\s+)?(?:disabled|off|not\s+needed|turned\s+off)\b",
        r"\bapproval\s+(?:mode\s+)?(?:to\s+)?[\"'`]?always\b",
        joined=True,
    ),
)


@dataclass(frozen=True)
class Finding:
    """One reason a text was refused: which rule, and the words that tripped it."""

    kind: str
    excerpt: str

    def __str__(self) -> str:
        return f"{self.kind}: “{self.excerpt}”"


def scan(parts: Iterable[str]) -> list[Finding]:
    """Every rule that matches any of ``parts`` (name, description, triggers, body), once each."""
    lines = _Lines.of(normalise("\n".join(parts)).splitlines())
    paragraphs = _Lines.of(_paragraphs(lines.lines))
    findings: list[Finding] = []
    for rule in RULES:
        match = _search(rule, lines)
        if match is None and rule.joined:
            match = _search(rule, paragraphs)
        if match is not None and all(f.kind != rule.kind for f in findings):
            excerpt = " ".join(match.group(0).split())
            findings.append(Finding(rule.kind, excerpt[:80] + ("…" if len(excerpt) > 80 else "")))
    return findings


@dataclass(frozen=True)
class _Lines:
    """Lines, and their lowercase text joined with where each line starts in it: a rule finds the
    lines holding its keywords with ``str.find`` over that text, not a test of every line."""

    lines: list[str]
    lowered: str
    starts: list[int]  # and one past the end

    @classmethod
    def of(cls, lines: list[str]) -> _Lines:
        lowered = [line.lower() for line in lines]
        return cls(lines, "\n".join(lowered), list(accumulate((len(low) + 1 for low in lowered), initial=0)))

    def holding(self, keywords: tuple[str, ...]) -> list[str]:
        """The lines with a keyword (none holds a newline, so a keyword found is inside one line)."""
        rows: set[int] = set()
        for keyword in keywords:
            at = self.lowered.find(keyword)
            while at != -1:
                row = bisect_right(self.starts, at) - 1
                rows.add(row)
                at = self.lowered.find(keyword, self.starts[row + 1])  # on to the next line
        return [self.lines[row] for row in sorted(rows)]


def _search(rule: Rule, text: _Lines) -> re.Match[str] | None:
    chosen = text.holding(rule.keywords)
    if not chosen:
        return None
    for match in rule.pattern.finditer("\n".join(chosen)):
        if rule.confirm is None or rule.confirm(match):
            return match
    return None


def verdict(parts: Iterable[str]) -> str:
    """One line saying why the text is held back, or "" when it passes."""
    return "; ".join(str(f) for f in scan(parts))


def kinds(flag: str) -> list[str]:
    """The rule categories a ``verdict`` line names, in our own words only: what may be told to the
    model about a held-back text, never the text (an excerpt would put the hostile line in the prompt)."""
    named = {rule.kind: flag.find(f"{rule.kind}: ") for rule in RULES}
    return sorted((kind for kind, at in named.items() if at >= 0), key=named.__getitem__)
