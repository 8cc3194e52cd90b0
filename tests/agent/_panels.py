"""The Grafana dashboard's panels drawn from a real Prometheus's answers, for a screenshot where Grafana is
not installable (Debian has no package). This is NOT Grafana: each panel of ``contrib/grafana/psagent.json``
is laid out by its gridPos and drawn from ``/api/v1/query_range`` (stat: the last value, time series: lines,
table: the instant result's labels, state timeline: bands) with the panel's own query, legend and unit; the
page says so in its title."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from html import escape
from typing import Any

Series = list[dict[str, Any]]  # Prometheus matrix: [{"metric": {...}, "values": [[t, "v"], ...]}]

COLORS = ("#3b6fd8", "#e07b39", "#2a9d8f", "#c0392b", "#8e6bbf", "#b07d00", "#5c946e", "#d45d97", "#6b7280")
ROW_PX = 26


def legend(fmt: str, metric: dict[str, str]) -> str:
    if not fmt or fmt == "__auto":
        inner = ",".join(f'{k}="{v}"' for k, v in sorted(metric.items()) if k != "__name__")
        return metric.get("__name__", "") + ("{" + inner + "}" if inner else "") or "value"
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: metric.get(m.group(1), ""), fmt)


def fmt_value(v: float, unit: str | None, decimals: int | None = None) -> str:
    if math.isnan(v):
        return "NaN"
    if unit == "percentunit":
        return f"{100 * v:.{0 if decimals is None else decimals}f} %"
    if unit == "bytes":
        return f"{v / 2**30:.2f} GiB"
    if unit == "s":
        return f"{v:.2f} s" if v < 100 else f"{v / 60:.1f} min"
    if unit and unit.startswith("suffix:"):
        return f"{v:.{4 if decimals is None else decimals}f}{unit[len('suffix:') :]}"
    if decimals is not None:
        return f"{v:.{decimals}f}"
    return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"


def _points(series: dict[str, Any]) -> list[tuple[float, float]]:
    out = []
    for t, v in series["values"]:
        f = float(v)
        if not math.isnan(f) and not math.isinf(f):
            out.append((float(t), f))
    return out


def _timeseries(
    p: dict[str, Any], data: list[tuple[str, Series]], t0: float, t1: float, w: int, h: int
) -> str:
    unit = p["fieldConfig"]["defaults"].get("unit")
    lines = [(legend(fmt, s["metric"]), _points(s)) for fmt, group in data for s in group]
    ys = [v for _, pts in lines for _, v in pts]
    lo = min([0.0, *ys])
    hi = max([*ys, lo + 1e-9])
    if p["fieldConfig"]["defaults"].get("max") is not None:
        hi = max(hi, float(p["fieldConfig"]["defaults"]["max"]))
    left, right, top, bottom = 62, 8, 6, 18
    pw, ph = w - left - right, h - top - bottom
    span = max(t1 - t0, 1e-9)

    def xy(t: float, v: float) -> str:
        return f"{left + pw * (t - t0) / span:.1f},{top + ph * (1 - (v - lo) / (hi - lo)):.1f}"

    bars = p["fieldConfig"]["defaults"].get("custom", {}).get("drawStyle") == "bars"
    parts = [
        f'<svg viewBox="0 0 {w} {h}" width="{w}" height="{h}">',
        f'<line x1="{left}" y1="{top}" x2="{left + pw}" y2="{top}" stroke="#e3e6eb"/>',
        f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#8a92a3"/>',
        f'<text x="{left - 4}" y="{top + 8}" font-size="10" text-anchor="end">{escape(fmt_value(hi, unit))}'
        "</text>",
        f'<text x="{left - 4}" y="{top + ph}" font-size="10" text-anchor="end">{escape(fmt_value(lo, unit))}'
        "</text>",
        f'<text x="{left}" y="{h - 4}" font-size="10">-{t1 - t0:.0f} s</text>',
        f'<text x="{left + pw}" y="{h - 4}" font-size="10" text-anchor="end">now</text>',
    ]
    for i, (_, pts) in enumerate(lines):
        color = COLORS[i % len(COLORS)]
        if bars:
            bw = max(pw / max(span, 1) * 0.8, 1.5)
            for t, v in pts:
                if v:
                    x, y = xy(t, v).split(",")
                    base = top + ph * (1 - (0 - lo) / (hi - lo))
                    parts.append(
                        f'<rect x="{float(x) - bw / 2:.1f}" y="{y}" width="{bw:.1f}" '
                        f'height="{max(base - float(y), 0):.1f}" fill="{color}" opacity="0.8"/>'
                    )
        elif pts:
            parts.append(
                f'<polyline fill="none" stroke="{color}" stroke-width="1.5" '
                f'points="{" ".join(xy(t, v) for t, v in pts)}"/>'
            )
    parts.append("</svg>")
    keys = "".join(
        f'<span style="color:{COLORS[i % len(COLORS)]}">■</span> {escape(name)} '
        for i, (name, _) in enumerate(lines[:12])
    )
    more = f" … {len(lines) - 12} more" if len(lines) > 12 else ""
    return "".join(parts) + f'<div class="leg">{keys}{more}</div>'


def _stat(p: dict[str, Any], data: list[tuple[str, Series]]) -> str:
    d = p["fieldConfig"]["defaults"]
    vals = [pts[-1][1] for _, group in data for s in group for pts in [_points(s)] if pts]
    if not vals:
        return '<div class="stat">no data</div>'
    v = vals[-1]
    text = fmt_value(v, d.get("unit"), d.get("decimals"))
    for m in d.get("mappings", []):
        hit = m.get("options", {}).get(str(int(v))) if float(v).is_integer() else None
        if hit:
            text = hit["text"]
    return f'<div class="stat">{escape(text)}</div>'


def _table(data: list[tuple[str, Series]]) -> str:
    rows = [s["metric"] for _, group in data for s in group]
    keys = sorted({k for r in rows for k in r if k not in ("__name__", "job")})
    head = "".join(f"<th>{escape(k)}</th>" for k in keys)
    body = "".join("<tr>" + "".join(f"<td>{escape(r.get(k, ''))}</td>" for k in keys) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _timeline(data: list[tuple[str, Series]], t0: float, t1: float, w: int) -> str:
    rows = [(legend(name, s["metric"]), _points(s)) for name, group in data for s in group]
    h = 16 * len(rows) + 4
    left, span = 90, max(t1 - t0, 1e-9)
    parts = [f'<svg viewBox="0 0 {w} {h}" width="{w}" height="{h}">']
    for i, (name, pts) in enumerate(rows):
        y = 2 + 16 * i
        parts.append(
            f'<text x="{left - 4}" y="{y + 11}" font-size="10" text-anchor="end">{escape(name)}</text>'
        )
        for (ta, v), (tb, _) in zip(pts, [*pts[1:], (t1, 0.0)], strict=True):
            if v >= 1:
                x = left + (w - left - 4) * (ta - t0) / span
                ww = (w - left - 4) * (tb - ta) / span
                parts.append(
                    f'<rect x="{x:.1f}" y="{y}" width="{max(ww, 0.5):.1f}" height="13" '
                    f'fill="{COLORS[i % len(COLORS)]}"/>'
                )
    parts.append("</svg>")
    return "".join(parts)


def render(
    dashboard: dict[str, Any],
    query_range: Callable[[str], Series],
    query: Callable[[str], Series],
    *,
    substitute: Callable[[str], str],
    t0: float,
    t1: float,
    caption: str,
) -> str:
    """The dashboard's panels as one HTML page; ``substitute`` fills Grafana's variables in a query."""
    col = 1200 / 24
    cells = []
    for p in dashboard["panels"]:
        g = p["gridPos"]
        style = (
            f"left:{g['x'] * col:.0f}px;top:{g['y'] * ROW_PX}px;width:{g['w'] * col - 8:.0f}px;"
            f"height:{g['h'] * ROW_PX - 8}px"
        )
        if p["type"] == "row":
            cells.append(f'<div class="row" style="{style}">{escape(p["title"])}</div>')
            continue
        data: list[tuple[str, Series]] = []
        for t in p["targets"]:
            expr = substitute(t["expr"])
            data.append((t.get("legendFormat", ""), query(expr) if t.get("instant") else query_range(expr)))
        w, h = int(g["w"] * col - 20), int(g["h"] * ROW_PX - 48)
        if p["type"] == "stat":
            inner = _stat(p, data)
        elif p["type"] == "table":
            inner = _table(data)
        elif p["type"] == "state-timeline":
            inner = _timeline(data, t0, t1, w)
        else:
            inner = _timeseries(p, data, t0, t1, w, h - 16)
        cells.append(
            f'<div class="panel" style="{style}"><div class="title">{escape(p["title"])}</div>{inner}</div>'
        )
    height = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in dashboard["panels"]) * ROW_PX + 60
    css = (
        "body{margin:0;background:#111217;color:#d8d9da;font:12px system-ui,sans-serif}"
        "h1{font-size:14px;margin:8px 12px}"
        ".grid{position:relative;margin:0 8px;height:" + str(height) + "px}"
        ".panel,.row{position:absolute;box-sizing:border-box}"
        ".panel{background:#181b1f;border:1px solid #2a2d33;"
        "border-radius:3px;padding:4px 6px;overflow:hidden}"
        ".row{font-weight:600;font-size:13px;padding-top:4px}"
        ".title{font-weight:600;margin-bottom:2px}.stat{font-size:28px;font-weight:600;color:#73bf69;"
        "margin-top:10px}.leg{font-size:10px;line-height:1.3}svg text{fill:#a0a4ab}"
        "table{border-collapse:collapse;font-size:10px}td,th{padding:1px 6px;border-bottom:1px solid #2a2d33;"
        "text-align:left}"
    )
    return (
        f"<!doctype html><html><head><meta charset=utf-8><style>{css}</style></head><body>"
        f"<h1>{escape(caption)}</h1><div class=grid>{''.join(cells)}</div></body></html>"
    )
