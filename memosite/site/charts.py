"""Static SVG charts, made at build time: no script or CDN is needed to see them.

Colours come from CSS classes (``memosite-chart__*``, styled in ``memory.css`` with Material's
colour variables), so one chart reads well in the light and the dark scheme; text is escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from xml.sax.saxutils import escape

WIDTH = 640
BAR_AREA = 150


def _text(x: float, y: float, value: str, *, anchor: str = "middle", css: str = "memosite-chart__label") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" class="{css}">{escape(value)}</text>'


def weekly_bars(title: str, weeks: Sequence[str], series: Sequence[tuple[str, Sequence[int]]]) -> str:
    """Grouped vertical bars: one group per week (``weeks`` are labels), one bar per series."""
    groups = max(len(weeks), 1)
    peak = max([1, *(value for _, values in series for value in values)])
    left, top, bottom = 36, 28, 34
    height = top + BAR_AREA + bottom
    slot = (WIDTH - left - 8) / groups
    bar = max(2.0, slot * 0.8 / max(len(series), 1))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="memosite-chart" viewBox="0 0 {WIDTH} {height}"'
        f' role="img" aria-label="{escape(title, {chr(34): "&quot;"})}">',
        f"<title>{escape(title)}</title>",
        _text(left, 16, title, anchor="start", css="memosite-chart__title"),
        f'<line x1="{left}" y1="{top + BAR_AREA}" x2="{WIDTH - 8}" y2="{top + BAR_AREA}"'
        ' class="memosite-chart__axis"/>',
        _text(left - 6, top + 8, str(peak), anchor="end"),
        _text(left - 6, top + BAR_AREA, "0", anchor="end"),
    ]
    for n, week in enumerate(weeks):
        x0 = left + n * slot + slot * 0.1
        for s, (name, values) in enumerate(series):
            value = values[n] if n < len(values) else 0
            h = BAR_AREA * value / peak
            x = x0 + s * bar
            parts.append(
                f'<rect x="{x:.1f}" y="{top + BAR_AREA - h:.1f}" width="{bar - 1:.1f}" height="{h:.1f}"'
                f' class="memosite-chart__bar memosite-chart__bar--{s}"><title>{escape(name)} in the week of'
                f" {escape(week)}: {value}</title></rect>"
            )
        if n % max(1, groups // 6) == 0:
            parts.append(_text(x0 + slot * 0.4, top + BAR_AREA + 16, week[5:]))
    legend_x = left
    for s, (name, _values) in enumerate(series):
        parts.append(
            f'<rect x="{legend_x}" y="{height - 12}" width="10" height="10"'
            f' class="memosite-chart__bar memosite-chart__bar--{s}"/>'
        )
        parts.append(_text(legend_x + 14, height - 3, name, anchor="start"))
        legend_x += 24 + 8 * len(name)
    parts.append("</svg>")
    return "".join(parts)


def horizontal_bars(title: str, items: Sequence[tuple[str, int]], *, css: Sequence[str] = ()) -> str:
    """One labelled bar per item (``css`` names a class per item, e.g. a severity's colour)."""
    row, left, top = 22, 110, 28
    height = top + row * max(len(items), 1) + 8
    peak = max([1, *(value for _, value in items)])
    span = WIDTH - left - 60
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="memosite-chart" viewBox="0 0 {WIDTH} {height}"'
        f' role="img" aria-label="{escape(title, {chr(34): "&quot;"})}">',
        f"<title>{escape(title)}</title>",
        _text(8, 16, title, anchor="start", css="memosite-chart__title"),
    ]
    if not items:
        parts.append(_text(left, top + 14, "nothing yet", anchor="start"))
    for n, (label, value) in enumerate(items):
        y = top + n * row
        w = span * value / peak
        extra = f" {css[n]}" if n < len(css) else " memosite-chart__bar--0"
        parts.append(_text(left - 8, y + 14, label, anchor="end"))
        parts.append(
            f'<rect x="{left}" y="{y + 3}" width="{max(w, 1):.1f}" height="{row - 8}"'
            f' class="memosite-chart__bar{extra}"><title>{escape(label)}: {value}</title></rect>'
        )
        parts.append(_text(left + w + 6, y + 14, str(value), anchor="start"))
    parts.append("</svg>")
    return "".join(parts)
