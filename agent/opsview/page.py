"""The status page at ``/``: the ``/status`` document as one server-rendered HTML page.

No build step, no script, no asset from elsewhere: inline CSS and inline SVG bar charts (proofs and earnings
per hour over the last 24 hours), the gate, the queue, each device, loaded parameters, loop errors and recent
failures. Every figure carries its raw value in ``data-v`` beside its key in ``data-k`` (what the browser test
compares with ``/status`` and the store); the page reloads itself every 15 seconds.
"""

from __future__ import annotations

import time
from decimal import Decimal
from html import escape
from typing import Any

__all__ = ["fil", "render"]

ATTO = Decimal(10) ** 18


def fil(atto: int | str) -> str:
    """attoFIL as FIL, without trailing zeros (``0.005 FIL``)."""
    text = f"{Decimal(int(atto)) / ATTO:f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"{text} FIL"


def _t(t: float | None) -> str:
    return "-" if t is None else time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))


def _dur(s: float | None) -> str:
    if s is None:
        return "-"
    s = float(s)
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB" if n else "0"


def _v(key: str, value: Any, text: str | None = None, tag: str = "span") -> str:
    """A figure: its key and raw value as data attributes, its text shown."""
    shown = str(value) if text is None else text
    return f'<{tag} data-k="{escape(key)}" data-v="{escape(str(value))}">{escape(shown)}</{tag}>'


def _bars(key: str, hours: list[dict[str, Any]], field: str, unit: str) -> str:
    """24 bars, one per clock hour, the running hour last; a bar's ``data-v`` is its raw value."""
    values = [int(h[field]) for h in hours]
    top = max(values) or 1
    label_top = fil(top) if unit == "FIL" else str(top)
    # the axis label's room from its length (11 px text, ~6.5 px a character): "0.000123456 FIL" was clipped
    w, h, left, bottom, top_pad = 600, 170, max(70, int(6.5 * len(label_top)) + 14), 24, 14
    bw = (w - left - 8) / len(values)
    plot_h = h - bottom - top_pad
    parts = [
        f'<svg class="chart" data-k="{escape(key)}" viewBox="0 0 {w} {h}" width="{w}" height="{h}" '
        f'role="img" aria-label="{escape(key)}">',
        f'<line x1="{left}" y1="{top_pad}" x2="{w - 8}" y2="{top_pad}" class="grid"/>',
        f'<line x1="{left}" y1="{h - bottom}" x2="{w - 8}" y2="{h - bottom}" class="axis"/>',
        f'<text x="{left - 6}" y="{top_pad + 4}" class="ylab">{escape(label_top)}</text>',
        f'<text x="{left - 6}" y="{h - bottom}" class="ylab">0</text>',
    ]
    for i, (hour, v) in enumerate(zip(hours, values, strict=True)):
        bh = plot_h * v / top
        x = left + i * bw + 1
        stamp = time.strftime("%H:00", time.gmtime(hour["start"]))
        shown = fil(v) if unit == "FIL" else f"{v} proof(s)"
        parts.append(
            f'<rect class="bar" data-i="{i}" data-v="{v}" x="{x:.1f}" y="{h - bottom - bh:.1f}" '
            f'width="{bw - 2:.1f}" height="{bh:.1f}"><title>{stamp} UTC: {escape(shown)}</title></rect>'
        )
        if i % 3 == 0 or i == len(values) - 1:
            parts.append(f'<text x="{x + (bw - 2) / 2:.1f}" y="{h - 6}" class="xlab">{stamp}</text>')
    parts.append("</svg>")
    return "".join(parts)


_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;background:#f5f6f8;color:#1d2330}
header{background:#1d2330;color:#fff;padding:12px 20px;display:flex;gap:24px;align-items:baseline;
 flex-wrap:wrap}
header h1{font-size:18px;margin:0}
main{padding:16px 20px;display:grid;grid-template-columns:repeat(auto-fit,minmax(360px,1fr));gap:16px}
section{background:#fff;border:1px solid #dde1e8;border-radius:6px;padding:12px 14px}
section.wide{grid-column:1/-1}
h2{font-size:15px;margin:0 0 8px}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:3px 8px 3px 0;border-bottom:1px solid #eef0f3;vertical-align:top}
th{font-weight:600;color:#4a5262}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:24px;margin-top:14px}
svg.chart{width:100%;height:auto}
td.t{white-space:nowrap}
.cards{display:flex;gap:12px;flex-wrap:wrap}
.card{background:#f7f8fa;border:1px solid #e3e6eb;border-radius:6px;padding:8px 12px;min-width:130px}
.card b{display:block;font-size:20px}
.gate{padding:2px 10px;border-radius:12px;font-weight:600}
.gate-open{background:#1f8f4e}.gate-warming,.gate-starting{background:#b07d00}
.gate-failed,.gate-unhealthy{background:#c0392b}.gate-stopping,.gate-stopped{background:#6b7280}
svg.chart .bar{fill:#3b6fd8}svg.chart .axis{stroke:#8a92a3}svg.chart .grid{stroke:#e3e6eb}
svg.chart .ylab{font-size:11px;text-anchor:end;fill:#4a5262}
svg.chart .xlab{font-size:11px;text-anchor:middle;fill:#4a5262}
.err{color:#a3281c}.muted{color:#6b7280}code{font-size:12px}
td.err{overflow-wrap:anywhere;word-break:break-word;max-width:0;width:60%}
"""
LONG_ERROR = 240  # characters of a loop's or a request's error shown; the whole line is its tooltip


def _clip(text: str, n: int = LONG_ERROR) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _where(progress: dict[str, Any] | None) -> str:
    """A running proof's stage and time left (agent.opsview.progress.StageProgress.snapshot)."""
    if not progress:
        return ""
    left = progress.get("eta_seconds")
    tail = f", about {_dur(left)} left" if left is not None else ", time left not known yet"
    return f"{progress.get('stage', '')}{tail}"


def _card(label: str, key: str, value: Any, text: str | None = None) -> str:
    return f'<div class="card">{escape(label)}{_v(key, value, text, tag="b")}</div>'


def render(doc: dict[str, Any]) -> str:
    """The page for a ``/status`` document (``agent.opsview.document.StatusView.document``)."""
    g = doc["gate"]
    day = doc["last_24h"]
    totals = doc["totals"]
    earned_day, earned = day["earned_attofil"], totals["earned_attofil"]
    out = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        '<meta http-equiv="refresh" content="15"><meta name="viewport" content="width=device-width">',
        f"<title>psagent — {escape(g['state'])}</title><style>{_CSS}</style></head><body>",
        "<header><h1>psagent</h1>",
        f'<span>gate <span class="gate gate-{escape(g["state"])}" data-k="gate.state" '
        f'data-v="{escape(g["state"])}">{escape(g["state"])}</span></span>',
        f"<span>{_v('gate.reason', g['reason'])}</span>" if g["reason"] else "",
        f"<span>up {_v('uptime_seconds', doc['uptime_seconds'], _dur(doc['uptime_seconds']))}</span>",
        f'<span class="muted">version {_v("version", doc["version"])} · {escape(_t(doc["now"]))}</span>',
        "</header><main>",
        '<section class="wide"><h2>Last 24 hours</h2><div class="cards">',
        _card("proofs (24 h)", "last_24h.proofs", day["proofs"]),
        _card("earned (24 h)", "last_24h.earned_attofil", earned_day, fil(earned_day)),
        _card("proofs completed", "totals.proofs_completed", totals["proofs_completed"]),
        _card("earned in all", "totals.earned_attofil", earned, fil(earned)),
        _card("failed", "totals.proofs_failed", totals["proofs_failed"]),
        _card("gone", "totals.proofs_gone", totals["proofs_gone"]),
    ]
    if doc.get("price_attofil") is not None:
        out.append(_card("price asked", "price_attofil", doc["price_attofil"], fil(doc["price_attofil"])))
    out += [
        "</div><div class=charts><div><h2>Proofs per hour</h2>",
        _bars("last_24h.proofs_per_hour", day["hours"], "proofs", "proofs"),
        "</div><div><h2>Earnings per hour</h2>",
        _bars("last_24h.earned_per_hour", day["hours"], "earned_attofil", "FIL"),
        "</div></div><p class=muted>clock hours in UTC, the running hour last; from the store "
        "(accepted proofs, vouchers received)</p></section>",
    ]
    # the queue
    out.append("<section><h2>Queue</h2><table><tr><th>state</th><th>requests</th></tr>")
    for state, n in doc["requests"].items():
        out.append(f"<tr><td>{escape(state)}</td><td>{_v(f'requests.{state}', n)}</td></tr>")
    out.append("</table>")
    if doc["queues"]:
        out.append(
            "<table style='margin-top:8px'><tr><th>kind</th><th>pending</th><th>proving</th>"
            "<th>to submit</th></tr>"
        )
        for q in doc["queues"]:
            k = q["proof_kind"] or "not fetched"
            out.append(
                f"<tr><td>{escape(k)}</td><td>{_v(f'queues.{k}.pending', q['pending'])}</td>"
                f"<td>{_v(f'queues.{k}.in_progress', q['in_progress'])}</td>"
                f"<td>{_v(f'queues.{k}.computed', q['computed'])}</td></tr>"
            )
        out.append("</table>")
    oldest = doc.get("oldest_unfinished_s")
    out.append(f"<p class=muted>oldest unfinished: {_v('oldest_unfinished_s', oldest, _dur(oldest))}</p>")
    asks = doc["asks"]
    out.append(
        f"<p class=muted>asks: {_v('asks.active', asks.get('active', 0))} active, "
        f"{_v('asks.matched', asks.get('matched', 0))} matched</p></section>"
    )
    # devices
    out.append(
        "<section><h2>Devices</h2><table><tr><th>device</th><th>state</th><th>busy</th>"
        "<th>jobs</th><th>memory</th></tr>"
    )
    for d in doc["devices"]:
        key = f"devices.{d['device']}"
        state = f"proving {d['current_proof_kind']}" if d["busy"] else "idle"
        where = _where(d.get("current_progress")) if d["busy"] else ""
        cpu = d["backend"] == "cpu"
        name = "CPU" if cpu else f"GPU {d['device']}"
        if cpu:  # the CPU backend's one slot: no device memory, no budget of its own to show
            memory = "host memory"
        else:
            peak = f", peak {escape(_gib(d['memory_peak_bytes']))}" if d["memory_peak_bytes"] else ""
            memory = (
                f"{escape(_gib(d['memory_reserved_bytes']))} of {escape(_gib(d['memory_budget_bytes']))} "
                f"reserved{peak}"
            )
        running = d.get("jobs_running", 0)
        jobs = (f"{_v(f'{key}.jobs_running', running)} running, " if running else "") + (
            f"{_v(f'{key}.jobs_done', d['jobs_done'])} done"
        )
        out.append(
            f"<tr><td>{escape(name)}"
            + ("" if cpu else f" <span class=muted>{escape(d['name'])} ({escape(d['backend'])})</span>")
            + f"</td><td>{_v(f'{key}.state', state)}"
            + (f"<br><span class=muted>{_v(f'{key}.progress', where)}</span>" if where else "")
            + f"</td><td>{_v(f'{key}.busy_seconds', d['busy_seconds'], _dur(d['busy_seconds']))}</td>"
            f"<td>{jobs}</td><td>{memory}</td></tr>"
        )
    if not doc["devices"]:
        out.append("<tr><td colspan=5 class=muted>no proving device registered</td></tr>")
    out.append("</table><h2 style='margin-top:12px'>Parameters loaded</h2><ul>")
    for p in doc["loaded_parameters"]:
        origin = p.get("origin") or "not checked"
        cls = "err" if origin in ("development", "damaged") else "muted"
        origin_key = "loaded_parameters." + p["proof_type"] + ".origin"
        out.append(
            f"<li>{_v('loaded_parameters', p['proof_type'])} <span class=muted>({escape(p['kind'])},</span> "
            f"<span class={cls}>{_v(origin_key, origin)}</span>"
            f"<span class=muted>, since {escape(_t(p['loaded_at']))})</span></li>"
        )
    if not doc["loaded_parameters"]:
        out.append("<li class=muted>none yet</li>")
    out.append("</ul></section>")
    # loops and failures
    out.append("<section><h2>Loops</h2><table><tr><th>loop</th><th>errors</th><th>last error</th></tr>")
    for name, loop in doc.get("loops", {}).items():
        out.append(
            f"<tr><td>{escape(name)}</td><td>{_v(f'loops.{name}.errors', loop['errors'])}</td>"
            f"<td class=err title=\"{escape(loop['last_error'])}\">{escape(_clip(loop['last_error']))} "
            f"<span class=muted>{escape(_t(loop['last_error_at']))}</span></td></tr>"
        )
    if not doc.get("loops"):
        out.append("<tr><td colspan=3 class=muted>no loop error since the start</td></tr>")
    out.append("</table></section>")
    out.append(
        '<section class="wide"><h2>Recent failures</h2><table><tr><th>when</th><th>request</th>'
        "<th>kind</th><th>reason</th></tr>"
    )
    for i, f in enumerate(doc["recent_failures"]):
        out.append(
            f"<tr><td class=t>{escape(_t(f['at']))}</td>"
            f"<td><code>{_v(f'recent_failures.{i}.request_cid', f['request_cid'])}</code></td>"
            f"<td>{escape(f['kind'] or '-')}</td>"
            f"<td class=err>{_v(f'recent_failures.{i}.error', f['error'])}</td></tr>"
        )
    if not doc["recent_failures"]:
        out.append("<tr><td colspan=4 class=muted>none</td></tr>")
    out.append("</table></section></main>")
    out.append(
        '<footer style="padding:0 20px 16px" class=muted>machine-readable: <a href="/status">/status</a> · '
        '<a href="/metrics">/metrics</a></footer></body></html>'
    )
    return "".join(out)
