"""Agent frameworks recorded over the handler API (recorder/handler.py): each module translates
one framework's runs, steps and tool registry into handler invocations."""
