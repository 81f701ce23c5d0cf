"""SVG charts of a run, written next to its tables: for every producing workload, msgs/s and p99
per broker and generator side by side; for the scaling workloads, msgs/s and p99 against the
number of producers and of queues, one curve per broker and generator. Plain SVG written here,
no plotting library: a browser or the repository's web view shows it as it is."""

import math
from html import escape

from . import brokers
from .workloads import SCALING

# One colour per broker, the same in every chart.
COLOURS = {brokers.SILO: "#1f77b4", brokers.APACHE: "#d62728", brokers.RUST: "#ff7f0e", brokers.NULL: "#7f7f7f"}
DASH = {"silo": "", "java": "6,3"}  # the generator: solid for silo bench, dashed for Apache's tools

WIDTH, HEIGHT = 460, 300
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 40, 80


def _colour(key):
    return COLOURS.get(key, "#2ca02c")


def _nice_max(v):
    """A round number at or above v, for the top of an axis."""
    if v <= 0:
        return 1
    mag = 10 ** math.floor(math.log10(v))
    for step in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if v <= step * mag:
            return step * mag
    return 10 * mag


def _fmt(v):
    if v >= 1e6:
        return f"{v / 1e6:.3g}M"
    if v >= 1e3:
        return f"{v / 1e3:.3g}k"
    return f"{v:g}"


def _axes(title, ylabel, ymax):
    """The frame, title and y grid of one panel; returns its SVG parts and the y mapping."""
    h = HEIGHT - TOP - BOTTOM
    parts = [f'<text x="{WIDTH / 2}" y="18" text-anchor="middle" font-size="14" font-weight="bold">{escape(title)}</text>',
             f'<text x="14" y="{TOP + h / 2}" font-size="11" text-anchor="middle" '
             f'transform="rotate(-90 14 {TOP + h / 2})">{escape(ylabel)}</text>']
    for i in range(5):
        v = ymax * i / 4
        y = TOP + h - h * i / 4
        parts.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{_fmt(v)}</text>')
    parts.append(f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + h}" stroke="#333"/>')
    parts.append(f'<line x1="{LEFT}" y1="{TOP + h}" x2="{WIDTH - RIGHT}" y2="{TOP + h}" stroke="#333"/>')
    return parts, (lambda v: TOP + h - h * min(v, ymax) / ymax)


def _svg(panels, width):
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{HEIGHT}" '
            f'viewBox="0 0 {width} {HEIGHT}" font-family="sans-serif">'
            f'<rect width="100%" height="100%" fill="white"/>' + "".join(panels) + "</svg>\n")


def _panel(x, parts):
    return f'<g transform="translate({x},0)">' + "".join(parts) + "</g>"


SHORT = {brokers.SILO: "Silo", brokers.APACHE: "Apache 5.3.3", brokers.RUST: "rocketmq-rust", brokers.NULL: "null (ceiling)"}


def _label(r):
    return f"{SHORT.get(r['broker'], r['broker'])} ({r['generator']})"


def _p99_ms(r):
    p99 = (r.get("latency_us") or {}).get("p99")
    return None if p99 is None else p99 / 1000


def bars(wl, rows):
    """msgs/s and p99 of each broker x generator of one workload, two panels side by side."""
    rows = [r for r in rows if r.get("status") == "ok" and r.get("msgs_per_sec")]
    if not rows:
        return None
    panels = []
    # Apache's benchmark tools report no percentiles: their rows have no p99 bar.
    for i, (title, unit, value, shown) in enumerate([
            (f"{wl}: msgs/s", "msgs/s", lambda r: r.get("msgs_per_sec") or 0, rows),
            (f"{wl}: p99 latency (silo bench)", "ms", _p99_ms, [r for r in rows if _p99_ms(r) is not None])]):
        if not shown:
            continue
        rows_here = shown
        ymax = _nice_max(max(value(r) for r in rows_here) * 1.05)
        parts, y = _axes(title, unit, ymax)
        slot = (WIDTH - LEFT - RIGHT) / len(rows_here)
        base = HEIGHT - BOTTOM
        for j, r in enumerate(rows_here):
            v = value(r)
            x0 = LEFT + j * slot + slot * 0.15
            parts.append(f'<rect x="{x0:.1f}" y="{y(v):.1f}" width="{slot * 0.7:.1f}" height="{base - y(v):.1f}" '
                         f'fill="{_colour(r["broker"])}" fill-opacity="{1.0 if r["generator"] == "silo" else 0.55}">'
                         f'<title>{escape(_label(r))}: {v:,.3g}</title></rect>')
            parts.append(f'<text x="{x0 + slot * 0.35:.1f}" y="{y(v) - 3:.1f}" font-size="10" text-anchor="middle">'
                         f'{_fmt(round(v, 3 if v < 10 else 0))}</text>')
            lx = x0 + slot * 0.35
            parts.append(f'<text x="{lx:.1f}" y="{base + 12}" font-size="10" text-anchor="end" '
                         f'transform="rotate(-30 {lx:.1f} {base + 12})">{escape(_label(r))}</text>')
        panels.append(_panel(i * WIDTH, parts))
    return _svg(panels, len(panels) * WIDTH)


def curves(results, axis):
    """msgs/s and p99 against producers or queues (SCALING[axis]), one curve per broker x generator."""
    points = SCALING[axis]
    series = {}
    for x, name in points:
        for r in results:
            if r["workload"] == name and r.get("status") == "ok" and r.get("offered_rate") is None:
                series.setdefault((r["broker"], r["generator"]), []).append((x, r))
    series = {k: v for k, v in series.items() if len(v) >= 2}
    if not series:
        return None
    xs = [x for x, _ in points]
    lo, hi = math.log(min(xs)), math.log(max(xs))
    w = WIDTH - LEFT - RIGHT

    def xpos(x):
        return LEFT + (w * (math.log(x) - lo) / (hi - lo) if hi > lo else w / 2)

    panels = []
    for i, (title, unit, value) in enumerate([
            (f"msgs/s by {axis}", "msgs/s", lambda r: r.get("msgs_per_sec") or 0),
            (f"p99 latency by {axis}", "ms", lambda r: _p99_ms(r) or 0)]):
        ymax = _nice_max(max(value(r) for pts in series.values() for _, r in pts) * 1.05)
        parts, y = _axes(title, unit, ymax)
        for x in xs:
            parts.append(f'<text x="{xpos(x):.1f}" y="{HEIGHT - BOTTOM + 14}" font-size="10" text-anchor="middle">{x}</text>')
        parts.append(f'<text x="{LEFT + w / 2}" y="{HEIGHT - BOTTOM + 28}" font-size="11" text-anchor="middle">{axis}</text>')
        for k, ((broker, gen), pts) in enumerate(sorted(series.items())):
            pts = sorted(pts, key=lambda p: p[0])
            path = " ".join(f"{xpos(x):.1f},{y(value(r)):.1f}" for x, r in pts)
            colour = _colour(broker)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2" '
                         f'stroke-dasharray="{DASH.get(gen, "2,2")}"/>')
            for x, r in pts:
                parts.append(f'<circle cx="{xpos(x):.1f}" cy="{y(value(r)):.1f}" r="3" fill="{colour}">'
                             f'<title>{escape(_label(r))}, {x} {axis}: {value(r):,.3g}</title></circle>')
            ly = HEIGHT - BOTTOM + 44 + 12 * (k % 3)
            lx = LEFT + (k // 3) * 190
            parts.append(f'<line x1="{lx}" y1="{ly - 4}" x2="{lx + 18}" y2="{ly - 4}" stroke="{colour}" stroke-width="2" '
                         f'stroke-dasharray="{DASH.get(gen, "2,2")}"/>')
            parts.append(f'<text x="{lx + 22}" y="{ly}" font-size="10">{escape(_label(pts[0][1]))}</text>')
        panels.append(_panel(i * WIDTH, parts))
    return _svg(panels, 2 * WIDTH)


def write(results, workload_names, run_dir):
    """Writes RUN/charts/*.svg; returns {name: relative path} of what was written."""
    out_dir = run_dir / "charts"
    written = {}
    for wl in workload_names:
        rows = [r for r in results if r["workload"] == wl and r.get("offered_rate") is None
                and r.get("msgs_per_sec") is not None and "latency_us" in r]
        svg = bars(wl, rows)
        if svg:
            out_dir.mkdir(exist_ok=True)
            (out_dir / f"{wl}.svg").write_text(svg)
            written[wl] = f"charts/{wl}.svg"
    for axis in SCALING:
        svg = curves(results, axis)
        if svg:
            out_dir.mkdir(exist_ok=True)
            (out_dir / f"scaling-{axis}.svg").write_text(svg)
            written[f"scaling-{axis}"] = f"charts/scaling-{axis}.svg"
    return written
