#!/usr/bin/env python3
"""Renders docs/figures/fleet-scaling.svg from the fleet runs in fleet-scaling.json.

Each run is `podstatus simulate --nodes N ... --json`'s summary with the process's CPU
time added (`cpu_seconds`, user + sys, from /usr/bin/time). The plot shows how the cost
of a fleet grows with it: peak memory and CPU per node, and memory per pod, against the
number of nodes. It also renders docs/figures/memory-account.svg, the memory account (bytes per pod by
part) of the runs in docs/figures/memory-account/after-scaling-*.json. Standard
library only, so it runs wherever python3 does:

    python3 docs/figures/plot_fleet.py
"""

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
WIDTH, HEIGHT, MARGIN = 300, 220, 48


def panel(x0, title, points, unit):
    """One small line chart at x offset x0: points are (nodes, value)."""
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    top = max(ys) * 1.15 or 1.0
    left, right = MARGIN, WIDTH - 12
    bottom, upper = HEIGHT - 36, 30
    xmax = max(xs) * 1.05

    def px(n):
        return x0 + left + (right - left) * n / xmax

    def py(v):
        return bottom - (bottom - upper) * v / top

    out = [f'<text x="{x0 + WIDTH / 2}" y="18" text-anchor="middle" font-size="13">{title}</text>',
           f'<line x1="{x0 + left}" y1="{bottom}" x2="{x0 + right}" y2="{bottom}" stroke="#444"/>',
           f'<line x1="{x0 + left}" y1="{bottom}" x2="{x0 + left}" y2="{upper}" stroke="#444"/>']
    for i in range(5):
        v = top * i / 4
        out.append(f'<text x="{x0 + left - 4}" y="{py(v) + 4:.1f}" text-anchor="end" font-size="10">{v:.3g}</text>')
        out.append(f'<line x1="{x0 + left}" y1="{py(v):.1f}" x2="{x0 + right}" y2="{py(v):.1f}" stroke="#ddd"/>')
    for n in xs:
        out.append(f'<text x="{px(n):.1f}" y="{bottom + 14}" text-anchor="middle" font-size="10">{n}</text>')
    out.append(f'<text x="{x0 + WIDTH / 2}" y="{HEIGHT - 6}" text-anchor="middle" font-size="11">nodes ({unit})</text>')
    path = " ".join(f"{'M' if i == 0 else 'L'}{px(n):.1f},{py(v):.1f}" for i, (n, v) in enumerate(points))
    out.append(f'<path d="{path}" fill="none" stroke="#1f5fa8" stroke-width="2"/>')
    for n, v in points:
        out.append(f'<circle cx="{px(n):.1f}" cy="{py(v):.1f}" r="3" fill="#1f5fa8"/>')
        out.append(f'<text x="{px(n):.1f}" y="{py(v) - 7:.1f}" text-anchor="middle" font-size="10">{v:.3g}</text>')
    return out


def main():
    with open(os.path.join(HERE, "fleet-scaling.json")) as f:
        runs = sorted(json.load(f), key=lambda r: r["nodes"])
    per_node_mib = [(r["nodes"], r["peak_memory_mib"] / r["nodes"]) for r in runs]
    per_node_cpu = [(r["nodes"], 1000.0 * r["cpu_seconds"] / r["seconds"] / r["nodes"]) for r in runs]
    per_pod_kib = [(r["nodes"], 1024.0 * r["peak_memory_mib"] / r["pods_created"]) for r in runs]
    parts = []
    parts += panel(0, "peak memory per node", per_node_mib, "MiB")
    parts += panel(WIDTH, "CPU per node", per_node_cpu, "ms of CPU per s")
    parts += panel(2 * WIDTH, "peak memory per pod created", per_pod_kib, "KiB")
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{3 * WIDTH}" height="{HEIGHT}" '
           f'font-family="sans-serif">\n<rect width="100%" height="100%" fill="white"/>\n'
           + "\n".join(parts) + "\n</svg>\n")
    with open(os.path.join(HERE, "fleet-scaling.svg"), "w") as f:
        f.write(svg)


PARTS = ["store", "pod_managers", "plugins", "supervisors", "host_views", "drivers"]
COLOURS = ["#1f5fa8", "#5b9bd5", "#ed7d31", "#a5a5a5", "#ffc000", "#70ad47", "#7f7f7f"]


def account():
    """docs/figures/memory-account.svg: bytes per pod by part (the memory account of
    `simulate --json`), a stacked bar per run of docs/figures/memory-account/after-scaling-*.json."""
    folder = os.path.join(HERE, "memory-account")
    runs = []
    for name in sorted(os.listdir(folder)):
        if name.startswith("after-scaling-") and name.endswith(".json"):
            with open(os.path.join(folder, name)) as f:
                runs.append(json.load(f))
    runs.sort(key=lambda r: r["nodes"])
    if not runs:
        return
    labels = PARTS + ["not counted"]
    bars = [[r["memory"]["bytes_per_pod"][p] / 1024 for p in PARTS] + [r["memory"]["allocator_overhead_per_pod"] / 1024]
            for r in runs]
    width, height, left, bottom, top = 520, 260, 56, 220, 30
    most = max(sum(b) for b in bars) * 1.1
    out = [f'<text x="{width / 2}" y="18" text-anchor="middle" font-size="13">bytes per pod by part (KiB), '
           f'--pods 10N</text>',
           f'<line x1="{left}" y1="{bottom}" x2="{left + 60 * len(bars) + 40}" y2="{bottom}" stroke="#444"/>']
    for i, (run, bar) in enumerate(zip(runs, bars)):
        x, y = left + 20 + 60 * i, bottom
        for value, colour in zip(bar, COLOURS):
            h = (bottom - top) * value / most
            out.append(f'<rect x="{x}" y="{y - h:.1f}" width="36" height="{h:.1f}" fill="{colour}"/>')
            y -= h
        out.append(f'<text x="{x + 18}" y="{y - 4:.1f}" text-anchor="middle" font-size="10">{sum(bar):.1f}</text>')
        out.append(f'<text x="{x + 18}" y="{bottom + 14}" text-anchor="middle" font-size="10">{run["nodes"]} nodes</text>')
    for j, (label, colour) in enumerate(zip(labels, COLOURS)):
        y = top + 16 * j
        out.append(f'<rect x="{width - 150}" y="{y}" width="10" height="10" fill="{colour}"/>')
        out.append(f'<text x="{width - 135}" y="{y + 9}" font-size="11">{label}</text>')
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif">\n'
           '<rect width="100%" height="100%" fill="white"/>\n' + "\n".join(out) + "\n</svg>\n")
    with open(os.path.join(HERE, "memory-account.svg"), "w") as f:
        f.write(svg)


if __name__ == "__main__":
    main()
    account()
