"""The server-rendered line charts of trust.api.explorer.charts: integer nice steps, axes that cover the data,
tick labels written exactly by the caller's formatter, step lines, tooltips, escaping."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trust.api.explorer.charts import ChartPoint, ChartSeries, Scale, line_chart_svg, nice_step, time_ticks, value_ticks
from trust.api.explorer.formatting import decimal_text

SVG = "{http://www.w3.org/2000/svg}"
ETH = 10**18


@pytest.mark.parametrize(
    ("span", "ticks", "step"),
    [(0, 5, 1), (7, 5, 2), (10, 5, 2), (11, 5, 5), (100, 5, 20), (2_000 * ETH, 4, 500 * ETH), (10**21, 5, 2 * 10**20)],
)
def test_nice_steps_are_1_2_or_5_times_a_power_of_ten(span: int, ticks: int, step: int) -> None:
    assert nice_step(span, ticks) == step


@given(low=st.integers(-(10**24), 10**24), width=st.integers(0, 10**24), ticks=st.integers(2, 8))
def test_value_axes_cover_the_data_with_exact_integer_ticks(low: int, width: int, ticks: int) -> None:
    high = low + width
    first, last, marks = value_ticks(low, high, ticks)
    assert first <= low and high <= last and first < last
    assert marks[0] == first and marks[-1] == last
    step = marks[1] - marks[0]
    assert all(b - a == step for a, b in zip(marks, marks[1:], strict=False))
    assert re.fullmatch(r"[125]0*", str(step))
    assert all(isinstance(m, int) and m % step == 0 for m in marks)


def test_a_flat_range_is_widened_around_its_value() -> None:
    first, last, marks = value_ticks(5 * 10**17, 5 * 10**17)
    assert first < 5 * 10**17 < last and 5 * 10**17 in marks
    assert value_ticks(0, 0)[:2] == (-1, 1)
    with pytest.raises(ValueError, match="above"):
        value_ticks(2, 1)


def test_time_ticks_fall_on_readable_steps_inside_the_range() -> None:
    marks, pattern = time_ticks(1_000, 1_700)
    assert marks == [1_200, 1_500] and pattern == "%H:%M"
    marks, pattern = time_ticks(0, 3 * 86_400)
    assert marks == [0, 86_400, 172_800, 259_200] and pattern == "%Y-%m-%d"
    marks, pattern = time_ticks(10, 40)
    assert marks == [10, 20, 30, 40] and pattern == "%H:%M:%S"


def test_scales_map_ends_onto_pixels() -> None:
    y = Scale(0, 100, 200.0, 40.0)  # upwards
    assert (y(0), y(100), y(50)) == (200.0, 40.0, 120.0)
    assert Scale(7, 7, 0.0, 10.0)(7) == 5.0


def chart(points: list[tuple[int, int]], **options: object) -> ET.Element:
    series = [ChartSeries("earned", tuple(ChartPoint(x, y, f"earned {y}") for x, y in points), "#17663a")]
    svg = line_chart_svg(title="Earnings", series=series, value_text=decimal_text, **options)  # type: ignore[arg-type]
    return ET.fromstring(svg)


def test_tick_labels_are_exact_decimals_from_wei() -> None:
    # 17 seat rewards of 0.0006 ETH: 0.0102 ETH, which binary floats print as 0.010199999999999999.
    total = 17 * 6 * 10**14
    root = chart([(1_000, 0), (1_600, total)], x_end=1_800)
    labels = {int(t.get("data-tick") or 0): t.text for t in root.iter(f"{SVG}text") if t.get("data-tick")}
    assert labels == {0: "0", 5 * 10**15: "0.005", 10**16: "0.01", 15 * 10**15: "0.015"}
    assert all(Decimal(text or "") * ETH == tick for tick, text in labels.items())
    svg = ET.tostring(root, encoding="unicode")
    assert "0.0101999" not in svg and not re.search(r"\de-\d", svg)  # no float artefact, no exponent
    circles = list(root.iter(f"{SVG}circle"))
    assert [c.get("data-value") for c in circles] == ["0", str(total)]
    assert circles[1].find(f"{SVG}title").text == f"earned {total}"  # type: ignore[union-attr]


def test_a_series_is_a_step_line_held_until_the_end() -> None:
    root = chart([(0, 0), (600, 10), (1_200, 10), (1_800, 30)], x_end=2_400)
    (path,) = [p for p in root.iter(f"{SVG}path") if p.get("data-label") == "earned"]
    d = path.get("d") or ""
    assert d.startswith("M") and d.count("V") == 2  # two rises; the repeated 10 adds no vertical
    assert d.count("H") == 4  # to each later point's time, then on to the end
    assert re.fullmatch(r"M[\d.]+ [\d.]+( [HV][\d.]+)+", d)


def test_an_empty_chart_says_so_and_text_is_escaped() -> None:
    svg = line_chart_svg(title="<b>Stake</b> & co", series=[], value_text=decimal_text)
    root = ET.fromstring(svg)
    words = [t.text for t in root.iter(f"{SVG}text")]
    assert "<b>Stake</b> & co" in words and "no event yet" in words
    assert "<b>" not in svg
    assert all(element.get("style") is None for element in root.iter())
