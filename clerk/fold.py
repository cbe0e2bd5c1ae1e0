"""How a forget compares text: as a reader sees it, with offsets back into the original (SPEC §9).

Two strings that render alike must compare equal, or a forgotten value survives by a character
nobody can see. :func:`fold` maps a text to its comparison form in three steps:

1. **Default-ignorable code points are dropped**: the Unicode property
   ``Default_Ignorable_Code_Point`` (DerivedCoreProperties.txt), taken from the ``regex``
   package's Unicode tables: zero-width space, joiners and non-joiners, the soft hyphen, bidi
   marks, embeddings and isolates, the word joiner and invisible operators, variation
   selectors, the byte-order mark, tag characters, Hangul fillers. A renderer shows none of them,
   so "Os\\u200dlo", "Os\\u00adlo" and "\\u200fOslo" all read as "Oslo".
2. **NFKC, full case folding, NFKC again** (``str.casefold``): compatibility forms
   (full-width "Ｏｓｌｏ", the ligature "ﬁ"), case in every script that has it ("Straße" and
   "STRASSE", "ΣΟΦΙΑ" and "σοφια"), composed and decomposed accents alike.
3. **A combining dot above right after "i" or "j" is dropped**: both letters are Soft_Dotted (the
   dot is what they already show), and it is what the full case fold of the Turkish capital "İ"
   leaves ("i̇"). So "İzmir" and "izmir" compare equal, as a reader takes them to be.

The text is folded one *cluster* at a time: a character with the characters that attach to it
(combining marks, Hangul medial and final jamo, a half-width voiced mark), ignorables skipped
inside it. Each folded character records the original span of its cluster, so a match in the
folded text maps back to whole original characters, any ignorables between them included, even
where folding changes the length ("ß" -> "ss", "ﬁ" -> "fi", "İ" -> "i"). Values are folded by the
same function as the texts they are looked for in, so both sides always agree.

    python -m doctest clerk/fold.py -v
"""

from __future__ import annotations

import functools
import re
import unicodedata

import regex

#: One default-ignorable code point (Unicode's Default_Ignorable_Code_Point property).
IGNORABLE = regex.compile(r"\p{Default_Ignorable_Code_Point}")
#: The dot above (U+0307) that a soft-dotted i or j shows already.
_SOFT_DOT = re.compile("(?<=[ij])\u0307")


@functools.lru_cache(maxsize=4096)
def ignorable(ch: str) -> bool:
    """True for a default-ignorable code point (rendered as nothing).

    >>> [ignorable(c) for c in ("\\u200b", "\\u200d", "\\u00ad", "\\u200f", "\\ufe0f", "\\u2060", "a", " ", "\\u0301")]
    [True, True, True, True, True, True, False, False, False]
    """
    return IGNORABLE.match(ch) is not None


@functools.lru_cache(maxsize=65536)
def _fold_cluster(chars: str) -> str:
    """The comparison form of one cluster (ignorables already removed)."""
    out = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", chars).casefold())
    if "\u0307" in out:
        out = unicodedata.normalize("NFKC", _SOFT_DOT.sub("", out))
    return out


def _attaches(ch: str) -> bool:
    """True when ``ch`` belongs to the character before it (a combining mark, a Hangul vowel or
    final jamo, or a character whose NFKC form starts with a combining mark, e.g. U+FF9E)."""
    if unicodedata.combining(ch) or "\u1160" <= ch <= "\u11ff":
        return True
    norm = unicodedata.normalize("NFKC", ch)
    return bool(norm) and norm != ch and unicodedata.combining(norm[0]) != 0


def folded(text: str) -> tuple[str, list[int], list[int]]:
    """(folded text, start, end): ``start[k]`` / ``end[k]`` delimit the original characters that
    the folded text's character ``k`` comes from (its cluster).

    >>> f, start, end = folded("Stra\\u00dfe")
    >>> f, start[4:6], end[4:6]
    ('strasse', [4, 4], [5, 5])
    >>> f, start, end = folded("\\u0130z\\u200dmir")
    >>> f, start, end
    ('izmir', [0, 1, 3, 4, 5], [1, 2, 4, 5, 6])
    """
    if text.isascii():  # NFKC and case folding of ASCII is lower(); one character each, none ignorable
        return text.lower(), list(range(len(text))), list(range(1, len(text) + 1))
    clusters: list[list] = []  # [start, end, visible characters]
    for pos, ch in enumerate(text):
        if ignorable(ch):
            continue
        if clusters and _attaches(ch):
            clusters[-1][1] = pos + 1
            clusters[-1][2] += ch
        else:
            clusters.append([pos, pos + 1, ch])
    parts: list[str] = []
    start: list[int] = []
    end: list[int] = []
    for a, b, chars in clusters:
        piece = _fold_cluster(chars)
        parts.append(piece)
        start += [a] * len(piece)
        end += [b] * len(piece)
    return "".join(parts), start, end


def fold(text: str) -> str:
    """``text`` in the form matching compares: ignorables dropped, NFKC, case folded, NFKC.

    >>> fold("Zu\\u0308RICH") == fold("zürich"), fold("Ｏｓｌｏ"), fold("Straße"), fold("Os\\u200dlo")
    (True, 'oslo', 'strasse', 'oslo')
    >>> fold("\\u0130zmir") == fold("izmir") == fold("I\\u0307ZMIR"), fold("\\ufb01le"), fold("\\u200b\\u00ad")
    (True, 'file', '')
    """
    return folded(text)[0]
