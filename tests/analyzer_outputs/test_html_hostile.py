"""No trace content can run script in the HTML report (issue 18), checked in real headless chromium.

The demo's real trace file is rewritten so that every string it carries (span, event and
resource names and attributes, status messages, JSON leaves of messages and tool arguments;
only ids are kept) holds payloads that would mark the page (`data-pwned` on <body>) if they ran.
The page must not be marked, with its Content-Security-Policy and with that policy removed
(escaping alone holds), while its own script still runs. Controls show the check can fail.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_html_browser import CHROMIUM, _browser

from otel_agent_trace.cli import main as cli_main

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install -y chromium)")
MARK = "document.body.setAttribute('data-pwned','1')"
PAYLOADS = [
    f"<script>{MARK}</script>",
    f"\"><img src=x onerror=\"{MARK}\">",
    f"'><svg onload={MARK}>",
    f"</script><script>{MARK}</script>",
    f"javascript:{MARK}",
    f"</title></style></textarea><img src=x onerror={MARK}>",
    f"]]><svg><script>{MARK}</script></svg>",
    f"<a href='javascript:{MARK}' id=x>x</a><iframe srcdoc=\"<script>parent.{MARK}</script>\">",
    f"{{{{constructor.constructor(\"{MARK}\")()}}}}",
    f"<meta http-equiv=refresh content='0;url=javascript:{MARK}'>",
]
IDS = {"traceId", "spanId", "parentSpanId"}
KEEP_VALUES = {"gen_ai.operation.name"}  # without it nothing is a run: every other value is hostile


def _hostile(value, k):
    """`value` with a payload in every string (JSON text too, leaf by leaf)."""
    if isinstance(value, str):
        try:
            doc = json.loads(value)
        except ValueError:
            doc = None
        if isinstance(doc, (dict, list)):
            return json.dumps(_hostile(doc, k))
        return value + PAYLOADS[k % len(PAYLOADS)]
    if isinstance(value, list):
        return [_hostile(v, k + i) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {key: _hostile(v, k + i) for i, (key, v) in enumerate(value.items())}
    return value


def _rewrite(node, k=0):
    """Every string of an OTLP JSON document made hostile, ids and operation names kept."""
    if isinstance(node, list):
        return [_rewrite(v, k + i) for i, v in enumerate(node)]
    if not isinstance(node, dict):
        return node
    if "key" in node and "value" in node:
        if node["key"] in KEEP_VALUES:
            return node
        return {"key": node["key"], "value": _rewrite_value(node["value"], k)}
    out = {}
    for i, (key, v) in enumerate(node.items()):
        if key in IDS:
            out[key] = v
        elif key in ("name", "message") and isinstance(v, str):
            out[key] = v + PAYLOADS[(k + i) % len(PAYLOADS)]
        else:
            out[key] = _rewrite(v, k + i)
    return out


def _rewrite_value(value, k):
    if "stringValue" in value:
        return {"stringValue": _hostile(value["stringValue"], k)}
    if "arrayValue" in value:
        return {"arrayValue": {"values": [_rewrite_value(v, k + i) for i, v in enumerate(value["arrayValue"].get("values", []))]}}
    return value


def _body_tag(dom: str) -> str:
    match = re.search(r"<body[^>]*>", dom)
    assert match, dom[:500]
    return match.group()


@pytest.fixture(scope="module")
def hostile_page(demo, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    lines = [json.dumps(_rewrite(json.loads(ln))) for ln in Path(demo).read_text().splitlines() if ln.strip()]
    traces = tmp / "hostile.jsonl"
    traces.write_text("\n".join(lines) + "\n")
    page = tmp / "report.html"
    assert cli_main(["analyze", "--format", "html", "-o", str(page), str(traces)]) == 0
    return page


def test_hostile_strings_reach_the_page_escaped(hostile_page, capsys):
    capsys.readouterr()
    text = hostile_page.read_text()
    assert text.count("data-pwned") >= 20  # the payloads are in the page, as text
    assert "<script>" + MARK not in text and "onerror=\"" + MARK not in text
    assert text.count("<script") == 1


@pytest.mark.parametrize("policy", ["with CSP", "CSP removed"])
def test_no_payload_runs_in_chromium(hostile_page, tmp_path, policy):
    page = hostile_page
    if policy == "CSP removed":
        page = tmp_path / "no-csp.html"
        page.write_text(re.sub(r"<meta http-equiv='Content-Security-Policy'[^>]*>", "", hostile_page.read_text()))
        assert "Content-Security-Policy" not in page.read_text()
    dom = _browser(tmp_path, "--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    body = _body_tag(dom.stdout)
    assert 'data-ready="1"' in body  # our own script ran (its hash is allowed)
    assert "data-pwned" not in body
    assert [ln for ln in dom.stderr.splitlines() if "Uncaught" in ln] == []


def test_the_checks_can_fail(tmp_path):
    """Controls: an unescaped payload does mark the page; the CSP refuses a script it does not hash."""
    bad = tmp_path / "bad.html"
    bad.write_text(f"<html><body><img src=x onerror=\"{MARK}\"></body></html>")
    assert "data-pwned" in _body_tag(_browser(tmp_path, "--dump-dom", bad.as_uri()).stdout)
    from otel_agent_trace.analyzer.report.html import CSP

    blocked = tmp_path / "blocked.html"
    blocked.write_text(f"<html><head><meta http-equiv='Content-Security-Policy' content=\"{CSP}\"></head>"
                       f"<body><script>{MARK}</script></body></html>")
    assert "data-pwned" not in _body_tag(_browser(tmp_path, "--dump-dom", blocked.as_uri()).stdout)
