"""Refuse guessable dashboard secrets before anything is served.

Why here and not in config: only the public dashboard needs them strong; the terminal never uses
them. The password list is small on purpose: it only has to hold passwords of 12 characters or more
(anything shorter is refused anyway) that sit at the top of every cracking list, the way Home
Assistant and code-server refuse the obvious ones. A password is compared in a normalized form
(lower case, without spaces, dashes, dots and underscores), so "Correct-Horse-Battery-Staple" counts.
"""

from __future__ import annotations

import re
from collections import Counter

MIN_PASSWORD_CHARS = 12
MIN_SECRET_CHARS = 32
MIN_PASSWORD_DISTINCT = 5  # "aaaaaaaaaaaa", "abababababab": long but one or two keystrokes repeated
MIN_SECRET_DISTINCT = 8
MAX_SECRET_SHARE = 0.25  # no character may make up more than a quarter of the secret

_SEPARATORS = re.compile(r"[\s\-_.]+")

COMMON_PASSWORDS = frozenset({
    "correcthorsebatterystaple", "password1234", "password12345", "password123456", "passwordpassword",
    "password123!", "password1234!", "mypassword123", "mysecretpassword", "supersecretpassword",
    "secretpassword", "changemechangeme", "changeme1234", "changeme123456", "letmein123456",
    "letmeinletmein", "administrator", "administrator1", "admin1234567", "adminadminadmin",
    "adminpassword", "admin123456789", "rootpassword", "qwertyuiopasdfghjkl", "qwertyuiop123",
    "qwertyuiopas", "qwerty123456", "qwerty1234567", "1q2w3e4r5t6y", "1qaz2wsx3edc", "zaq12wsxcde3",
    "123456789012", "1234567890123", "12345678901234", "123456789abc", "abcdefghijkl", "abcdefghijklm",
    "abcd12345678", "abc123456789", "iloveyou1234", "iloveyouiloveyou", "trustno1trustno1",
    "welcome12345", "welcome123456", "welcomewelcome", "football1234", "baseball1234", "monkey123456",
    "dragon123456", "sunshine1234", "princess1234", "starwars1234", "michael12345", "superman1234",
    "batman123456", "whatever1234", "hellohello12", "helloworld12", "helloworld123", "thisisapassword",
    "thisismypassword", "opensesame123", "hermespassword", "hermes123456", "hermeshermes",
    "browserpassword", "passw0rdpassw0rd", "p@ssw0rd1234", "p@ssword1234", "pa55word1234",
    "1234qwerasdf", "asdfghjkl123", "asdfasdfasdf", "qweasdzxc123", "aaaaaaaaaaaa", "111111111111",
    "000000000000", "123123123123", "abcabcabcabc", "testtesttest", "test12345678", "testpassword",
    "dashboardpassword", "defaultpassword", "nopassword123", "apassword123", "alongpassphrase",
    "yourownpassphrasehere",  # the README's example: copied examples are exactly what gets guessed
})


def _normalized(password: str) -> str:
    return _SEPARATORS.sub("", password.strip().lower())


def password_problem(password: str) -> str | None:
    """Why ``password`` is too weak for a public dashboard, or None when it will do."""
    if len(password) < MIN_PASSWORD_CHARS:
        return f"it is shorter than {MIN_PASSWORD_CHARS} characters"
    if _normalized(password) in COMMON_PASSWORDS:
        return "it is on the list of well-known passwords every attacker tries first"
    if len(set(password)) < MIN_PASSWORD_DISTINCT:
        return f"it uses fewer than {MIN_PASSWORD_DISTINCT} different characters"
    return None


def secret_problem(secret: str) -> str | None:
    """Why ``secret`` cannot sign session cookies safely, or None."""
    if len(secret) < MIN_SECRET_CHARS:
        return f"it is shorter than {MIN_SECRET_CHARS} characters"
    most = Counter(secret).most_common(1)[0][1]
    if most > MAX_SECRET_SHARE * len(secret) or len(set(secret)) < MIN_SECRET_DISTINCT:
        return "it is mostly one character, not random"
    return None
