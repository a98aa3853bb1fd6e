"""`analyze --judge`: an optional LLM judge for the failed runs structure cannot explain.

Off by default. For each failed run whose first named place is not proven (no origin, or only a
suspicion), it asks a model behind any OpenAI-compatible endpoint which of the run's candidate
places holds the decisive mistake, within a budget of calls and tokens, and puts the judged place
first in the run's report entry. Modules: `settings.py` (what the user configures), `dossier.py`
(what a run shows the judge), `questions.py` (the prompts and the answers' JSON schemas),
`strategies.py` (all at once, step by step, binary search), `client.py` (the calls: budget,
cache, suppression of our own instrumentation), `cache.py`, `verdict.py` (the report entry
rewritten), `judge.py` (the reducer wrapper the CLI uses). The `openai` client is optional
(extra `[judge]`) and imported only when `--judge` is given.
"""
