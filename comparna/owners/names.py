"""Names an owner may give a method (issue 26): visible characters only, and never a look-alike of a name
that exists.

A method's name is what the rankings show, so a name that renders like another one ("RNAfold-MFE" with a
zero-width space, with a Cyrillic "а", with "l" for "1") would pass an owner's method off as someone
else's. A name is NFKC-normalised, may hold only letters, numbers, punctuation and plain spaces (Unicode
categories L, N, P and Zs: no format characters such as U+200B, no controls, marks or symbols), and its
*skeleton* — casefolded, NFKC, without format characters, with a small map of look-alike letters and
digits, without punctuation or spaces — must differ from every existing method's. Every refusal because of
another method says the same thing, whether that method is public, private to another owner or only
similar: nothing is told about other accounts.
"""

from __future__ import annotations

import unicodedata

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


def normalise_name(name: str) -> str:
    """The stored form of an owner's method name: NFKC, without surrounding spaces."""
    return unicodedata.normalize("NFKC", name).strip()


def name_problem(name: str) -> str | None:
    """Why ``name`` (normalised) cannot be a method name, or None. Says which character, by code point."""
    if not name:
        return "Give the method a name."
    for ch in name:
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
    return None


def skeleton(name: str) -> str:
    """What ``name`` looks like: casefolded NFKC without format characters, look-alikes mapped to one letter,
    punctuation and spaces dropped (so "RNAfold-MFE", "rnafold_mfe" and "RNAfоld MFE" share one)."""
    text = unicodedata.normalize("NFKC", name).casefold()
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    text = unicodedata.normalize("NFKC", text.translate(HOMOGLYPHS))
    text = text.replace("rn", "m")  # two letters that render as one
    return "".join(ch for ch in text if unicodedata.category(ch)[0] in ("L", "N"))


def conflicts(name: str, existing) -> bool:
    """Whether ``name`` looks like any of the ``existing`` names (an iterable of strings)."""
    key = skeleton(name)
    return any(skeleton(other) == key for other in existing)
