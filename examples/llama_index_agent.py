"""The support agent of support_agent.py as a llama-index `FunctionAgent`.

The same four tools (as `FunctionTool`s) and the same scripted model, reached through
llama-index's LiteLLM LLM as an OpenAI-compatible provider (`openai/<model>`, `api_base`; every
llama-index-llms-openai release requires openai<3). It knows nothing about tracing: under
`opentelemetry-instrument` each ticket is one run named `support` whose tools are recorded where
they run.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at import
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import support_agent  # noqa: E402
from support_agent import SCRIPTS, answer_tickets  # noqa: E402


def make_agent(base_url: str, name: str = "support") -> Any:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.tools import FunctionTool
    from llama_index.llms.litellm import LiteLLM

    llm = LiteLLM(model=f"openai/{support_agent.MODEL}", api_base=base_url, api_key="scripted", max_retries=0)
    tools = [FunctionTool.from_defaults(fn=fn) for fn in support_agent.TOOLS.values()]
    return FunctionAgent(name=name, tools=tools, llm=llm, system_prompt=support_agent.SYSTEM)


async def ahandle_ticket(agent: Any, ticket: str) -> str:
    """Answer one ticket; raises like support_agent.handle_ticket when the reply is unacceptable."""
    reply = await agent.run(ticket, max_iterations=support_agent.MAX_TURNS)
    return support_agent.check_reply(ticket, str(reply))


def handle_ticket(agent: Any, ticket: str) -> str:
    return asyncio.run(ahandle_ticket(agent, ticket))


def main() -> int:
    from otel_agent_trace.scripted_servers.scripted_openai import ScriptedOpenAIServer

    with ScriptedOpenAIServer(SCRIPTS) as server:
        agent = make_agent(server.base_url)
        answer_tickets(lambda ticket: handle_ticket(agent, ticket))
    return 0


if __name__ == "__main__":
    import llama_index_agent

    sys.exit(llama_index_agent.main())
