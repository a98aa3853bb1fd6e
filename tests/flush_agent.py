"""A plain tool loop that ends its own work by flushing or shutting down the tracer provider
(issue 31), for tests/test_flush_shutdown.py: `python flush_agent.py MODE`, run under
`opentelemetry-instrument` with no code change of ours (no entry point, no `agent_run`).

Modes:
  plain          the loop, then exit (the reference: the process's exit ends the run)
  flush          the loop, then `force_flush(); shutdown()` of the global provider
  raise          the loop, then an exception about the answer ends the program
  flush-raise    the same with `force_flush()` between the loop and the exception
  shutdown-late  the loop, `shutdown()`, then another loop (its spans arrive after shutdown)
  serverless N   N invocations of a handler in one process, `force_flush()` after each (as the
                 AWS Lambda wrapper does); invocation 2 meets a model error. After each flush it
                 prints `FLUSHED i` and waits for a line on stdin; after the last it waits to be
                 killed (the frozen process: nothing more of it runs, no atexit).

The scripted model: the first user message names the script; `lookup` twice, then the answer.
"""

from __future__ import annotations

import json
import sys

import openai
from opentelemetry import trace

from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

TOOLS = [{"type": "function", "function": {"name": "lookup", "description": "Look an order up",
                                           "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}}]
LOOP = [{"tool_calls": [{"name": "lookup", "arguments": {"id": "A1"}}]},
        {"tool_calls": [{"name": "lookup", "arguments": {"id": "A2"}}]},
        {"content": "Both orders shipped."}]
SCRIPTS = {"where are my orders": LOOP, "model down": [{"status": 500, "error": "model overloaded"}]}


def lookup(order_id: str) -> str:
    return json.dumps({"id": order_id, "status": "shipped"})


def agent(client: openai.OpenAI, question: str) -> str:
    messages = [{"role": "system", "content": "You are a support agent."}, {"role": "user", "content": question}]
    for _ in range(6):
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            result = lookup(json.loads(call.function.arguments)["id"])
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return ""


def main(mode: str, *args: str) -> None:
    with ScriptedOpenAIServer(SCRIPTS) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
        provider = trace.get_tracer_provider()
        if mode == "plain":
            print(agent(client, "ticket 1: where are my orders?"))
        elif mode == "flush":
            print(agent(client, "ticket 1: where are my orders?"))
            provider.force_flush()
            provider.shutdown()
        elif mode in ("raise", "flush-raise"):
            answer = agent(client, "ticket 1: where are my orders?")
            if mode == "flush-raise":
                provider.force_flush()
            raise RuntimeError(f"could not parse the answer {answer!r}")
        elif mode == "shutdown-late":
            print(agent(client, "ticket 1: where are my orders?"))
            provider.shutdown()
            print(agent(client, "ticket 2: where are my orders?"))
        elif mode == "serverless":
            for i in range(int(args[0])):
                question = "model down: help" if i == 2 else f"ticket {i}: where are my orders?"
                try:
                    print(f"ANSWER {i} {agent(client, question)}", flush=True)
                except openai.APIError as exc:  # the runtime reports the invocation's error and goes on
                    print(f"ERROR {i} {type(exc).__name__}", flush=True)
                provider.force_flush()
                print(f"FLUSHED {i}", flush=True)
                sys.stdin.readline()
            print("FROZEN", flush=True)
            sys.stdin.readline()  # killed here
        else:
            raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main(*sys.argv[1:])
