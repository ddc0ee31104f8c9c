"""Line charts of amounts over time as SVG, computed on the server (no script, no library).

The explorer's auditor page plots stake, reputation and cumulative earnings with it. Values are the
chain's integers (token base units, WAD, wei) and stay integers here: the axis ticks are integer
multiples of a "nice" step (1, 2 or 5 x 10^k base units) chosen in integer arithmetic, and their
labels are written by the caller's exact formatter, so a tick reads 0.0102 and never
0.010199999999999997. Only pixel positions are floats.

A series is a step function: a value holds from its event until the next one (a stake does not
drift between two transactions), and the last value holds until `x_end` (the newest indexed block's
time). Each point is a circle with a `<title>` tooltip (its event, block and exact value).

Presentation attributes only (no `style` attribute), every text escaped: the page's
Content-Security-Policy forbids inline styles and the labels can hold user text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from xml.sax.saxutils import escape, quoteattr

__all__ = [
    "ChartPoint",
    "ChartSeries",
    "Scale",
    "line_chart_svg",
    "nice_step",
    "time_ticks",
    "value_ticks",
]

WIDTH = 560
HEIGHT = 230
PLOT_LEFT = 96
"""Room for the value labels (18 significant characters fit at 11 px)."""
PLOT_RIGHT = 16
PLOT_TOP = 42
PLOT_BOTTOM = 40
VALUE_TICKS = 5
TIME_TICKS = 5
MIN_TIME_SPAN = 60
"""Seconds shown at least: a chart of one instant still has an axis to read."""
_FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif"

_TIME_STEPS = (
    1, 2, 5, 10, 15, 30,
    60, 120, 300, 600, 900, 1_800,
    3_600, 7_200, 10_800, 21_600, 43_200,
    86_400, 172_800, 604_800, 1_209_600, 2_592_000, 7_776_000, 15_552_000, 31_536_000,
)  # fmt: skip
"""Tick spacings in seconds that read well: seconds, minutes, hours, days, weeks, months, a year."""


@dataclass(frozen=True, slots=True)
class ChartPoint:
    """A value from time `x` (unix seconds) on; `note` is the point's tooltip."""

    x: int
    y: int
    note: str = ""


@dataclass(frozen=True, slots=True)
class ChartSeries:
    """One line: its legend label, points in time order, colour and dash pattern ("" solid)."""

    label: str
    points: tuple[ChartPoint, ...]
    colour: str
    dash: str = ""


@dataclass(frozen=True, slots=True)
class Scale:
    """A linear map from [low, high] (integers) onto pixels [start, end] (end may be < start: the
    y axis grows upwards)."""

    low: int
    high: int
    start: float
    end: float

    def __call__(self, value: int) -> float:
        if self.high == self.low:
            return (self.start + self.end) / 2
        return self.start + (value - self.low) * (self.end - self.start) / (self.high - self.low)


def nice_step(span: int, ticks: int) -> int:
    """The smallest step of the form 1, 2 or 5 x 10^k (k >= 0) with at most `ticks` intervals over
    `span`; integer arithmetic only, so a step of 10^16 wei is exactly that."""
    if ticks < 1:
        raise ValueError(f"ticks must be at least 1, not {ticks}")
    if span <= 0:
        return 1
    magnitude = 1
    while True:
        for factor in (1, 2, 5):
            step = factor * magnitude
            if -(-span // step) <= ticks:
                return step
        magnitude *= 10


def value_ticks(low: int, high: int, ticks: int = VALUE_TICKS) -> tuple[int, int, list[int]]:
    """An axis over [low, high] widened to multiples of a nice step: (axis low, axis high, ticks).
    A flat range (low == high) is first widened by a nice step of about a tenth of the value."""
    if low > high:
        raise ValueError(f"low {low} is above high {high}")
    if low == high:
        pad = nice_step(max(abs(low) // 10, 1), 1)
        low, high = low - pad, high + pad
    step = nice_step(high - low, ticks)
    first = (low // step) * step
    last = -(-high // step) * step
    return first, last, list(range(first, last + 1, step))


def time_ticks(start: int, end: int, ticks: int = TIME_TICKS) -> tuple[list[int], str]:
    """Tick times (unix seconds, multiples of a readable step) within [start, end] and the strftime
    format that tells them apart (time of day within a day, the date beyond)."""
    span = max(end - start, 1)
    step = next((s for s in _TIME_STEPS if span / s <= ticks), _TIME_STEPS[-1])
    first = -(-start // step) * step
    marks = list(range(first, end + 1, step))
    if step >= 86_400:
        return marks, "%Y-%m-%d"
    if span >= 86_400:
        return marks, "%m-%d %H:%M"
    return marks, "%H:%M:%S" if step < 60 else "%H:%M"


def _n(value: float) -> str:
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def line_chart_svg(
    *,
    title: str,
    series: Sequence[ChartSeries],
    value_text: Callable[[int], str],
    x_end: int | None = None,
    element_id: str = "chart",
    unit: str = "",
    include_zero: bool = True,
) -> str:
    """One chart: a title, a legend, a value axis labelled by `value_text` (exact), a time axis in
    UTC, one step line per series, a dot per point with its note. `include_zero` starts the value
    axis at 0 (amounts; a ratio such as a reputation is better read zoomed to its range). With no
    point at all it says so instead of drawing empty axes."""
    points = [p for s in series for p in s.points]
    head = f"<title id={quoteattr(element_id + '-title')}>{escape(title)}</title>"
    svg_open = (
        f'<svg xmlns="http://www.w3.org/2000/svg" id={quoteattr(element_id)} width="{WIDTH}" height="{HEIGHT}"'
        f' viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-labelledby={quoteattr(element_id + "-title")}'
        f' font-family={quoteattr(_FONT)} font-size="11">'
    )
    heading = f'<text x="0" y="14" font-size="13" font-weight="700" fill="#1d2330">{escape(title)}</text>'
    if not points:
        empty = f'<text x="{PLOT_LEFT}" y="{HEIGHT // 2}" fill="#5b6577">no event yet</text>'
        return f"{svg_open}{head}{heading}{empty}</svg>"
    x_low = min(p.x for p in points)
    x_high = max([*(p.x for p in points), x_end or 0])
    if x_high - x_low < MIN_TIME_SPAN:
        x_high = x_low + MIN_TIME_SPAN
    values = [p.y for p in points] + ([0] if include_zero else [])
    y_low, y_high, y_marks = value_ticks(min(values), max(values))
    sx = Scale(x_low, x_high, PLOT_LEFT, WIDTH - PLOT_RIGHT)
    sy = Scale(y_low, y_high, HEIGHT - PLOT_BOTTOM, PLOT_TOP)
    out = [svg_open, head, heading]
    out.append(_legend(series))
    out.append(
        f'<rect x="{PLOT_LEFT}" y="{PLOT_TOP}" width="{WIDTH - PLOT_LEFT - PLOT_RIGHT}"'
        f' height="{HEIGHT - PLOT_TOP - PLOT_BOTTOM}" fill="#ffffff" stroke="#d8dde6"/>'
    )
    for value in y_marks:
        y = _n(sy(value))
        out.append(f'<line x1="{PLOT_LEFT}" x2="{WIDTH - PLOT_RIGHT}" y1="{y}" y2="{y}" stroke="#eceff4"/>')
        label = value_text(value) + (f" {unit}" if unit else "")
        out.append(
            f'<text x="{PLOT_LEFT - 6}" y="{_n(sy(value) + 4)}" text-anchor="end" fill="#5b6577"'
            f' data-tick="{value}">{escape(label)}</text>'
        )
    marks, pattern = time_ticks(x_low, x_high)
    for at in marks:
        x = _n(sx(at))
        out.append(
            f'<line x1="{x}" x2="{x}" y1="{HEIGHT - PLOT_BOTTOM}" y2="{HEIGHT - PLOT_BOTTOM + 4}" stroke="#5b6577"/>'
        )
        text = datetime.fromtimestamp(at, UTC).strftime(pattern)
        out.append(
            f'<text x="{x}" y="{HEIGHT - PLOT_BOTTOM + 16}" text-anchor="middle" fill="#5b6577">{escape(text)}</text>'
        )
    out.append(
        f'<text x="{WIDTH - PLOT_RIGHT}" y="{HEIGHT - 4}" text-anchor="end" fill="#5b6577">block time (UTC)</text>'
    )
    for index, line in enumerate(series):
        if not line.points:
            continue
        out.append(_step_path(line, sx, sy, line.points[-1].x if x_end is None else x_end))
        for point in line.points:
            note = point.note or value_text(point.y)
            out.append(
                f'<circle cx="{_n(sx(point.x))}" cy="{_n(sy(point.y))}" r="3" fill={quoteattr(line.colour)}'
                f' data-series="{index}" data-value="{point.y}"><title>{escape(note)}</title></circle>'
            )
    out.append("</svg>")
    return "".join(out)


def _step_path(line: ChartSeries, sx: Scale, sy: Scale, end: int) -> str:
    """Horizontal from each point to the next point's time, then vertical to its value."""
    first = line.points[0]
    parts = [f"M{_n(sx(first.x))} {_n(sy(first.y))}"]
    previous = first
    for point in line.points[1:]:
        parts.append(f"H{_n(sx(point.x))}")
        if point.y != previous.y:
            parts.append(f"V{_n(sy(point.y))}")
        previous = point
    if end > previous.x:
        parts.append(f"H{_n(sx(end))}")
    return (
        f'<path d="{" ".join(parts)}" fill="none" stroke={quoteattr(line.colour)} stroke-width="2"'
        + (f" stroke-dasharray={quoteattr(line.dash)}" if line.dash else "")
        + f" data-label={quoteattr(line.label)}/>"
    )


def _legend(series: Sequence[ChartSeries]) -> str:
    out = []
    x = float(PLOT_LEFT)
    for line in series:
        dash = f" stroke-dasharray={quoteattr(line.dash)}" if line.dash else ""
        stroke = f"stroke={quoteattr(line.colour)}"
        out.append(f'<line x1="{_n(x)}" x2="{_n(x + 18)}" y1="23" y2="23" {stroke} stroke-width="2"{dash}/>')
        out.append(f'<text x="{_n(x + 22)}" y="27" fill="#1d2330">{escape(line.label)}</text>')
        x += 22 + 6.2 * len(line.label) + 16
    return "".join(out)
