"""What names a secret, and what a channel definition holds that looks like one.

Two readers share the names: the redactor (``views/redaction.py``), which blanks a record's
``{"token": …}`` whatever its shape, and the check that refuses a committed channel definition
holding a literal secret (:func:`literal_secret`), since everyone who clones the repository
reads it. A secret there is written ``${NAME}`` and comes from the environment or a secrets file
outside the repository (docs/reaching-people.md).

The check is a heuristic, on purpose strict where a credential usually sits (a URL's user
information, a query parameter or header named for one, a command's ``--password`` argument, a
service whose URL carries its token in the path, a long run of letters and digits) and blind to
ordinary words: a name counts only when its last word is a credential's (``access_token``,
``smtp_password``, ``X-Api-Key``, ``Authorization``), so ``key_file``, ``token_type`` or
``monkey`` are left alone. Each value is read as written and percent-decoded, and names are
compared without case, so ``ACCESS%5FTOKEN=`` is ``access_token=``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from urllib.parse import parse_qsl, unquote, urlsplit

#: ``${NAME}``: a secret taken from the environment or a secrets file when the channel is used.
SECRET_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[_.\-\s]+")


@lru_cache(maxsize=4096)  # records repeat the same few dozen field names
def name_parts(name: str) -> tuple[str, ...]:
    """The lower-case words of a field name: ``clientSecret`` → client, secret;
    ``X-Api-Key`` → x, api, key."""
    return tuple(p for p in _SEPARATORS.split(_CAMEL.sub("_", name).lower()) if p)


# --- field names in records -------------------------------------------------------------------

_SECRET_WORDS = frozenset(
    {"token", "secret", "password", "passwd", "pwd", "apikey", "credential", "credentials"}
)
# A bare "key" is an id as often as a secret (the effect journal's idempotency key): only
# these kinds of key are secrets.
_SECRET_KEY_KINDS = frozenset({"api", "access", "private", "secret", "signing", "client"})


def is_secret_name(name: object) -> bool:
    """Whether a field name says its value is a secret: ``token``, ``GITHUB_TOKEN``,
    ``clientSecret``, ``api_key``, ``db.password``; not ``key``, ``tokens`` or ``keyId``."""
    if not isinstance(name, str) or len(name) > 100:
        return False
    parts = name_parts(name)
    if not parts:
        return False
    if parts[-1] in _SECRET_WORDS:
        return True
    return parts[-1] == "key" and len(parts) > 1 and parts[-2] in _SECRET_KEY_KINDS


# --- channel definitions ------------------------------------------------------------------------

# In a channel's URL, header or command a bare "key", "pass" or "auth" is the credential itself
# (apprise's ?key=, ?pass=, ntfy's ?auth=), and a header names one by its last word.
_CHANNEL_WORDS = _SECRET_WORDS | {
    "key",
    "pass",
    "pw",
    "auth",
    "authorization",
    "access",
    "bearer",
    "cookie",
    "passphrase",
    "signature",
    "sig",
}
# Words written without a separator: ``accesstoken``, ``smtppassword``, ``clientsecret``.
_FUSED = ("token", "password", "passwd", "secret", "apikey", "passphrase")


def names_a_credential(name: str) -> bool:
    """Whether a parameter, header or option name in a channel definition names a credential."""
    # An apprise header is "+Authorization", a payload field ":token".
    parts = name_parts(unquote_all(name).replace("+", " ").replace(":", " "))
    if not parts or len(name) > 100:
        return False
    last = parts[-1]
    return last in _CHANNEL_WORDS or last.endswith(_FUSED)


def unquote_all(text: str) -> str:
    """``text`` percent-decoded until nothing changes (``%255F`` is ``%5F`` is ``_``)."""
    for _ in range(4):
        decoded = unquote(text)
        if decoded == text:
            break
        text = decoded
    return text


# An authorization scheme before the credential: "Bearer ${TOKEN}" holds no literal.
_AUTH_SCHEME = re.compile(r"^(?:bearer|basic|token|digest|bot)(?=\s|$)", re.IGNORECASE)


# What names a value without holding it: ``${NAME}``, and ``$NAME``, which a command run
# through a shell takes from the environment regulator passes on (and which is no secret
# anywhere else).
_REFERENCE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}|\$[A-Za-z_][A-Za-z0-9_]*")


def _is_literal(value: str, *, scheme: bool = True) -> bool:
    """Whether ``value`` holds anything besides references (and, in a header, the
    authorization scheme before them)."""
    rest = _REFERENCE.sub(" ", unquote_all(value).replace("+", " ")).strip()
    if scheme:
        rest = _AUTH_SCHEME.sub("", rest)
    return bool(rest.strip(" \t\"'"))


# A run this long, mixing letters and digits, is taken for a token. In a command's argument,
# which is often a path, only when letters and digits alternate a few times ("aB3dE5fG7…", a
# hex digest) as a directory's name does not ("test_a_blocking_question_owed_0").
_TOKENISH = re.compile(r"(?=[A-Za-z0-9_-]*[0-9])(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{24,}")
_ALTERNATION = re.compile(r"[A-Za-z](?=[0-9])|[0-9](?=[A-Za-z])")


def _tokenish(text: str, *, path: bool) -> bool:
    runs = _TOKENISH.finditer(_REFERENCE.sub(" ", text))
    if not path:
        return next(runs, None) is not None
    return any(len(_ALTERNATION.findall(m.group())) >= 3 for m in runs)


# Services whose URL carries its credential in the path (slack://T/B/C, discord://id/token…).
_TOKEN_IN_PATH = frozenset(
    {"slack", "discord", "tgram", "pover", "msteams", "gchat", "matrix", "matrixs", "pbul"}
)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]*")
# name=value or name: value, the name starting where a word can (the start, a space, a quote,
# a query's ? & ;, a path's /, a fragment's #, an apprise header's +). A quoted name ("token":)
# too. Not a scheme's "://".
# Wrapped in a lookahead, so that every start is tried: one value never hides the next name.
_ASSIGNMENT = re.compile(
    r"(?=(?:^|(?<=[\s?&;,/#\"'{(+]))"
    r"(?P<name>[A-Za-z][A-Za-z0-9_.\-]*)[\"']?\s*(?P<sep>[=:])(?!//)\s*[\"']?"
    r"(?P<value>(?:(?:bearer|basic|token|digest|bot)(?:\s|\+)+)?[^&;,#\s\"']*))",
    re.IGNORECASE,
)
_FLAG = re.compile(r"^--?(?P<name>[A-Za-z][A-Za-z0-9_-]*)(?:=(?P<value>.*))?$", re.DOTALL)


def _in_url(url: str) -> str | None:
    parts = urlsplit(SECRET_REFERENCE.sub("ref", url))
    netloc = urlsplit(url).netloc
    if "@" in netloc:
        userinfo = netloc.rsplit("@", 1)[0]
        if ":" in userinfo and _is_literal(userinfo.split(":", 1)[1], scheme=False):
            return "a password in the URL"
    # parse_qsl decodes + as a space: an apprise header "+Authorization" arrives " Authorization".
    for name, item in parse_qsl(urlsplit(url).query, keep_blank_values=True):
        if names_a_credential(name) and _is_literal(item):
            return f"a literal {_shown(name)}= parameter"
    if parts.scheme.lower() in _TOKEN_IN_PATH:
        for segment in [urlsplit(url).netloc, *urlsplit(url).path.split("/")]:
            if segment and not segment.startswith("#") and not SECRET_REFERENCE.search(segment):
                return f"a literal token in a {parts.scheme}:// URL"
    return None


def _shown(name: str) -> str:
    """A parameter's name as a refusal names it (never its value)."""
    return unquote_all(name).strip(" +-:")[:40]


def _in_text(text: str, *, argument: bool = False) -> str | None:
    for url in _URL.findall(text):
        if why := _in_url(url):
            return why
    decoded = unquote_all(text)
    for match in _ASSIGNMENT.finditer(decoded):
        header = match["sep"] == ":"
        # A header's value runs to the end of its text or field: "Token: see the vault" is prose.
        end = match.end("value")
        if header and decoded[end : end + 1] not in ("", *"\"',;}&#\n"):
            continue
        if names_a_credential(match["name"]) and _is_literal(match["value"]):
            what = "header" if header else "assignment"
            return f"a literal {_shown(match['name'])} {what}"
    if _tokenish(decoded, path=argument):
        return "what looks like a token"
    return None


def literal_secret(value: str) -> str | None:
    """Why ``value`` (a channel's URL or address) seems to hold a literal secret, if it does;
    the reason never quotes the value."""
    return _in_text(value)


def literal_secret_in_command(command: Sequence[str]) -> str | None:
    """:func:`literal_secret` for a command's arguments, and an option naming a credential
    followed by a literal value (``--password hunter2``, ``-u alice:hunter2``)."""
    for at, arg in enumerate(command):
        if why := _in_text(arg, argument=True):
            return f"{why} in command[{at}]"
        flag = _FLAG.match(arg)
        if flag is None:
            continue
        name = flag["name"]
        value = flag["value"]
        if value is None:
            value = command[at + 1] if at + 1 < len(command) else ""
            if value.startswith("-"):
                continue
        if names_a_credential(name) and _is_literal(value):
            return f"a literal --{_shown(name)} in command[{at}]"
        # curl's -u/--user user:password
        password = value.split(":", 1)[1] if ":" in value else ""
        if name in ("u", "user") and _is_literal(password, scheme=False):
            return f"a password in --user in command[{at}]"
    return None
