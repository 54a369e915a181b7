"""Write the look-alike letters the secrets rule folds (``resources/confusables-latin.txt``).

Reads Unicode's ``confusables.txt`` (UTS #39, Unicode Security Mechanisms:
https://www.unicode.org/Public/security/latest/confusables.txt) and keeps the characters of
the scripts people borrow look-alikes from - Latin beyond ASCII, IPA, Greek, Cyrillic,
Armenian, Cherokee, letterlike and number forms, fullwidth forms, mathematical letters - whose
prototype reads as one ASCII letter or digit. A prototype of several letters that is also the
prototype of an ASCII letter is resolved to it (``rn`` is the prototype of ``m``, so Cyrillic
``м`` folds to ``m``); ``l`` and ``O`` are read as ``I`` for a capital letter and as ``1`` /
``0`` for a digit. A prototype that is a Latin small capital (``ʜ``, ``ᴛ``) or kra (``ĸ``)
reads as its letter, so Cyrillic ``н``, ``т``, ``к`` fold to ``h``, ``t``, ``k``; and two
Cyrillic letters whose prototype is no Latin letter but which read as one in running text are
added by hand (:data:`BY_HAND`: ``м`` → ``m``, ``п`` → ``n``).

    python scripts/confusables_subset.py confusables.txt ["where the copy came from"] \
        > nocturne_desktop/resources/confusables-latin.txt
"""

from __future__ import annotations

import re
import sys
import unicodedata
from pathlib import Path

RANGES = (
    (0x0080, 0x02FF), (0x0370, 0x058F), (0x13A0, 0x13FF), (0x1C80, 0x1C8F), (0x1D00, 0x1DBF),
    (0x1E00, 0x1FFF), (0x2100, 0x218F), (0x2C60, 0x2C7F), (0x2DE0, 0x2DFF), (0xA640, 0xA69F),
    (0xA720, 0xA7FF), (0xAB30, 0xABBF), (0xFF00, 0xFFEF), (0x1D400, 0x1D7FF),
)
LINE = re.compile(r"^([0-9A-F]{4,6})\s*;\s*((?:[0-9A-F]{4,6}\s*)+);")
BY_HAND = {"\u043c": "m", "\u041c": "M", "\u043f": "n"}
SMALL_CAPITAL = re.compile(r"LATIN LETTER SMALL CAPITAL ([A-Z])")
ALNUM = [chr(c) for c in range(0x30, 0x3A)] + [chr(c) for c in range(0x41, 0x5B)] + [
    chr(c) for c in range(0x61, 0x7B)]


def _in_scope(cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in RANGES)


def subset(lines: list[str]) -> tuple[str, list[tuple[str, str]]]:
    version = "; ".join(ln.strip("#\ufeff \n") for ln in lines[:20]
                        if "Version:" in ln or "Date:" in ln) or "unknown version"
    table: dict[str, str] = {}
    for line in lines:
        m = LINE.match(line)
        if m:
            src = chr(int(m.group(1), 16))
            table[src] = "".join(chr(int(h, 16)) for h in m.group(2).split())
    by_proto: dict[str, list[str]] = {}
    for c in ALNUM:
        by_proto.setdefault(table.get(c, c), []).append(c)
    out: list[tuple[str, str]] = []
    for src, proto in sorted({**table, **BY_HAND}.items()):
        if not _in_scope(ord(src)):
            continue
        if src in BY_HAND:
            out.append((src, BY_HAND[src]))
            continue
        if len(proto) == 1:
            small = SMALL_CAPITAL.fullmatch(unicodedata.name(proto, ""))
            if small is not None:
                proto = small.group(1).lower()
            elif unicodedata.name(proto, "") == "LATIN SMALL LETTER KRA":
                proto = "k"
        options = by_proto.get(proto, [])
        if not options:
            continue
        digit = unicodedata.category(src) == "Nd" or "DIGIT" in unicodedata.name(src, "")
        if len(options) > 1:
            digits = [o for o in options if o.isdigit()]
            upper = [o for o in options if o.isupper()]
            pick = digits if digit and digits else upper if src.isupper() and upper else [
                o for o in options if not o.isdigit()] or options
            target = pick[0] if proto not in pick else proto
        else:
            target = options[0]
        out.append((src, target))
    return version, out


def main(argv: list[str]) -> int:
    lines = Path(argv[1]).read_text("utf-8").splitlines()
    version, rows = subset(lines)
    print("# Look-alike letters folded by the secrets rule (core/judges/sensitive.py).")
    print("# A subset of Unicode confusables.txt (UTS #39, Unicode Security Mechanisms),")
    print("# https://www.unicode.org/Public/security/latest/confusables.txt,")
    print(f"# {version}; (c) Unicode, Inc., under the Unicode License v3")
    print("# (https://www.unicode.org/license.txt). Written by scripts/confusables_subset.py")
    if len(argv) > 2:
        print(f"# from {argv[2]}:")
    print("# Latin beyond ASCII, IPA, Greek, Cyrillic, Armenian, Cherokee, letterlike, fullwidth")
    print("# and mathematical characters whose prototype reads as one ASCII letter or digit")
    print("# (a small capital or kra as its letter; by hand: Cyrillic em and pe as m and n).")
    print("# source ; ASCII # name")
    for src, target in rows:
        print(f"{ord(src):04X} ; {ord(target):04X} # {unicodedata.name(src, '?')} -> {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
