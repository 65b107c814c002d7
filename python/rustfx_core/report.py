"""Reports of one file's Attribution (rustfx_core.attribution): a short
text for a terminal, and one self-contained HTML file with the bytes.

    print(text_report(attribution))
    write_html(attribution, "report.html")   # contents: attribution.contents

The HTML file has a summary, a legend, the top features and the top spans
(tables), and a hex view (offset, hex, ASCII) with each byte of a top span
coloured by the sum of the scores of the top spans covering it: red for
positive, blue for negative, five levels of |score| relative to the largest.
Large files show only the rows around the top spans (at most `max_rows`
rows of 16 bytes), so the file stays small whatever the input. Everything
from the file or the model (texts, names, the path) is escaped, and a
Content-Security-Policy forbids scripts and remote loads: the bytes of a
hostile file are shown, never run. Standard library and numpy only.
"""

import html
import os

import numpy as np

__all__ = ["text_report", "html_report", "write_html", "show_bytes", "show_path", "LEVELS",
           "POSITIVE_RGB", "NEGATIVE_RGB", "level_rgb"]

# The full colours of the strongest level (matplotlib's red and blue).
POSITIVE_RGB = (214, 39, 40)
NEGATIVE_RGB = (31, 119, 180)
LEVELS = 5
ROW = 16


def show_bytes(text, limit=60):
    """Bytes as a readable quoted string: printable ASCII as is, the rest
    as \\xNN escapes, cut at `limit` characters with an ellipsis."""
    if isinstance(text, str):
        text = text.encode("utf-8", "surrogateescape")
    text = bytes(text)
    out = "".join(chr(b) if 0x20 <= b < 0x7F and b != 0x5C else
                  ("\\\\" if b == 0x5C else f"\\x{b:02x}") for b in text)
    if len(out) > limit:
        out = out[:max(limit - 1, 0)] + "…"
    return '"' + out + '"'


def _describe(attribution):
    a = attribution
    what = f"{a.label} " if a.label is not None else ""
    if a.target is not None:
        what += f"(output {a.target} of {a.prediction.size}: {a.prediction[a.target]:.6g}) "
    if a.base is not None:
        split = f" = base {a.base:+.6g} + scores {a.total:+.6g}"
    else:
        split = f"; scores sum to {a.total:+.6g}"
    return f"prediction: {what}explained {a.output:.6g}{split} [{a.method}]"


def show_path(path):
    """`path` (str or bytes; None: "<bytes>") as text: its UTF-8 as it is,
    each byte that is not UTF-8 as \\xHH (a name such as b"bad\\xffname",
    which Python holds as "bad\\udcffname", shows as bad\\xffname), so a
    report can always be printed and written as UTF-8."""
    if path is None:
        return "<bytes>"
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def text_report(attribution, *, top_k=10, text_limit=60):
    """A short report: the prediction, the top features (summed scores,
    their span counts and texts) and the top byte spans (score, offset,
    length, feature, text), then the notes."""
    a = attribution
    size = f" ({a.size:,} bytes)" if a.size is not None else ""
    lines = [f"rustfx explain: {show_path(a.path)}{size}", _describe(a),
             f"top {top_k} features (score, feature, spans, texts):"]
    for row in a.features(top_k).itertuples(index=False):
        texts = ", ".join(show_bytes(t, text_limit // 2) for t in row.text)
        lines.append(f"  {row.score:+.4g}\t{_feature(row)}\t{row.spans} span"
                     f"{'' if row.spans == 1 else 's'}\t{texts}")
    lines.append(f"top {top_k} spans (score, offset, length, feature, text):")
    for row in a.top(top_k).itertuples(index=False):
        text = _span_text(row, a.contents, text_limit)
        lines.append(f"  {row.score:+.4g}\t0x{row.offset:08x}\t{row.length}\t"
                     f"{_feature(row)}\t{text}")
    lines += [f"note: {n}" for n in a.notes]
    return "\n".join(lines)


def _feature(row):
    # An extractor that names no dimensions gives its own name: add the index.
    if row.feature == row.source or row.feature in _extractors():
        return f"{row.feature}[{row.index}]"
    return str(row.feature)


def _extractors():
    from rustfx_core.spec import registry
    return registry()


def _span_text(row, contents, limit):
    """The span's text, else (histograms, blocks) its first bytes in the file."""
    if len(row.text):
        return show_bytes(row.text, limit)
    if contents is None or row.length == 0:
        return ""
    head = contents[row.offset:row.offset + min(row.length, 16)]
    return "bytes " + show_bytes(head, limit) + ("…" if row.length > 16 else "")


def level_rgb(level, positive=True):
    """The RGB of a colour level (1..LEVELS): white towards the full colour."""
    full = POSITIVE_RGB if positive else NEGATIVE_RGB
    return tuple(round(255 + (c - 255) * level / LEVELS) for c in full)


def _level(score, scale):
    if score == 0 or scale <= 0:
        return ""
    level = int(np.clip(np.ceil(LEVELS * abs(score) / scale), 1, LEVELS))
    return f"{'p' if score > 0 else 'n'}{level}"


def _style():
    rules = []
    for level in range(1, LEVELS + 1):
        for sign, positive in (("p", True), ("n", False)):
            r, g, b = level_rgb(level, positive)
            ink = "#fff" if level >= 4 else "#000"
            rules.append(f".{sign}{level}{{background:rgb({r},{g},{b});color:{ink}}}")
    return """
body{font:14px sans-serif;margin:1em 2em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}
td.num{text-align:right;font-family:monospace}
.hex{font:13px monospace;white-space:pre;line-height:1.35}
.off{color:#888}.gap{color:#888;font-style:italic}
.legend span{display:inline-block;padding:2px 10px;font:12px monospace}
code{word-break:break-all}
""" + "\n".join(rules)


def _rows_to_show(size, marked, max_rows, context=2, span_rows=16):
    """Row numbers of the hex view: all for a small file, else the rows
    around each marked span (in rank order) until max_rows are chosen."""
    total = (size + ROW - 1) // ROW
    if total <= max_rows:
        return list(range(total))
    chosen = set()
    for offset, length in marked:
        first = max(offset // ROW - context, 0)
        last = min((offset + max(min(length, span_rows * ROW), 1) - 1) // ROW + context,
                   total - 1)
        new = [r for r in range(first, last + 1) if r not in chosen]
        if len(chosen) + len(new) > max_rows:
            break
        chosen.update(new)
    # Close gaps of a row or two: a "not shown" line would cost as much.
    rows = sorted(chosen)
    for a, b in zip(rows, rows[1:]):
        if 1 < b - a <= 3 and len(chosen) + b - a - 1 <= max_rows:
            chosen.update(range(a + 1, b))
    return sorted(chosen)


def _hex_view(contents, heat, scale, rows, top_rows):
    esc = html.escape
    lines, previous = [], -1
    for row in rows:
        if row != previous + 1:
            skipped = (row - previous - 1) * ROW
            lines.append(f'<span class="gap">… {skipped:,} bytes not shown …</span>')
        previous = row
        start = row * ROW
        chunk = contents[start:start + ROW]
        hex_cells, ascii_cells = [], []
        for i, b in enumerate(chunk):
            cls = _level(heat[start + i], scale)
            attr = f' class="{cls}"' if cls else ""
            hex_cells.append(f"<span{attr}>{b:02x}</span>")
            ch = chr(b) if 0x20 <= b < 0x7F else "."
            ascii_cells.append(f"<span{attr}>{esc(ch)}</span>")
        pad = "   " * (ROW - len(chunk))  # keeps the ASCII column aligned
        anchor = f' id="r{row}"' if row in top_rows else ""
        lines.append(f'<span class="off"{anchor}>{start:08x}</span>  {" ".join(hex_cells)}{pad}'
                     f'  {"".join(ascii_cells)}')
    if rows and rows[-1] + 1 < (len(contents) + ROW - 1) // ROW:
        lines.append(f'<span class="gap">… {len(contents) - (rows[-1] + 1) * ROW:,} '
                     'bytes not shown …</span>')
    return "\n".join(lines)


def html_report(attribution, contents=None, *, top_k=None, max_rows=512, title=None):
    """The HTML text of the report of `attribution` for the file's bytes
    `contents` (default: attribution.contents, those the model saw), with
    its top_k spans and features (default: attribution.top_k), at most
    `max_rows` hex rows: self-contained, no scripts."""
    esc = html.escape
    a = attribution
    top_k = top_k or a.top_k
    contents = bytes(a.contents if contents is None else contents)
    top = a.top(top_k)
    # Heat per byte: the summed scores of the top spans covering it.
    heat = np.zeros(len(contents) + 1, np.float64)
    for row in top.itertuples(index=False):
        end = min(row.offset + max(row.length, 1), len(contents))
        heat[min(row.offset, len(contents)):end] += row.score
    scale = float(np.abs(heat).max()) if len(contents) else 0.0
    marked = [(int(o), int(n)) for o, n in zip(top["offset"], top["length"])]
    rows = _rows_to_show(len(contents), marked, max_rows)
    shown = set(rows)
    top_rows = {o // ROW for o, _ in marked if o // ROW in shown}

    legend = "".join(
        f'<span class="{s}{lv}">{"≤+" if s == "p" else "≥−"}{lv * scale / LEVELS:.3g}</span>'
        for s in ("n", "p") for lv in (range(LEVELS, 0, -1) if s == "n" else range(1, LEVELS + 1)))

    features = a.features(top_k)
    feature_scale = _max_abs(features["score"])
    feature_rows = []
    for r in features.itertuples(index=False):
        texts = ", ".join(esc(show_bytes(t, 80)) for t in r.text)
        feature_rows.append(
            f'<tr><td class="num {_level(r.score, feature_scale)}">'
            f"{r.score:+.4g}</td><td>{esc(str(r.source))}</td><td>{esc(_feature(r))}</td>"
            f'<td class="num">{r.spans}</td><td><code>{texts}</code></td></tr>')
    span_rows = []
    span_scale = _max_abs(top["score"])
    for r in top.itertuples(index=False):
        text = esc(_span_text(r, contents, 120))
        link = (f'<a href="#r{r.offset // ROW}">0x{r.offset:08x}</a>'
                if r.offset // ROW in shown else f"0x{r.offset:08x}")
        span_rows.append(
            f'<tr><td class="num {_level(r.score, span_scale)}">{r.score:+.4g}</td>'
            f'<td class="num">{link}</td><td class="num">{r.length}</td>'
            f"<td>{esc(_feature(r))}</td><td><code>{text}</code></td></tr>")
    notes = "".join(f"<li>{esc(n)}</li>" for n in a.notes)
    name = show_path(a.path)
    heading = esc(title or f"rustfx explain: {name}")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>{heading}</title><style>{_style()}</style></head>
<body>
<h1>{heading}</h1>
<p><code>{esc(name)}</code>, {len(contents):,} bytes. {esc(_describe(a))}.</p>
<p class="legend">Byte colour: sum of the scores of the top {len(top)} spans covering it
(blue lowers the output, red raises it): {legend}</p>
<h2>Top features</h2>
<table><tr><th>score</th><th>source</th><th>feature</th><th>spans</th><th>texts</th></tr>
{"".join(feature_rows)}</table>
<h2>Top spans</h2>
<table><tr><th>score</th><th>offset</th><th>length</th><th>feature</th><th>text</th></tr>
{"".join(span_rows)}</table>
{f"<ul>{notes}</ul>" if notes else ""}
<h2>Bytes</h2>
<p>{len(rows):,} of {(len(contents) + ROW - 1) // ROW:,} rows of {ROW} bytes shown.</p>
<div class="hex">{_hex_view(contents, heat, scale, rows, top_rows)}</div>
</body></html>
"""


def _max_abs(values):
    values = np.abs(np.asarray(values, np.float64))
    return float(values.max()) if values.size else 0.0


def write_html(attribution, path, contents=None, **kwargs):
    """Writes html_report(attribution, contents, **kwargs) to `path`."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(html_report(attribution, contents, **kwargs))
    return path
