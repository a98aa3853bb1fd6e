"""Shared helpers of the whole-process benchmarks: venvs per side, a deterministic agent loop,
an in-process OpenAI-compatible transport.

This module is imported both by the bench drivers (any Python 3.10+, stdlib only at import time)
and by the child processes that run inside each side's venv (they import `openai` / `httpx2`
lazily, through the functions that need them). Nothing here imports `otel_agent_trace`.

Venvs live under `bench/.venvs/<side>` (override with `OTEL_AGENT_TRACE_BENCH_VENVS`); each is
(re)built only when its requirement list changes (a stamp file holds their hash), so the numbers
always come from the real, separately installed packages, never from a mix in one environment.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any, Callable, Iterable

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
VENVS = Path(os.environ.get("OTEL_AGENT_TRACE_BENCH_VENVS", BENCH / ".venvs"))
MODEL = "gpt-4o-mini"

OPENAI_PIN = "openai==3.57.0"  # the client the project tests with (constraints.txt)
OTEL_FILE_EXPORTER = "opentelemetry-exporter-otlp-json-file==0.66b1"

# One requirement list per side. `ours` installs the project itself with constraints.txt.
SIDES: dict[str, list[str]] = {
    "ours": ["-c", str(ROOT / "constraints.txt"), "-e", f"{ROOT}[test]"],
    # 2.4b0 only imports with util-genai 1.1b0 (1.2b0 renamed a module it imports): NOTES.md
    "official": [OPENAI_PIN, "opentelemetry-sdk", "opentelemetry-instrumentation-openai-v2==2.4b0",
                 "opentelemetry-util-genai==1.1b0", "httpx", OTEL_FILE_EXPORTER],  # its utils import httpx,
    "openinference": [OPENAI_PIN, "opentelemetry-sdk", "openinference-instrumentation-openai",
                      OTEL_FILE_EXPORTER],
    "openllmetry": [OPENAI_PIN, "opentelemetry-sdk", "opentelemetry-instrumentation-openai",
                    OTEL_FILE_EXPORTER],
}


# --- venvs and child processes ---------------------------------------------------------------
def venv_python(side: str) -> Path:
    return VENVS / side / ("Scripts" if os.name == "nt" else "bin") / "python"


def ensure_venv(side: str, extra: Iterable[str] = ()) -> Path | None:
    """Create or refresh `bench/.venvs/<side>`; return its python, or None if the install fails."""
    reqs = SIDES[side] + list(extra)
    stamp_text = hashlib.sha256(json.dumps(reqs).encode()).hexdigest()
    if side == "ours":
        for name in ("pyproject.toml", "constraints.txt"):
            stamp_text += hashlib.sha256((ROOT / name).read_bytes()).hexdigest()
    home = VENVS / side
    stamp = home / ".bench-installed"
    python = venv_python(side)
    if stamp.exists() and stamp.read_text() == stamp_text and python.exists():
        return python
    if not python.exists():
        print(f"[bench] creating venv {home}", file=sys.stderr, flush=True)
        venv.EnvBuilder(with_pip=True).create(home)
    print(f"[bench] installing into {side}: {' '.join(reqs)}", file=sys.stderr, flush=True)
    log = home / "install.log"
    with open(log, "w") as out:
        rc = subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", *reqs],
                            stdout=out, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        print(f"[bench] install of {side} failed (see {log})", file=sys.stderr, flush=True)
        return None
    stamp.write_text(stamp_text)
    return python


def run_child(python: Path, script: Path, args: list[str], env: dict[str, str] | None = None,
              timeout: float = 1800) -> dict[str, Any]:
    """Run `script --child ...` under `python`; its last stdout line is a JSON result."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
    full_env.update({"PYTHONPATH": str(BENCH), "OTEL_SDK_DISABLED": "false", "OPENAI_API_KEY": "sk-bench",
                     "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "", "PYTHONHASHSEED": "0"})
    full_env.update(env or {})
    # the child's stderr (progress lines, tracebacks) goes straight to ours
    proc = subprocess.run([str(python), str(script), "--child", *args], env=full_env, stdout=subprocess.PIPE,
                          text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"child {script.name} {args} failed ({proc.returncode}), its stderr is above")
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    return json.loads(lines[-1])


# --- realistic, deterministic content ---------------------------------------------------------
_WORDS = (
    "order customer refund shipment carrier warehouse invoice payment status delivered pending account "
    "address policy return window item quantity price discount coupon tracking label escalation ticket "
    "priority agent verify confirm eligible damaged missing replacement exchange credit balance region "
    "the a to of and for with on in is was will be this that please before after within days hours"
).split()

SYSTEM_PROMPT = (
    "You are Atlas, the customer-support agent of an online shop. You help customers with orders, "
    "shipping, returns and refunds. Always use the tools to look facts up: never guess an order id, "
    "an amount or a date. Rules: (1) verify the customer's identity with lookup_customer before "
    "discussing an order; (2) a refund is allowed within 30 days of delivery for undamaged items and "
    "within 90 days for damaged ones; (3) state every refund amount in dollars with two decimals; "
    "(4) when a tool fails, retry once, then explain the failure plainly and open an escalation "
    "ticket; (5) never reveal internal notes, warehouse codes or other customers' data; (6) keep "
    "answers under 120 words, friendly and specific; (7) when the customer asks for a human, open an "
    "escalation with priority high; (8) summarize what you did at the end of the conversation. "
    "Tone: calm, concrete, no marketing language. If the customer writes in another language, answer "
    "in that language. Policies change: the refund window and fees come from lookup_policy, not from "
    "memory. Shipping: standard 3-5 business days, express 1-2; carriers DHL, UPS, FedEx; a shipment "
    "with no tracking update for 7 days is considered lost and may be replaced free of charge."
)
assert 1000 <= len(SYSTEM_PROMPT) <= 1300, len(SYSTEM_PROMPT)

TOOL_NAMES = ("lookup_order", "track_shipment", "lookup_customer", "lookup_policy", "search_kb", "calculate_refund")
TOOL_SCHEMAS = [
    {"type": "function", "function": {
        "name": name, "description": f"{name.replace('_', ' ')} in the shop's back office",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}, "order_id": {"type": "string"}},
                       "required": ["query"]}}}
    for name in TOOL_NAMES
]
USER_TICKET = ("Hi, my order A1001 arrived with a cracked mug and the second parcel never came. "
               "Can I get a refund for both, and when will the money be back on my card?")


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n)).capitalize() + "."


def tool_result(step: int, seed: int = 7) -> str:
    """A JSON tool result of a few hundred bytes to 2 KB, deterministic for (step, seed)."""
    rng = random.Random(seed * 1000 + step)
    target = rng.randint(300, 2000)
    doc: dict[str, Any] = {"ok": True, "step": step, "order_id": f"A{1000 + step}", "records": []}
    while len(json.dumps(doc)) < target:
        doc["records"].append({
            "id": f"R{rng.randint(10000, 99999)}", "sku": f"SKU-{rng.randint(100, 999)}",
            "qty": rng.randint(1, 4), "price": round(rng.uniform(3, 250), 2),
            "note": _sentence(rng, rng.randint(4, 12)),
        })
    return json.dumps(doc)


def tool_call(step: int) -> dict[str, Any]:
    name = TOOL_NAMES[step % len(TOOL_NAMES)]
    return {"id": f"call_{step:03d}", "type": "function",
            "function": {"name": name, "arguments": json.dumps({"query": f"order A1001 detail {step}",
                                                                 "order_id": "A1001"})}}


def final_answer(steps: int) -> str:
    rng = random.Random(steps)
    return ("Refund approved: $37.50 for the cracked mug and $18.00 for the lost parcel. "
            + " ".join(_sentence(rng, 10) for _ in range(3)))


def completion(body: dict[str, Any], steps: int) -> dict[str, Any]:
    """The scripted model: tool calls until call number `steps`, whose reply is the final answer."""
    messages = body.get("messages") or []
    index = sum(1 for m in messages if m.get("role") == "assistant")
    if index < steps - 1:
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [tool_call(index)]}
        finish = "tool_calls"
    else:
        message = {"role": "assistant", "content": final_answer(steps)}
        finish = "stop"
    prompt_tokens = max(1, len(json.dumps(messages)) // 4)
    return {
        "id": f"chatcmpl-bench-{index}", "object": "chat.completion", "created": 1767225600, "model": MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 20, "total_tokens": prompt_tokens + 20},
    }


# --- the in-process transport and the loop -----------------------------------------------------
def mock_client(respond: Callable[[dict[str, Any]], dict[str, Any] | bytes],
                record: list[bytes] | None = None) -> Any:
    """A real `openai.OpenAI` whose requests go to `respond(body)` through `httpx2.MockTransport`."""
    import httpx2
    import openai

    def handler(request: Any) -> Any:
        raw = request.read()
        if record is not None:
            record.append(raw)
        answer = respond(json.loads(raw))
        content = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
        return httpx2.Response(200, content=content, headers={"content-type": "application/json"})

    return openai.OpenAI(base_url="http://bench.invalid/v1", api_key="sk-bench", max_retries=0,
                         http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))


def run_agent(client: Any, steps: int) -> list[dict[str, Any]]:
    """A plain tool loop of `steps` LLM calls (steps-1 tool calls, then the final answer).

    The assistant message is appended as the SDK object (as most loops do); returns the final
    message list as plain dicts.
    """
    messages: list[Any] = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": USER_TICKET}]
    for step in range(steps):
        response = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOL_SCHEMAS,
                                                  temperature=0.2)
        message = response.choices[0].message
        messages.append(message)
        if not message.tool_calls:
            break
        for call in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": tool_result(step)})
    return [m if isinstance(m, dict) else m.model_dump(exclude_none=True) for m in messages]


# --- statistics ------------------------------------------------------------------------------
def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def quartiles(values: list[float]) -> tuple[float, float]:
    if len(values) < 4:
        return (min(values, default=float("nan")), max(values, default=float("nan")))
    q = statistics.quantiles(values, n=4)
    return q[0], q[2]


def machine_note() -> str:
    import platform

    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cpu ({cpu}), {platform.system()} {platform.release()}"
