"""The SDK's "cli" approval notice prints the container's tool name and
reason to a person's terminal through _text.one_line (the MCP server's
texts use it too): format characters (bidi overrides, zero-width, tags),
controls and separators are escaped, as base/term_escape.c does."""
import unicodedata

import pytest

from tollgate_sdk._text import one_line


def test_every_format_character_is_escaped() -> None:
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") and not ch.isspace():
            shown = one_line("a" + ch + "b")
            assert shown.isascii(), "U+%04X" % cp
            assert ("\\u%04x" % cp if cp <= 0xFFFF else "\\U%08x" % cp) in shown


@pytest.mark.parametrize("ch", ["\n", "\r", "\u2028", "\u2029", "\x0b"])
def test_separators_do_not_reach_the_terminal_raw(ch: str) -> None:
    assert ch not in one_line("a" + ch + "b")


def test_an_override_is_visible() -> None:
    assert one_line("refund \u202e00005") == "refund \\u202e00005"


@pytest.mark.parametrize("s", ["café", "中文", "\U0001F600", "a-b_c", "\u2026"])
def test_ordinary_text_is_kept(s: str) -> None:
    assert one_line(s) == s
