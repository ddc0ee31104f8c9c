"""Every published figure, recomputed: the ones that follow, and the ones that do not."""

from __future__ import annotations

import pytest

from trust.core.theory.paper import paper_figures


def test_the_figures_that_do_not_follow_are_exactly_these() -> None:
    figures = paper_figures()
    assert len(figures) == 15
    wrong = {(f.where, f.published) for f in figures if not f.follows}
    assert wrong == {("4.2.2, Lemma 4.1 example", "0.847"), ("4.7, eq. 4.45", "< 10^-88")}


@pytest.mark.parametrize(
    ("published", "value"),
    [
        ("0.847", 0.3906734328),
        ("e^-0.56 = 0.57", 0.5712090638),
        ("e^-1.68 = 0.19", 0.1863739760),
        ("1.71", 1.7142857143),
        ("3.0", 3.0),
        ("25.8", 25.8),
        ("e^-204", -88.4977434822),
        ("< 10^-88", -85.4096967444),
        ("e^-63.6 < 10^-27", -27.6031582429),
    ],
)
def test_recomputed_values_are_pinned(published: str, value: float) -> None:
    (figure,) = [f for f in paper_figures() if f.published == published]
    assert figure.recomputed == pytest.approx(value, abs=1e-8)
    assert figure.note
