"""The one home of code, annotation and arrow patterns and of the LaTeX normalizer (`trust.core.maths.text`)."""

from __future__ import annotations

import pytest

from trust.core.maths.text import ARROWS, CODE_BLOCK, FENCE, plain_maths


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        ("2 ** 10 = 1024", "2 ** 10 = 1024"),  # a power, not bold (the arithmetic check read "2   10")
        ("(2)**(3) = 8", "(2)**(3) = 8"),
        ("**12 * 3 = 36**", "12 * 3 = 36"),  # bold
        ("\\frac{\\frac{1}{2}}{4}", "((((1)/(2)))/(4))"),
        ("\\(3 \\times 4 \\le 12\\)", "3  ×  4  ≤  12"),
        ("\\$5 \\cdot 2", "5  ×  2"),
        ("1.636... bags", "1.636… bags"),
        ("$100 (Carmen) + $125", "100 + 125"),
        ("2 + 2 = 4 => 4 > 3", "2 + 2 = 4 ; 4 > 3"),
        ("\\sqrt{2} = 1.41", "§ (2) = 1.41"),
    ],
)
def test_plain_maths(text: str, plain: str) -> None:
    assert " ".join(plain_maths(text).split()) == " ".join(plain.split())


def test_arrows_are_statement_breaks_but_a_negative_comparison_is_not() -> None:
    assert ARROWS.findall("a -> b, c → d, x \\implies y") == ["->", "→", "\\implies"]
    assert ARROWS.findall("3 <-5") == []


def test_fences_and_code_blocks() -> None:
    text = "before\n```python\nprint(1)\n```\nafter ~~~\nx\n~~~ end"
    assert [m.group() for m in FENCE.finditer(text)] == ["```python\nprint(1)\n```", "~~~\nx\n~~~"]
    assert [(m.group(1), m.group(2)) for m in CODE_BLOCK.finditer(text)] == [("python", "print(1)\n")]
    assert FENCE.sub("", "open ```\nnever closed") == "open "
