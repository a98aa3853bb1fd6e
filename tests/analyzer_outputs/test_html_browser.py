"""The HTML report in a real headless browser: it renders, its script runs, no console errors.

Needs Debian's `chromium` (apt-get install -y chromium); skipped with the reason when absent.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from otel_agent_trace.cli import main as cli_main

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install -y chromium)")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0"]


def _browser(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args],
                          capture_output=True, text=True, timeout=90)


def _png_colours(path: Path) -> int:
    """Distinct colours in a PNG (8-bit RGB/RGBA, non-interlaced): a blank page has one."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height, ctype = 8, b"", 0, 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    bpp = 4 if ctype == 6 else 3
    stride = width * bpp
    colours, prev = set(), bytearray(stride)
    for y in range(height):
        row = raw[y * (stride + 1):(y + 1) * (stride + 1)]
        f, line = row[0], bytearray(row[1:])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        if y % 7 == 0:
            colours.update(bytes(line[i:i + 3]) for i in range(0, stride, bpp * 5))
        prev = line
    return len(colours)


def test_html_report_renders_in_chromium_without_console_errors(demo, tmp_path, capsys):
    page = tmp_path / "report.html"
    assert cli_main(["analyze", "--format", "html", "-o", str(page), str(demo)]) == 0
    capsys.readouterr()
    # the script runs to its end (it marks the body) and nothing is logged to the console
    dom = _browser(tmp_path, "--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert 'data-ready="1"' in dom.stdout
    console = [line for line in dom.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert console == []
    shot = tmp_path / "report.png"
    run = _browser(tmp_path, f"--screenshot={shot}", "--window-size=1400,1800", page.as_uri())
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    assert [line for line in run.stderr.splitlines() if "CONSOLE" in line] == []
    assert _png_colours(shot) > 20  # coloured bars, pills and text, not a blank page


def test_console_errors_would_be_caught(tmp_path):
    """The check above can fail: a page with a script error is reported."""
    page = tmp_path / "bad.html"
    page.write_text("<html><body><script>undefinedFunction();</script></body></html>")
    dom = _browser(tmp_path, "--dump-dom", page.as_uri())
    assert any("Uncaught" in line for line in dom.stderr.splitlines())


def test_a_fleet_report_renders_in_chromium(demo, tmp_path, capsys):
    """Past html.DETAIL_ALL_RUNS runs (the demo's four tickets copied under 30 trace ids each): the
    failure groups page renders, its script runs, no console errors, and only examples get sections."""
    import json
    import re

    from otel_agent_trace.analyzer.report.html import DETAIL_ALL_RUNS, EXAMPLES_PER_GROUP

    lines = Path(demo).read_text().splitlines()
    traces = sorted({s["traceId"] for ln in lines for rs in json.loads(ln)["resourceSpans"]
                     for ss in rs["scopeSpans"] for s in ss["spans"]})
    copies = []
    for k in range(30):
        for ln in lines:
            for t in traces:
                ln = ln.replace(t, f"{k:04x}{t[4:]}")
            copies.append(ln)
    fleet = tmp_path / "fleet.jsonl"
    fleet.write_text("\n".join(copies) + "\n")
    page = tmp_path / "fleet.html"
    assert cli_main(["analyze", "--format", "html", "-o", str(page), str(fleet)]) == 0
    capsys.readouterr()
    text = page.read_text()
    assert 30 * len(traces) > DETAIL_ALL_RUNS and "Failure groups" in text
    groups = len(re.findall(r"<details(?: open)?><summary>\d+ × ", text))
    assert text.count("<section class='run ") == groups * EXAMPLES_PER_GROUP
    dom = _browser(tmp_path, "--dump-dom", page.as_uri())
    assert dom.returncode == 0 and 'data-ready="1"' in dom.stdout, dom.stderr[-2000:]
    assert [line for line in dom.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line] == []
