"""View text for the transcript baselines: session blocks, turn lines and budget fitting.

A transcript view is a list of lines: a ``[session k]`` header, then ``role: content`` lines from
``prompts.render_turns``. Fitting to a token budget keeps whole lines (never half a token) and
drops the *oldest* first, because a newer statement supersedes an older one.

    python -m doctest clerk/memory/text.py -v
"""

from __future__ import annotations

from collections.abc import Callable

from clerk import prompts

#: The header text is prompt text, so it lives in ``clerk.prompts``; re-exported for the views.
session_header = prompts.session_header


def session_lines(session: dict) -> list[str]:
    """A session as view lines: header, then one line per turn.

    >>> session_lines({"index": 1, "turns": [{"role": "user", "content": "I moved to Oslo."}]})
    ['[session 1]', 'user: I moved to Oslo.']
    """
    return [session_header(session["index"])] + prompts.render_turns(session["turns"]).split("\n")


def fit_newest(
    lines: list[str], budget: int, line_tokens: Callable[[str], int], count_tokens: Callable[[str], int]
) -> tuple[list[str], bool]:
    """The longest suffix of ``lines`` whose joined text has at most ``budget`` tokens.

    Args:
        lines: view lines, oldest first.
        budget: token budget (>= 0).
        line_tokens: token count of one line (may be cached); a newline is counted as one token.
        count_tokens: exact token count of a text, used to confirm the final cut.

    Returns:
        (kept lines, whether any line was dropped).

    >>> fit_newest(["a b", "c", "d e f"], 5, lambda s: len(s.split()), lambda s: len(s.split()))
    (['c', 'd e f'], True)
    >>> fit_newest(["a", "b"], 9, lambda s: 1, lambda s: len(s.split()))
    (['a', 'b'], False)
    """
    total, start = 0, len(lines)
    while start > 0:
        cost = line_tokens(lines[start - 1]) + (1 if start < len(lines) else 0)
        if total + cost > budget:
            break
        total += cost
        start -= 1
    kept = lines[start:]
    # Joint tokenisation can differ from the sum of the parts: confirm, dropping more if needed.
    while kept and count_tokens("\n".join(kept)) > budget:
        kept = kept[1:]
    return kept, len(kept) < len(lines)
