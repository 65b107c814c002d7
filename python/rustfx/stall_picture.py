"""The picture of a `rustfx.pipeline.Profile` (`Profile.to_html`): a
self-contained HTML page of the stall over time and of the stages'
throughputs, in inline SVG drawn by hand (no library, no script).
"""

import html
import math

from rustfx.pipeline import Sample, duration_text

# The picture: inline SVG, drawn by hand (no library, no script).
WAIT_COLOUR, STEP_COLOUR, STALL_COLOUR = "#d62728", "#1f77b4", "#111111"


def _svg_steps(p, width=960, height=300):
    pad_l, pad_r, pad_t, pad_b = 60, 40, 20, 40
    w, h = width - pad_l - pad_r, height - pad_t - pad_b
    samples = p.samples or [Sample(0, 0, 0)]
    longest = max(s.wait + s.step for s in samples) or 1e-9
    n = len(samples)
    bar = w / n
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'role="img" aria-label="wait and step time per step">',
             f'<rect x="{pad_l}" y="{pad_t}" width="{w}" height="{h}" fill="#fafafa" '
             f'stroke="#ccc"/>']
    for i, s in enumerate(samples):
        x = pad_l + i * bar
        hw, hs = h * s.wait / longest, h * s.step / longest
        parts.append(f'<rect class="wait" x="{x:.2f}" y="{pad_t + h - hw:.2f}" '
                     f'width="{max(bar * 0.9, 0.5):.2f}" height="{hw:.2f}" fill="{WAIT_COLOUR}">'
                     f'<title>step {i}: wait {duration_text(s.wait)}</title></rect>')
        parts.append(f'<rect class="step" x="{x:.2f}" y="{pad_t + h - hw - hs:.2f}" '
                     f'width="{max(bar * 0.9, 0.5):.2f}" height="{hs:.2f}" fill="{STEP_COLOUR}">'
                     f'<title>step {i}: step {duration_text(s.step)}</title></rect>')
    # Rolling stall (window of 10 steps), on a 0-100% scale.
    points, window = [], 10
    for i in range(n):
        chunk = samples[max(0, i - window + 1):i + 1]
        busy = sum(c.wait + c.step for c in chunk)
        share = sum(c.wait for c in chunk) / busy if busy else 0
        points.append(f"{pad_l + (i + 0.45) * bar:.2f},{pad_t + h - h * share:.2f}")
    parts.append(f'<polyline class="stall" points="{" ".join(points)}" fill="none" '
                 f'stroke="{STALL_COLOUR}" stroke-width="2"/>')
    parts.append(f'<text x="{pad_l - 6}" y="{pad_t + 10}" text-anchor="end" font-size="11">'
                 f'{duration_text(longest)}</text>')
    parts.append(f'<text x="{pad_l - 6}" y="{pad_t + h}" text-anchor="end" font-size="11">0</text>')
    parts.append(f'<text x="{pad_l + w + 4}" y="{pad_t + 10}" font-size="11">100%</text>')
    parts.append(f'<text x="{pad_l + w + 4}" y="{pad_t + h}" font-size="11">0%</text>')
    parts.append(f'<text x="{pad_l + w / 2}" y="{height - 10}" text-anchor="middle" '
                 f'font-size="12">step (left to right: {n} steps over '
                 f'{p.wall_seconds:.2f} s); black line: stall over the last {window} steps '
                 f'(right axis)</text>')
    parts.append("</svg>")
    return "".join(parts)


def _svg_rates(p, width=960):
    rows = [(f"stage {s.name}", s.elements_per_second, "#2ca02c") for s in p.stages.values()]
    rows.append(("consumer (with step)", p.elements_per_second, STEP_COLOUR))
    if p.ceiling_elements_per_second is not None:
        rows.append(("ceiling (input free)", p.ceiling_elements_per_second, "#9467bd"))
    finite = [r for _, r, _ in rows if r and math.isfinite(r)]
    top = max(finite) if finite else 1.0
    label_w, bar_h, gap = 200, 22, 8
    height = len(rows) * (bar_h + gap) + 20
    w = width - label_w - 140
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'role="img" aria-label="throughputs">']
    for i, (name, rate, colour) in enumerate(rows):
        y = 10 + i * (bar_h + gap)
        shown = min(rate, top) if rate and math.isfinite(rate) else top
        # Log scale: throughputs span orders of magnitude.
        frac = math.log10(1 + shown) / math.log10(1 + top) if top > 0 else 0
        parts.append(f'<text x="{label_w - 8}" y="{y + 15}" text-anchor="end" '
                     f'font-size="12">{html.escape(name)}</text>')
        parts.append(f'<rect class="rate" x="{label_w}" y="{y}" width="{max(1, w * frac):.1f}" '
                     f'height="{bar_h}" fill="{colour}"/>')
        parts.append(f'<text x="{label_w + max(1, w * frac) + 6:.1f}" y="{y + 15}" '
                     f'font-size="12">{rate:,.1f}/s</text>')
    parts.append("</svg>")
    return "".join(parts)


WORKERS_COLOUR = "#ff7f0e"


def _svg_workers(report, width=960, height=160):
    """rustfx.offload's workers serving over its epoch (report["workers"]:
    [(seconds, count)] at each change), a step line."""
    points = report.get("workers") or [(0.0, 0)]
    seconds = max(report.get("seconds") or 0.0, points[-1][0], 1e-9)
    most = max(max(c for _, c in points), 1)
    pad_l, pad_r, pad_t, pad_b = 60, 40, 10, 40
    w, h = width - pad_l - pad_r, height - pad_t - pad_b

    def xy(t, c):
        return f"{pad_l + w * t / seconds:.2f},{pad_t + h - h * c / most:.2f}"

    line = []
    for i, (t, c) in enumerate(points):
        if i:
            line.append(xy(t, points[i - 1][1]))
        line.append(xy(t, c))
    line.append(xy(seconds, points[-1][1]))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'role="img" aria-label="workers serving over time">'
            f'<rect x="{pad_l}" y="{pad_t}" width="{w}" height="{h}" fill="#fafafa" '
            f'stroke="#ccc"/>'
            f'<polyline class="workers" points="{" ".join(line)}" fill="none" '
            f'stroke="{WORKERS_COLOUR}" stroke-width="2"/>'
            f'<text x="{pad_l - 6}" y="{pad_t + 10}" text-anchor="end" font-size="11">{most}</text>'
            f'<text x="{pad_l - 6}" y="{pad_t + h}" text-anchor="end" font-size="11">0</text>'
            f'<text x="{pad_l + w / 2}" y="{height - 10}" text-anchor="middle" font-size="12">'
            f'seconds into the epoch (0 to {seconds:.2f}); mean {report.get("workers_mean", 0):.2f}'
            f' workers, {report.get("workers_replaced", 0)} replaced</text></svg>')


def page(p, workers=None):
    rec = p.recommendation
    reasons = "".join(f"<li>{html.escape(r)}</li>" for r in rec.reasons)
    head = html.escape(str(rec).splitlines()[0])
    figures = html.escape(str(p))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>rustfx stall profile</title>
<style>body{{font-family:sans-serif;margin:20px;color:#111}}
.key span{{display:inline-block;width:12px;height:12px;margin:0 4px 0 14px}}
pre{{background:#f4f4f4;padding:8px}}</style></head><body>
<h1>Stall profile: {p.stall:.1%} waiting</h1>
<p><b>Recommendation: {head}</b></p><ul>{reasons}</ul>
<h2>Wait and step time, step by step</h2>
<p class="key"><span style="background:{WAIT_COLOUR}"></span>wait in next()
<span style="background:{STEP_COLOUR}"></span>step
<span style="background:{STALL_COLOUR}"></span>rolling stall</p>
{_svg_steps(p)}
{"" if workers is None else "<h2>Offload workers serving</h2>" + _svg_workers(workers)}
<h2>Throughputs (elements/s, log scale)</h2>
{_svg_rates(p)}
<h2>Figures</h2><pre>{figures}</pre>
</body></html>
"""
