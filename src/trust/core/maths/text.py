"""Where maths sits in text that people and models write: code, annotations, arrows and LaTeX.

Every check that reads prose needs the same few cuts before it reads any maths: fenced and inline
code is not a claim about numbers, a GSM8K calculator annotation "<<48/2=24>>" is a calculation of
its own, an arrow ("=>", "→", "\\implies") separates two statements, and LaTeX and typographic
notation spell arithmetic in other signs. This module is their one home (the tier-1 checks, the
rule-based decomposer and the calculation finder, `trust.core.maths.calculations`, import them),
so that "what is code" or "what ends a statement" cannot mean one thing to the decomposer and
another to the check that audits what it extracted.

`plain_maths` is the one LaTeX and notation normalizer: it returns text in which every arithmetic
sign is one the engine's tokenizer reads, and every other LaTeX command is " § ", a character that
no number or operator is, so that no calculation is read across it.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "ANNOTATION",
    "ARROWS",
    "BREAK",
    "CODE_BLOCK",
    "FENCE",
    "INLINE_CODE",
    "plain_maths",
]

FENCE: Final = re.compile(r"(```|~~~).*?(?:\1|\Z)", re.S)
"""A fenced code block, from its opening fence to the same fence or the end of the text (a block
left open runs to the end, as Markdown renders it)."""
CODE_BLOCK: Final = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)```", re.S)
"""A closed ``` block with its parts: group 1 its language tag ("" when untagged), group 2 its body."""
INLINE_CODE: Final = re.compile(r"`[^`\n]*`")
"""Inline code on one line: `2+2=5` is code, not a calculation the text states."""
ANNOTATION: Final = re.compile(r"<<([^<>\n]{1,500})>>")
"""A calculator annotation (GSM8K): group 1 the calculation, "48/2=24"."""
ARROWS: Final = re.compile(
    r"<==>|<=>|⟺|==>|=>|-->|->|→|⇒|⟹|⟶|←|<-(?!\d)|\\implies\b|\\Rightarrow\b|\\rightarrow\b|\\to\b|\\iff\b"
)
"""Arrows, typed, Unicode or LaTeX: they separate statements ("2 + 2 = 4 => 4 > 3" is two), and
"=>" or "<=" inside one must never be read as a relation. "<-5" is a comparison, not an arrow."""
BREAK: Final = " § "
"""What a LaTeX command the engine does not read becomes: no calculation runs across it."""

_LATEX_TEXT = re.compile(r"\\(?:text|mathrm|textrm|mbox|textbf|mathbf|operatorname|boxed)\s*\{([^{}]*)\}")
_LATEX_ESCAPE = re.compile(r"\\([$%&#_])")
_LATEX_SPACE = re.compile(r"\\(?:left|right|displaystyle)\b|\\[,;:! ]|\\q?quad\b|\\\(|\\\)|&")
_LATEX_DISPLAY = re.compile(r"\\\[|\\\]|\$\$")
_LATEX_FRACTION = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_LATEX_SYMBOLS: Final = (
    (re.compile(r"\\(?:times|cdot|ast)\b"), " × "),
    (re.compile(r"\\div\b"), " ÷ "),
    (re.compile(r"\\leq?\b"), " ≤ "),
    (re.compile(r"\\geq?\b"), " ≥ "),
    (re.compile(r"\\neq?\b"), " ≠ "),
    (re.compile(r"\\approx\b"), " ≈ "),
)
_LATEX_OTHER = re.compile(r"\\[A-Za-z]+")
_CURRENCY = re.compile(r"[$€£¥]")
_DOUBLE_STAR = re.compile(r"[ \t]*\*\*[ \t]*")
_SPACED_DASH = re.compile(r"(?<=[\d)])[ \t]+[–—][ \t]+(?=[\d(])")
_TIMES_LETTER = re.compile(r"(?<=[\d%)])[ \t]*[xX][ \t]*(?=[\d(.])")
_TIMES_DOT = re.compile(r"[·⋅∙]")
_CUT_SHORT = re.compile(r"(?<=\d)(?:\.\.\.|…)")
_PARENTHESIZED_LABEL = re.compile(r"(?<=[\d%])\s+\(\s*[A-Za-z][A-Za-z'\-]+(?:\s+[A-Za-z'\-]+)*\s*\)")
_LIST_MARKER = re.compile(r"^[ \t]*(?:[-*+•]|\d+[.)])[ \t]+", re.M)
_FRACTION_PASSES: Final = 8
"""Nested \\frac are rewritten innermost first, one level per pass; deeper nesting stays LaTeX
(and breaks the calculation) rather than costing more passes."""


def _bold_or_power(match: re.Match[str]) -> str:
    """ "2 ** 10" is a power (an operand on both sides); any other "**" is markdown bold."""
    text, start, end = match.string, match.start(), match.end()
    before = text[start - 1] if start else ""
    after = text[end] if end < len(text) else ""
    return match.group() if before and before in "0123456789)" and after and after in "0123456789(" else " "


def _fraction(match: re.Match[str]) -> str:
    return f"(({match.group(1).strip()})/({match.group(2).strip()}))"


def plain_maths(text: str) -> str:
    """`text` with code and annotations out of the way and its arithmetic in the engine's signs.

    Fences become a line break and inline code a space; annotations are removed (a finder reads
    them on their own); arrows become " ; " (a statement break); LaTeX line breaks and display
    delimiters (\\\\, \\[ \\], $$) become line breaks, \\text{...} its words, \\frac{a}{b}
    "((a)/(b))", \\times \\cdot × , \\div ÷, \\le \\ge \\ne \\approx ≤ ≥ ≠ ≈, braces parentheses,
    and any other command `BREAK`. Currency signs, markdown bold and list markers go; − is "-", ∗
    "*", a spaced dash between numbers a minus, an x between numbers and · a times sign; digits
    cut short ("1.636...") end in "…"; a label in parentheses after a number ("$100 (Carmen)") goes.
    """
    s = FENCE.sub("\n", text)
    s = INLINE_CODE.sub(" ", s)
    s = ANNOTATION.sub(" ", s)
    s = ARROWS.sub(" ; ", s)
    s = s.replace("\\\\", "\n")
    s = _LATEX_DISPLAY.sub("\n", s)
    s = _LATEX_TEXT.sub(r" \1 ", s)
    s = _LATEX_ESCAPE.sub(r"\1", s)
    s = _LATEX_SPACE.sub(" ", s)
    for _ in range(_FRACTION_PASSES):
        new = _LATEX_FRACTION.sub(_fraction, s)
        if new == s:
            break
        s = new
    for pattern, replacement in _LATEX_SYMBOLS:
        s = pattern.sub(replacement, s)
    s = _LATEX_OTHER.sub(BREAK, s)
    s = s.replace("{", "(").replace("}", ")")
    s = _CURRENCY.sub("", s)
    s = _DOUBLE_STAR.sub(_bold_or_power, s).replace("__", " ")
    s = s.replace("−", "-").replace("∗", "*")
    s = _SPACED_DASH.sub(" - ", s)
    s = _CUT_SHORT.sub("…", s)
    s = _TIMES_DOT.sub(" × ", s)
    s = _TIMES_LETTER.sub(" × ", s)
    s = _PARENTHESIZED_LABEL.sub(" ", s)
    return _LIST_MARKER.sub(" ", s)
