"""--jaeger and --tempo over real HTTP on loopback, serving recorded-shape responses of the
documented APIs (Jaeger /api/traces, Jaeger v2 /api/v3/traces, Tempo /api/search + /api/traces/<id>)."""

from __future__ import annotations

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from inputs_support import doc, failing_run, ids
from test_files import jaeger_trace

from otel_agent_trace.cli import main as cli_main


@pytest.fixture
def server():
    routes: dict[str, tuple[int, bytes]] = {}
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            seen.append(self.path)
            path = urllib.parse.urlsplit(self.path).path
            status, body = routes.get(path, (404, b'{"error": "not found"}'))
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", routes, seen
    httpd.shutdown()
    httpd.server_close()


def run_cli(capsys, *args):
    code = cli_main(["analyze", "--format", "json", *args])
    out = capsys.readouterr()
    return code, json.loads(out.out) if out.out.strip() else None, out.err


def test_jaeger_http_api(server, capsys):
    url, routes, seen = server
    routes["/api/traces"] = (200, json.dumps({"data": [jaeger_trace(0), jaeger_trace(1)], "total": 0, "limit": 0,
                                              "offset": 0, "errors": None}).encode())
    code, report, _ = run_cli(capsys, "--jaeger", url, "--service", "support", "--lookback", "2h")
    assert code == 0
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(seen[0]).query)
    assert query["service"] == ["support"] and query["lookback"] == ["2h"]
    assert {r["trace_id"]: r["origin"]["span_id"] for r in report["runs"]} == {
        f"{1:032x}": ids(0)["tool"], f"{2:032x}": ids(1)["tool"]}
    assert report["inputs"][0]["path"].startswith(url + "/api/traces?")


def test_jaeger_v2_api_v3_fallback(server, capsys):
    url, routes, seen = server
    routes["/api/v3/traces"] = (200, json.dumps({"result": doc(failing_run(0))}).encode())
    code, report, _ = run_cli(capsys, "--jaeger", url, "--service", "support")
    assert code == 0
    assert [urllib.parse.urlsplit(p).path for p in seen] == ["/api/traces", "/api/v3/traces"]
    assert "query.service_name=support" in seen[1] and "query.start_time_min=" in seen[1]
    assert report["runs"][0]["origin"]["span_id"] == ids(0)["tool"]


def test_tempo_search_then_fetch(server, capsys):
    url, routes, seen = server
    routes["/api/search"] = (200, json.dumps({"traces": [
        {"traceID": f"{1:032x}", "rootServiceName": "support", "rootTraceName": "invoke_agent support"},
        {"traceID": "2", "rootServiceName": "support"}], "metrics": {"inspectedTraces": 2}}).encode())
    routes[f"/api/traces/{1:032x}"] = (200, json.dumps({"batches": doc(failing_run(0))["resourceSpans"]}).encode())
    code, report, err = run_cli(capsys, "--tempo", url, "--traceql", "{ status = error }")
    assert code == 1  # trace 2 answered 404: reported, the other analysed
    assert urllib.parse.parse_qs(urllib.parse.urlsplit(seen[0]).query)["q"] == ["{ status = error }"]
    assert report["runs"][0]["origin"]["span_id"] == ids(0)["tool"]
    assert "trace 2: HTTP 404" in err


def test_unreachable_backend_is_exit_2(capsys):
    code, report, err = run_cli(capsys, "--jaeger", "http://127.0.0.1:9", "--service", "s")
    assert code == 2 and "cannot fetch" in report["inputs"][0]["error"]


def test_jaeger_needs_a_service(capsys):
    assert cli_main(["analyze", "--jaeger", "http://127.0.0.1:9"]) == 2
    assert "--service" in capsys.readouterr().err
