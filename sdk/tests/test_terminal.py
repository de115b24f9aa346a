"""The SDK's "cli" approval notice prints the container's tool name and
reason to a person's terminal through mcp_describe.one_line (the MCP
server's texts use it too): format characters (bidi overrides,
zero-width, tags), controls and separators are escaped, as base/term_escape.c
does."""
import unicodedata
import unittest


from tollgate_sdk._text import one_line as _for_terminal


class Terminal(unittest.TestCase):
    def test_every_format_character_is_escaped(self):
        for cp in range(0x110000):
            if 0xD800 <= cp <= 0xDFFF:
                continue
            ch = chr(cp)
            cat = unicodedata.category(ch)
            if cat in ("Cc", "Cf", "Zl", "Zp") and not ch.isspace():
                shown = _for_terminal("a" + ch + "b")
                self.assertTrue(shown.isascii(), "U+%04X" % cp)
                self.assertIn("\\u%04x" % cp if cp <= 0xFFFF else "\\U%08x" % cp, shown)

    def test_separators_do_not_reach_the_terminal_raw(self):
        for ch in ("\n", "\r", "\u2028", "\u2029", "\x0b"):
            self.assertNotIn(ch, _for_terminal("a" + ch + "b"))

    def test_an_override_is_visible(self):
        self.assertEqual(_for_terminal("refund \u202e00005"), "refund \\u202e00005")

    def test_ordinary_text_is_kept(self):
        for s in ("café", "中文", "\U0001F600", "a-b_c", "\u2026"):
            self.assertEqual(_for_terminal(s), s)


if __name__ == "__main__":
    unittest.main()
