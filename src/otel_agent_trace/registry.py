"""Every integration the instrumentor installs, one line each (the shape: integration.py).

Importing this imports our integration modules only; none of them imports its client library
(each patch waits for the agent to import it). Order is the order hooks run in for one module.
"""

from __future__ import annotations

from otel_agent_trace.frameworks import crewai, langchain, llama_index, mcp, openai_agents, pydantic_ai, smolagents
from otel_agent_trace.integration import Integration
from otel_agent_trace.providers import anthropic, genai, litellm, ollama, openai, responses

INTEGRATIONS: tuple[Integration, ...] = (
    openai.INTEGRATION,
    responses.INTEGRATION,
    anthropic.INTEGRATION,
    litellm.INTEGRATION,
    mcp.INTEGRATION,
    langchain.INTEGRATION,
    llama_index.INTEGRATION,
    pydantic_ai.INTEGRATION,
    smolagents.INTEGRATION,
    crewai.INTEGRATION,
    openai_agents.INTEGRATION,
    genai.INTEGRATION,
    ollama.INTEGRATION,
)
