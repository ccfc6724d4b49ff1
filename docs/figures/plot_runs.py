#!/usr/bin/env python3
"""Renders the churn and latency figures of docs/benchmarks.md and docs/concurrency.md
from the runs' JSON in this folder:

- churn-1000-pods.json -> churn-1000-pods.svg (one node, 1,000 pods, churn rising);
- churn-v3.json -> churn-v3.svg (v3 beside v1 and v2);
- overlapped-syncs.json -> overlapped-syncs.svg (propagation and caller latency of each
  plugin against an API server 20 ms away, and at the kubelet's budget).

A churn file is `{"source": ..., "runs": [...]}`, each run `podstatus simulate --json`'s
summary with the run's `churn` (events per second) and `kube_api_qps` added, as the
`simulate_churn` example writes it (`PODSTATUS_CHURN_JSON=FILE`). Standard library only,
so it runs wherever python3 does:

    python3 docs/figures/plot_runs.py
"""

import json
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
WIDTH, HEIGHT, MARGIN = 300, 230, 52
COLOURS = ["#1f5fa8", "#c2561a", "#2e8b57", "#7b3fa0", "#8a6d00", "#b22e4c"]


def log_ticks(low, high):
    """Powers of ten (and their halves' neighbours 2 and 5) spanning low..high."""
    ticks = []
    for exponent in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1):
        for mantissa in (1, 2, 5):
            value = mantissa * 10 ** exponent
            if low <= value <= high:
                ticks.append(value)
    return ticks


def nice_step(rough):
    """1, 2 or 5 times a power of ten, at least rough."""
    power = 10 ** math.floor(math.log10(rough))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= rough)


def label(value):
    """A tick's text: 0.5, 20, 1k, 2M."""
    for divisor, suffix in ((1e6, "M"), (1e3, "k")):
        if value >= divisor:
            return f"{value / divisor:g}{suffix}"
    return f"{value:g}"


def duration(ms):
    """Milliseconds as the summaries write durations: 350ms, 16.8s, 12µs."""
    if ms >= 1000:
        return f"{ms / 1000:.3g}s"
    if ms >= 1:
        return f"{ms:.3g}ms"
    return f"{ms * 1000:.3g}µs"


def line_panel(x0, y0, title, series, y_unit, log_y, x_label="churn (events/s)"):
    """A line chart at (x0, y0): series is [(name, [(x, y)...])], x on a log scale."""
    xs = sorted({x for _, points in series for x, _ in points})
    ys = [y for _, points in series for _, y in points]
    left, right = x0 + MARGIN, x0 + WIDTH - 12
    bottom, upper = y0 + HEIGHT - 40, y0 + 30
    lx = (math.log(min(xs)), math.log(max(xs)))

    def px(x):
        span = (lx[1] - lx[0]) or 1.0
        return left + (right - left) * (math.log(x) - lx[0]) / span

    if log_y:
        low, high = min(ys) / 1.5, max(ys) * 1.5
        ticks = log_ticks(low, high)
        if len(ticks) > 7:
            ticks = [t for t in ticks if str(t).lstrip("0.").startswith("1")]

        def py(y):
            return bottom - (bottom - upper) * (math.log(y) - math.log(low)) / (math.log(high) - math.log(low))
    else:
        step = nice_step(max(ys) * 1.15 / 4)
        high = step * math.ceil(max(ys) * 1.15 / step)
        ticks = [step * i for i in range(round(high / step) + 1)]

        def py(y):
            return bottom - (bottom - upper) * y / high

    out = [f'<text x="{x0 + WIDTH / 2}" y="{y0 + 18}" text-anchor="middle" font-size="13">{title}</text>',
           f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#444"/>',
           f'<line x1="{left}" y1="{bottom}" x2="{left}" y2="{upper}" stroke="#444"/>']
    for tick in ticks:
        text = duration(tick) if y_unit == "ms" else (label(tick) if log_y else f"{tick:.3g}")
        out.append(f'<text x="{left - 4}" y="{py(tick) + 4:.1f}" text-anchor="end" font-size="10">{text}</text>')
        out.append(f'<line x1="{left}" y1="{py(tick):.1f}" x2="{right}" y2="{py(tick):.1f}" stroke="#ddd"/>')
    shown = None
    for x in xs:
        # Neighbours too close to read apart (160 and 200): the first only.
        if shown is not None and px(x) - px(shown) < 24:
            continue
        shown = x
        out.append(f'<text x="{px(x):.1f}" y="{bottom + 14}" text-anchor="middle" font-size="10">{x:g}</text>')
    out.append(f'<text x="{x0 + WIDTH / 2}" y="{y0 + HEIGHT - 12}" text-anchor="middle" font-size="11">{x_label}</text>')
    for i, (name, points) in enumerate(series):
        colour = COLOURS[i % len(COLOURS)]
        points = sorted(points)
        path = " ".join(f"{'M' if j == 0 else 'L'}{px(x):.1f},{py(y):.1f}" for j, (x, y) in enumerate(points))
        out.append(f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for x, y in points:
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{colour}"/>')
    return out


def legend(x0, y0, names):
    out = []
    for i, name in enumerate(names):
        colour = COLOURS[i % len(COLOURS)]
        x = x0 + 20 + i * 150
        out.append(f'<line x1="{x}" y1="{y0}" x2="{x + 18}" y2="{y0}" stroke="{colour}" stroke-width="3"/>')
        out.append(f'<text x="{x + 24}" y="{y0 + 4}" font-size="11">{name}</text>')
    return out


def svg(width, height, parts):
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'font-family="sans-serif">\n<rect width="100%" height="100%" fill="white"/>\n'
            + "\n".join(parts) + "\n</svg>\n")


def churn_figure(name):
    """Three panels over the churn: propagation p99, statuses written a second, API
    calls per status version; a line per logic (and per client budget)."""
    with open(os.path.join(HERE, f"{name}.json")) as f:
        runs = json.load(f)["runs"]
    series = {}
    for run in runs:
        qps = run.get("kube_api_qps", 50)
        key = run["logic"] if qps == 50 else f"{run['logic']}, QPS {qps:g}"
        series.setdefault(key, []).append(run)
    names = list(series)

    def of(value):
        return [(n, sorted((r["churn"], value(r)) for r in series[n])) for n in names]

    parts = []
    parts += line_panel(0, 0, "propagation p99", of(lambda r: r["propagation_ms"]["p99"]), "ms", True)
    parts += line_panel(WIDTH, 0, "statuses written per second",
                        of(lambda r: r["statuses_written"] / r["seconds"]), "", True)
    parts += line_panel(2 * WIDTH, 0, "API calls per status version",
                        of(lambda r: r["api_calls_per_version"]), "", False)
    parts += legend(0, HEIGHT + 6, names)
    with open(os.path.join(HERE, f"{name}.svg"), "w") as f:
        f.write(svg(3 * WIDTH, HEIGHT + 20, parts))


def bar_panel(x0, y0, title, bars):
    """Horizontal bars on a log scale: bars is [(name, milliseconds)]."""
    left, right = x0 + 150, x0 + 2 * WIDTH - 60
    top = y0 + 30
    row = 20
    low = min(v for _, v in bars) / 2
    high = max(v for _, v in bars) * 2

    def px(v):
        return left + (right - left) * (math.log(v) - math.log(low)) / (math.log(high) - math.log(low))

    bottom = top + row * len(bars)
    out = [f'<text x="{x0 + WIDTH}" y="{y0 + 18}" text-anchor="middle" font-size="13">{title}</text>',
           f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#444"/>']
    for tick in [t for t in log_ticks(low, high) if str(t).lstrip("0.").startswith("1")]:
        out.append(f'<line x1="{px(tick):.1f}" y1="{top}" x2="{px(tick):.1f}" y2="{bottom}" stroke="#ddd"/>')
        out.append(f'<text x="{px(tick):.1f}" y="{bottom + 14}" text-anchor="middle" font-size="10">'
                   f'{duration(tick)}</text>')
    for i, (name, value) in enumerate(bars):
        y = top + i * row
        colour = COLOURS[i % len(COLOURS)]
        out.append(f'<text x="{left - 6}" y="{y + 14}" text-anchor="end" font-size="11">{name}</text>')
        out.append(f'<rect x="{left}" y="{y + 3}" width="{px(value) - left:.1f}" height="{row - 6}" fill="{colour}"/>')
        out.append(f'<text x="{px(value) + 4:.1f}" y="{y + 14}" font-size="10">{duration(value)}</text>')
    return out, bottom + 24 - y0


def overlapped_figure():
    """Per plugin, propagation p99 and caller p99, against a server 20 ms away and at
    the kubelet's client budget."""
    with open(os.path.join(HERE, "overlapped-syncs.json")) as f:
        runs = json.load(f)["runs"]
    settings = [("api_latency_20ms", "the API server 20 ms away, churn 600/s"),
                ("qps_50", "the kubelet's budget (QPS 50), churn 40/s")]
    parts, y = [], 0
    for setting, words in settings:
        rows = [r for r in runs if r["setting"] == setting]
        for measure, what in (("propagation_ms", "propagation p99"), ("caller_latency_ms", "caller p99")):
            panel, height = bar_panel(0, y, f"{what}, {words}", [(r["plugin"], r[measure]["p99"]) for r in rows])
            parts += panel
            y += height
    with open(os.path.join(HERE, "overlapped-syncs.svg"), "w") as f:
        f.write(svg(2 * WIDTH, y, parts))


def main():
    churn_figure("churn-1000-pods")
    churn_figure("churn-v3")
    overlapped_figure()


if __name__ == "__main__":
    main()
