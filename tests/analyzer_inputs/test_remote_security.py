"""--jaeger / --tempo safety (issue 18), against loopback HTTP servers through the CLI: redirects
only to the same host, response size and time capped, credentials never shown."""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from inputs_support import ids
from test_files import jaeger_trace

from otel_agent_trace.analyzer.readers import remote
from otel_agent_trace.cli import main as cli_main

SECRET = "s3cr3t-Pa55"
JAEGER_BODY = json.dumps({"data": [jaeger_trace(0)]}).encode()


class Server:
    """A loopback server whose GET handler is `handle(handler)`; records every request."""

    def __init__(self, handle):
        self.requests: list[tuple[str, dict]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                server.requests.append((self.path, dict(self.headers)))
                handle(self)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def port(self):
        return self.httpd.server_address[1]

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve():
    servers = []

    def start(handle):
        servers.append(Server(handle))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def reply(handler, status=200, body=JAEGER_BODY, headers=()):
    handler.send_response(status)
    for k, v in headers:
        handler.send_header(k, v)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def run_cli(capsys, *args):
    code = cli_main(["analyze", "--format", "json", *args])
    out = capsys.readouterr()
    return code, json.loads(out.out), out.err


def assert_no_secret(*texts):
    token = base64.b64encode(f"alice:{SECRET}".encode()).decode()
    for text in texts:
        assert SECRET not in text and token not in text, text[:500]


def test_credentials_are_sent_as_a_header_and_never_shown(serve, capsys):
    good = serve(lambda h: reply(h))
    code, report, err = run_cli(capsys, "--jaeger", f"http://alice:{SECRET}@127.0.0.1:{good.port}", "--service", "s")
    assert code == 0 and report["runs"][0]["origin"]["span_id"] == ids(0)["tool"]
    path, headers = good.requests[0]
    assert headers["Authorization"] == "Basic " + base64.b64encode(f"alice:{SECRET}".encode()).decode()
    assert report["inputs"][0]["path"].startswith(f"http://***@127.0.0.1:{good.port}/api/traces?")
    assert_no_secret(json.dumps(report), err)


@pytest.mark.parametrize("failure", ["http 500", "closed port", "bad json", "tempo 401"])
def test_error_messages_hold_no_credentials(serve, capsys, failure):
    if failure == "closed port":
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        sock.close()
    else:
        status = {"http 500": 500, "bad json": 200, "tempo 401": 401}[failure]
        port = serve(lambda h: reply(h, status, b"{not json}")).port
    flag = "--tempo" if failure.startswith("tempo") else "--jaeger"
    args = [flag, f"http://alice:{SECRET}@127.0.0.1:{port}"] + (["--service", "s"] if flag == "--jaeger" else [])
    code, report, err = run_cli(capsys, *args)
    inp = report["inputs"][0]
    assert code in (1, 2) and (inp.get("error") or inp.get("bad_lines")), inp
    assert "***@127.0.0.1" in inp["path"]
    assert_no_secret(json.dumps(report), err)


def test_a_redirect_to_another_host_is_refused_and_the_other_host_gets_nothing(serve, capsys):
    other = serve(lambda h: reply(h))
    redirector = serve(lambda h: reply(h, 302, b"", [("Location", f"http://localhost:{other.port}/api/traces")]))
    code, report, err = run_cli(capsys, "--jaeger", f"http://alice:{SECRET}@127.0.0.1:{redirector.port}", "--service", "s")
    assert code == 2
    assert "redirect to another host refused (http://localhost)" in report["inputs"][0]["error"]
    assert other.requests == []
    assert_no_secret(json.dumps(report), err)


def test_a_redirect_on_the_same_host_is_followed(serve, capsys):
    def handle(h):
        if h.path.startswith("/api/traces"):
            reply(h, 301, b"", [("Location", "/moved" + h.path)])
        else:
            reply(h)

    server = serve(handle)
    code, report, _ = run_cli(capsys, "--jaeger", f"http://127.0.0.1:{server.port}", "--service", "s")
    assert code == 0 and [p.split("?")[0] for p, _ in server.requests] == ["/api/traces", "/moved/api/traces"]
    assert report["runs"][0]["origin"]["span_id"] == ids(0)["tool"]


@pytest.mark.parametrize("declared", [True, False])
def test_a_response_over_the_size_cap_is_refused(serve, capsys, monkeypatch, declared):
    monkeypatch.setattr(remote, "MAX_RESPONSE_BYTES", 4096)

    def handle(h):
        body = b'{"data": [' + b" " * 100_000 + b"]}"
        h.send_response(200)
        if declared:
            h.send_header("Content-Length", str(len(body)))
        h.send_header("Connection", "close")
        h.end_headers()
        h.wfile.write(body)
        h.close_connection = True

    server = serve(handle)
    code, report, _ = run_cli(capsys, "--jaeger", f"http://127.0.0.1:{server.port}", "--service", "s")
    assert code == 2 and "4096-byte limit" in report["inputs"][0]["error"], report["inputs"][0]


def test_a_dripping_response_is_cut_at_the_time_cap(serve, capsys, monkeypatch):
    monkeypatch.setattr(remote, "MAX_RESPONSE_SECONDS", 1.0)
    stop = threading.Event()

    def handle(h):
        h.send_response(200)
        h.send_header("Connection", "close")
        h.end_headers()
        h.wfile.write(b'{"data": [')
        while not stop.is_set():  # one byte every 50 ms: no read ever times out
            try:
                h.wfile.write(b" ")
                h.wfile.flush()
            except OSError:
                return
            time.sleep(0.05)

    server = serve(handle)
    t0 = time.monotonic()
    code, report, _ = run_cli(capsys, "--jaeger", f"http://127.0.0.1:{server.port}", "--service", "s")
    stop.set()
    assert code == 2 and "took longer than 1 s" in report["inputs"][0]["error"]
    assert time.monotonic() - t0 < 10


def test_a_server_that_never_answers_times_out(capsys, monkeypatch):
    monkeypatch.setattr(remote, "TIMEOUT", 0.5)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)  # accepts (the kernel does), never answers
    try:
        t0 = time.monotonic()
        code, report, _ = run_cli(capsys, "--tempo", f"http://127.0.0.1:{listener.getsockname()[1]}")
        assert code == 2 and "timed out" in report["inputs"][0]["error"]
        assert time.monotonic() - t0 < 10
    finally:
        listener.close()
