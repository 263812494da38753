"""Redaction: canaries and credential shapes never reach the screen; nothing else changes."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from regulator.store import Layout
from regulator.views.redaction import MAX_CHARS, REDACTED, Redactor, for_layout

CANARY = "CANARY-5e1f0c9a7d"
REDACTOR = Redactor([CANARY, "tiny", "  padded-canary-42  ", "a.b*c+d?(e)"])

# Built from parts, so that no credential-shaped literal sits in the repository.
SECRETS = {
    "openai": "sk-" + "proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
    "anthropic": "sk-ant-" + "api03-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe",
    "aws": "AKIA" + "IOSFODNN7EXAMPLE",
    "github": "ghp_" + "16C7e42F292c6912E7710c838347Ae178B4a",
    "github-oauth": "gho_" + "16C7e42F292c6912E7710c838347Ae178B4a",
    "github-fine-grained": "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    "slack": "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "stripe": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "npm": "npm_" + "abcdefghijklmnopqrstuvwxyz0123456789",
    "google": "AIza" + "SyA-1234567890abcdefghijklmnopqrstu",
    "jwt": "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0" + ".dozjgNryP4J3jVmNHl0w5N",
}


@pytest.mark.parametrize("text", [CANARY, f"x{CANARY}y", f"{CANARY} and {CANARY} again"])
def test_a_canary_never_appears(text: str) -> None:
    out = REDACTOR.redact(text)
    assert CANARY not in out
    assert REDACTED in out


def test_canaries_are_matched_exactly_trimmed_and_only_from_eight_characters() -> None:
    assert REDACTOR.redact("tiny things") == "tiny things"  # under 8: would blank words
    assert REDACTOR.redact("see padded-canary-42.") == f"see {REDACTED}."
    # A canary holding regex syntax is a literal value, not a pattern.
    assert REDACTOR.redact("a.b*c+d?(e)") == REDACTED
    assert REDACTOR.redact("aXb*c+d?(e)") == "aXb*c+d?(e)"
    assert CANARY not in repr(REDACTOR)


def test_a_canary_across_the_cap_leaves_no_fragment() -> None:
    text = "x" * (MAX_CHARS - 5) + CANARY + "y" * 100
    out = REDACTOR.redact(text)
    assert CANARY[:5] not in out
    assert out.endswith("…")
    assert REDACTED[:3] not in out  # the cap does not cut a marker in two


def test_a_canary_far_beyond_the_scan_limit_is_not_shown_either() -> None:
    text = "z" * 70_000 + CANARY
    out = REDACTOR.redact(text)
    assert CANARY not in out
    assert len(out) == MAX_CHARS + 1


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_each_credential_shape_is_redacted(name: str) -> None:
    secret = SECRETS[name]
    for text in (secret, f"found {secret} in the log", f"key='{secret}'", f"({secret})"):
        out = REDACTOR.redact(text)
        assert secret not in out, (name, out)
        assert secret[-12:] not in out, (name, out)
        assert REDACTED in out


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Authorization: Bearer abc123.def456-ghi", f"Authorization: Bearer {REDACTED}"),
        ("export GITHUB_TOKEN=t0ps3cr3t", f"export GITHUB_TOKEN={REDACTED}"),
        ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG", f"AWS_SECRET_ACCESS_KEY={REDACTED}"),
        ("DB_PASSWORD='hunter2 hunter2' next", f"DB_PASSWORD={REDACTED} next"),
        ("OPENAI_API_KEY = abc123xyz", f"OPENAI_API_KEY = {REDACTED}"),
        ('{"api_key": "abc123"}', '{"api_key": ' + REDACTED + "}"),
        ("SLACK_SECRET: abc123", f"SLACK_SECRET: {REDACTED}"),
        ("https://deploy:s3cr3t@example.com/repo", f"https://deploy:{REDACTED}@example.com/repo"),
    ],
)
def test_bearer_tokens_assignments_and_url_passwords_keep_their_name(
    text: str, expected: str
) -> None:
    assert REDACTOR.redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nabc\n-----END RSA PRIVATE KEY-----",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAA\n"
        "-----END OPENSSH PRIVATE KEY-----",
        "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0B\n",  # cut off: no END line
    ],
)
def test_a_private_key_block_is_redacted_whole(text: str) -> None:
    out = REDACTOR.redact(f"before\n{text}\nafter")
    assert out.startswith(f"before\n{REDACTED}")
    assert "MII" not in out and "b3Blbn" not in out
    if "-----END" in text:
        assert out.endswith("\nafter")


@pytest.mark.parametrize(
    "text",
    [
        "task-list-for-the-team-2024-overview",  # "sk-…" inside a word
        "monkey=3 donkey=4",  # a keyword only as a whole segment
        "the bearer of the news",
        "pytest: passed=3 failed=0",
        "AKIA1234",  # too short for an access key
        "ghp_short",
        "the primary token: rotate it",  # prose with a colon
        "sk-learn is a library",
    ],
)
def test_look_alikes_are_left_alone(text: str) -> None:
    assert REDACTOR.redact(text) == text


@pytest.mark.parametrize(
    "markup", ["[bold]x[/]", "[link=https://evil.example]click[/link]", "[red on white]!"]
)
def test_rich_markup_is_left_as_literal_text(markup: str) -> None:
    assert REDACTOR.redact(markup) == markup
    assert REDACTOR.safe(markup) == markup


@pytest.mark.parametrize(
    "text",
    [
        "\x1b[2J\x1b[31mred\x1b[0m",  # CSI: clear the screen, colour
        "\x1b]52;c;SGVsbG8gd29ybGQ=\x07",  # OSC 52: write the clipboard
        "\x9b31m",  # C1 CSI
        "bell\x07 and nul\x00",
    ],
)
def test_safe_escapes_terminal_control_sequences(text: str) -> None:
    out = REDACTOR.safe(text)
    assert all(ch not in out for ch in "\x1b\x07\x9b\x00")
    assert "\\x" in out


def test_safe_redacts_first_and_keeps_newlines_only_when_asked() -> None:
    text = f"line one {CANARY}\n\x1b[1mline two"
    assert REDACTOR.safe(text) == f"line one {REDACTED}\\x0a\\x1b[1mline two"
    assert REDACTOR.safe(text, newlines=True) == f"line one {REDACTED}\n\\x1b[1mline two"


def test_long_text_is_capped_with_an_ellipsis() -> None:
    assert REDACTOR.redact("a" * MAX_CHARS) == "a" * MAX_CHARS
    out = REDACTOR.redact("a" * (MAX_CHARS + 1))
    assert out == "a" * MAX_CHARS + "…"
    text, removed = REDACTOR.scrub("b" * 5000)
    assert len(text) == MAX_CHARS + 1
    assert not removed  # capping alone is not a removal


def test_redaction_is_fast_and_never_raises() -> None:
    huge = ("word " * 2_000_000) + SECRETS["github"]
    start = time.process_time()  # CPU time: the suite's other workers share the CPUs
    out = REDACTOR.redact(huge)
    assert time.process_time() - start < 1.0
    assert len(out) == MAX_CHARS + 1
    for odd in ("\ud800 lone surrogate", "", "\x00" * 10, "«redacted»" * 300):
        assert isinstance(REDACTOR.redact(odd), str)
        assert isinstance(REDACTOR.safe(odd), str)
    assert REDACTOR.redact(12345) == "12345"  # type: ignore[arg-type]


def test_json_values_are_redacted_string_by_string_without_touching_the_input() -> None:
    record = {
        "question": f"rotate {SECRETS['aws']}?",
        "evidence": [{"ref": CANARY, "count": 3}, None, True],
        CANARY: 1.5,
    }
    out, removed = REDACTOR.scrub_json(record)
    assert removed
    assert out == {
        "question": f"rotate {REDACTED}?",
        "evidence": [{"ref": REDACTED, "count": 3}, None, True],
        REDACTED: 1.5,
    }
    assert record["evidence"][0]["ref"] == CANARY  # type: ignore[index]
    assert REDACTOR.redact_json({"a": ["plain"]}) == {"a": ["plain"]}
    assert REDACTOR.scrub_json({"a": ["plain"]})[1] is False


def test_for_layout_reads_the_instance_canaries(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    assert for_layout(layout).canaries == ()  # no .regulator/canaries at all
    layout.state.mkdir()
    layout.canaries.write_text(f"{CANARY}\n\nshort\n", encoding="utf-8")
    redactor = Redactor.for_layout(layout)
    assert redactor.canaries == (CANARY,)
    assert redactor.redact(f"it is {CANARY}") == f"it is {REDACTED}"


def test_a_field_named_as_a_secret_has_its_value_redacted_whatever_its_shape() -> None:
    record = {
        "requestedChange": {"token": "plain", "clientSecret": "x", "api_key": "y"},
        # An idempotency key, a session id, a token count: names, not secrets.
        "key": "6eec9813247dc2ce008b0eb4",
        "sessionId": "script-1",
        "tokens": "42000",
    }
    assert REDACTOR.redact_json(record) == {
        "requestedChange": {"token": REDACTED, "clientSecret": REDACTED, "api_key": REDACTED},
        "key": "6eec9813247dc2ce008b0eb4",
        "sessionId": "script-1",
        "tokens": "42000",
    }
