"""A scripted, OpenAI-compatible Chat Completions server on loopback.

It lets the demo and the tests drive the real `openai` client over real HTTP with no network and
no model: each conversation is matched to a script by its first user message, and the reply to a
request is the script's turn number <assistant messages already in the request> (with
`stateful=True`: the number of requests that script has already answered, for agents that
truncate their history). A conversation that names no key gets the script `"*"`, if any. A turn is a dict
(`{"content": ...}`, `{"tool_calls": [{"name", "arguments"}]}`, optional `finish_reason`,
`{"status": 500, "error": "..."}` for an HTTP error, optional `usage` details: `{"cached_tokens",
"cache_write_tokens", "reasoning_tokens"}`) or a callable taking the request body and
returning one. `stream: true` is answered with server-sent events, like the real API.

Faults, for the reliability tests: `{"body": {...}}` is sent as the whole JSON response (missing
or malformed fields); `{"delay": s}` waits before answering; in a stream, `{"chunk_delay": s}`
waits between events and `{"break_after": n}` drops the connection after n events (no `[DONE]`).
`POST /v1/responses` answers the same scripts in the Responses API's format (scripted_responses.py),
`POST /v1/messages` in anthropic's Messages format (scripted_anthropic.py), `POST
/v1beta/models/{model}:generateContent` (and `:streamGenerateContent`) in the Gemini API's
(scripted_genai.py), `POST /api/chat` in Ollama's (scripted_ollama.py, JSON or newline-delimited
JSON); a turn's `break_after: N` drops any of the streams after N events.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Mapping, Sequence, Union

from otel_agent_trace.providers.wire_streams import chat_sse
from otel_agent_trace.scripted_servers import scripted_anthropic, scripted_genai, scripted_ollama, scripted_responses

Turn = Union[Mapping[str, Any], Callable[[dict[str, Any]], Mapping[str, Any]]]


class ScriptedOpenAIServer:
    """`with ScriptedOpenAIServer({"refund order A1": [turn, ...]}) as server: server.base_url`."""

    def __init__(self, scripts: Mapping[str, Sequence[Turn]], host: str = "127.0.0.1", port: int = 0,
                 default: str = "I could not find a script for this conversation.", stateful: bool = False):
        self.scripts = dict(scripts)
        self.default = default
        self.stateful = stateful
        self._served: dict[str, int] = {}
        self.requests: list[dict[str, Any]] = []
        self.conversations: dict[str, list[dict[str, Any]]] = {}  # Responses API: response id → conversation
        self._lock = threading.Lock()
        self._server = _Server((host, port), _handler_for(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> "ScriptedOpenAIServer":
        # `stop()` waits for the serve loop's next poll: 0.5 s by default, for every server a test starts
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="scripted-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "ScriptedOpenAIServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # --- scripting --------------------------------------------------------------------------
    def turn_for(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages") or []
        first_user = next((m.get("content") for m in messages if m.get("role") == "user"), "") or ""
        if not isinstance(first_user, str):
            first_user = json.dumps(first_user)
        keys = [k for k in self.scripts if k in first_user]
        if not keys and "*" in self.scripts:
            keys = ["*"]
        if not keys:
            return {"content": self.default}
        key = max(keys, key=len)
        script = self.scripts[key]
        if self.stateful:
            with self._lock:
                index = self._served.get(key, 0)
                self._served[key] = index + 1
        else:
            index = sum(1 for m in messages if m.get("role") == "assistant")
        if index >= len(script):
            return {"content": self.default}
        turn = script[index]
        return dict(turn(body) if callable(turn) else turn)


class _Server(ThreadingHTTPServer):
    request_queue_size = 256  # 100 concurrent clients connect at once in the reliability tests


def completion_body(turn: Mapping[str, Any], model: str, index: int, prompt_tokens: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.get("content")}
    calls = _tool_calls(turn, index)
    if calls:
        message["tool_calls"] = calls
    finish = turn.get("finish_reason") or ("tool_calls" if calls else "stop")
    completion_tokens = max(1, len(json.dumps(message)) // 4)
    return {
        "id": f"chatcmpl-scripted-{index}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens, **_usage_details(turn)},
    }


def _usage_details(turn: Mapping[str, Any]) -> dict[str, Any]:
    """A turn's `{"usage": {"cached_tokens", "cache_write_tokens", "reasoning_tokens"}}` as Chat
    Completions usage details (`cache_write_tokens` is anthropic's only; the other wire formats
    translate these). Nothing unless the turn asks."""
    usage = turn.get("usage") or {}
    out: dict[str, Any] = {}
    if "cached_tokens" in usage or "cache_write_tokens" in usage:
        out["prompt_tokens_details"] = {"cached_tokens": usage.get("cached_tokens", 0)}
        if "cache_write_tokens" in usage:
            out["prompt_tokens_details"]["cache_write_tokens"] = usage["cache_write_tokens"]
    if "reasoning_tokens" in usage:
        out["completion_tokens_details"] = {"reasoning_tokens": usage["reasoning_tokens"]}
    return out


def _tool_calls(turn: Mapping[str, Any], index: int) -> list[dict[str, Any]]:
    calls = []
    for i, call in enumerate(turn.get("tool_calls") or ()):
        arguments = call.get("arguments", {})
        calls.append({
            "id": call.get("id") or f"call_{index}_{i}",
            "type": "function",
            "function": {"name": call["name"],
                         "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)},
        })
    return calls


def stream_chunks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The same completion as a list of `chat.completion.chunk` objects (tool args split in two)."""
    choice = body["choices"][0]
    message = choice["message"]
    base = {"id": body["id"], "object": "chat.completion.chunk", "created": body["created"], "model": body["model"]}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    text = message.get("content") or ""
    for start in range(0, len(text), 16):
        chunks.append(chunk({"content": text[start:start + 16]}))
    for i, call in enumerate(message.get("tool_calls") or ()):
        args = call["function"]["arguments"]
        half = len(args) // 2
        chunks.append(chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                             "function": {"name": call["function"]["name"], "arguments": args[:half]}}]}))
        chunks.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": args[half:]}}]}))
    chunks.append(chunk({}, choice["finish_reason"]))
    return chunks


sse = chat_sse  # the wire format lives in the product (providers/wire_streams.py): replay builds it too


def _handler_for(server: ScriptedOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # headers and body are two writes: with Nagle's algorithm the body waits for the client's
        # delayed ACK of the headers, 40 ms per response on Linux loopback
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def handle(self) -> None:
            try:
                super().handle()
            except ConnectionError:  # the client gave up (a timeout test): nothing to answer
                self.close_connection = True

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            with server._lock:
                server.requests.append(body)
            api = self.path.rstrip("/").rpartition("/")[2]  # completions | responses | messages
            gemini = scripted_genai.route(self.path)  # (model, streamed) of a Gemini API path
            if gemini:
                api, body = "genai", {**body, "model": gemini[0], "messages": scripted_genai.chat_view(body)}
            if self.path.rstrip("/") == scripted_ollama.PATH:  # Ollama's native API
                api, body = "ollama", {**body, "messages": scripted_ollama.chat_view(body)}
            if api == "items" and "/conversations/" in self.path:  # items added to a conversation
                conversation = self.path.rstrip("/").split("/")[-2]
                with server._lock:
                    return self._json(200, scripted_responses.add_items(conversation, body, server.conversations))
            if api == "conversations":  # the Responses API's server-side conversations
                with server._lock:
                    return self._json(200, scripted_responses.new_conversation(body, server.conversations))
            if api not in ("completions", "responses", "messages", "genai", "ollama"):
                return self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            request = body
            if api == "responses":  # the Responses API: the same scripts, over the whole conversation
                with server._lock:
                    body = {**body, "messages": scripted_responses.chat_view(body, server.conversations)}
            elif api == "messages":  # anthropic Messages
                body = {**body, "messages": scripted_anthropic.chat_view(body)}
            turn = server.turn_for(body)
            if turn.get("status"):
                return self._json(int(turn["status"]), {"error": {"message": turn.get("error", "scripted error"),
                                                                  "type": "server_error"}})
            if turn.get("delay"):
                time.sleep(float(turn["delay"]))
            if "body" in turn:
                return self._json(200, turn["body"])
            index = sum(1 for m in body.get("messages") or [] if m.get("role") == "assistant")
            prompt_tokens = max(1, len(json.dumps(body.get("messages") or [])) // 4)
            completion = completion_body(turn, body.get("model") or "scripted-model", index, prompt_tokens)
            if api == "responses":
                return self._respond(request, body["messages"], completion, turn.get("break_after"))
            if api == "genai":
                response = scripted_genai.response_body(completion)
                if not gemini[1]:
                    return self._json(200, response)
                parts = scripted_genai.sse(scripted_genai.stream_chunks(response))
                return self._chunked(parts[:turn["break_after"]] if turn.get("break_after") else parts,
                                     complete=not turn.get("break_after"))
            if api == "ollama":
                response = scripted_ollama.response_body(completion)
                if not request.get("stream"):
                    return self._json(200, response)
                lines = scripted_ollama.stream_lines(response)
                return self._chunked(lines[:turn["break_after"]] if turn.get("break_after") else lines,
                                     complete=not turn.get("break_after"), content_type="application/x-ndjson")
            if api == "messages":
                message = scripted_anthropic.message_body(completion)
                if not request.get("stream"):
                    return self._json(200, message)
                return self._events(scripted_anthropic.stream_events(message), turn.get("break_after"))
            if body.get("stream"):
                return self._sse(completion, bool((body.get("stream_options") or {}).get("include_usage")),
                                 float(turn.get("chunk_delay") or 0), turn.get("break_after"))
            return self._json(200, completion)

        def _json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _respond(self, request: dict[str, Any], messages: list[dict[str, Any]], completion: dict[str, Any],
                     break_after: int | None) -> None:
            """A Responses API answer; `break_after` events into a stream, the connection drops."""
            response = scripted_responses.response_body(completion, request)
            with server._lock:
                for key in (response["id"], scripted_responses.conversation_id(request)):
                    if key:
                        server.conversations[key] = [*messages, completion["choices"][0]["message"]]
            if not request.get("stream"):
                return self._json(200, response)
            self._events(scripted_responses.stream_events(response), break_after)

        def _events(self, events: list[dict[str, Any]], break_after: int | None) -> None:
            """Named server-sent events; `break_after` of them, then the connection drops."""
            if break_after:
                return self._chunked([scripted_responses.sse(events[:break_after])], complete=False)
            self._chunked([scripted_responses.sse([event]) for event in events])

        def _chunked(self, parts: list[bytes], complete: bool = True, content_type: str = "text/event-stream") -> None:
            """A chunked body; an incomplete one ends without its last chunk, as a dropped connection."""
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            for part in parts:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            if complete:
                self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def _sse(self, completion: dict[str, Any], include_usage: bool, chunk_delay: float = 0.0,
                 break_after: int | None = None) -> None:
            events = stream_chunks(completion)
            if include_usage:
                events.append({**events[-1], "choices": [], "usage": completion["usage"]})
            if break_after and not chunk_delay:  # dropped mid-stream: a chunked body missing its end
                data = [b"data: " + json.dumps(event).encode() + b"\n\n" for event in events]
                return self._chunked([b"".join(data[:break_after])], complete=False)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            try:
                for n, event in enumerate(events):
                    if break_after is not None and n >= break_after:
                        self.wfile.flush()
                        self.connection.shutdown(2)  # dropped mid-stream: no [DONE]
                        return
                    self.wfile.write(b"data: " + json.dumps(event).encode() + b"\n\n")
                    if chunk_delay:
                        self.wfile.flush()
                        time.sleep(chunk_delay)
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
            except OSError:  # the client went away (abandoned or cancelled stream)
                return

    return Handler
