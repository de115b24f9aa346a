"""Text made safe to show a person or a client on one line: controls and
Unicode format characters escaped, cut at a limit."""
from __future__ import annotations

import json
import unicodedata

LINE_MAX = 300


def one_line(text: object, limit: int = LINE_MAX) -> str:
    """Text on one line, controls and Unicode format characters (bidi
    overrides, zero-width) escaped, cut at limit."""
    out = []
    for ch in " ".join(str(text or "").split()):
        if unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs", "Zl", "Zp"):
            out.append("\\u%04x" % ord(ch) if ord(ch) < 0x10000 else "\\U%08x" % ord(ch))
        else:
            out.append(ch)
    s = "".join(out)
    return s if len(s) <= limit else s[:limit - 1] + "~"


def escape_json(value: object) -> str:
    """value as JSON with every non-ASCII character escaped: bidi
    overrides and zero-width characters cannot reorder or hide it."""
    return json.dumps(value, ensure_ascii=True, sort_keys=True, default=str)
