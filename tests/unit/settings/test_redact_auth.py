"""Every echoed Authorization header, of any scheme, is hidden in what is shown (issue 26, case 5)."""

from __future__ import annotations

import base64

import pytest

from ragcore.settings.redact import redact_text

BASIC = base64.b64encode(b"user:secretpass").decode()


@pytest.mark.parametrize("echo", [
    f"401 Unauthorized: Authorization: Basic {BASIC}",
    f'{{"error": "bad auth", "authorization": "Basic {BASIC}"}}',
    f"headers={{'Authorization': 'Basic {BASIC}'}}",
    f"proxy said: Proxy-Authorization: Basic {BASIC}",
    f"you sent Basic {BASIC} which we refuse",
])
def test_basic_credentials_are_hidden(echo: str) -> None:
    out = redact_text(echo)
    assert BASIC not in out and BASIC[:12] not in out and "***" in out


@pytest.mark.parametrize("value", [
    'Digest username="u", realm="r", nonce="abc123", response="6629fae49393a05397450978507c4ef1"',
    "Token 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b",
    "ApiKey c2VjcmV0LWtleS0xMjM0NQ==",
    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
    "Bearer sk-proj-abcdef123456",
    "SomeCustomScheme zzzz-secret-value",
])
def test_any_scheme_echoed_as_a_header_is_hidden(value: str) -> None:
    secret = value.split(" ", 1)[1]
    for text in (f"Authorization: {value}", f'{{"Authorization": "{value.replace(chr(34), chr(92) + chr(34))}"}}'):
        out = redact_text(text)
        assert secret not in out and "Authorization" in out and "***" in out, out
        assert "5d672d79" not in out and "9944b091" not in out and "zzzz-secret" not in out


def test_prose_about_schemes_is_left_alone() -> None:
    text = "Basic authentication and Token based access are described in the Digest section."
    assert redact_text(text) == text
