"""pytest plugin (entry point `pytest11`): `pytest --agent-traces DIR` makes each stored case a
test item, checked like `otel-agent-trace regress` does.

Items are named `agent-traces::<case>` and carry their tier as a keyword (`-k core`); a failure
reads "case refund-empty-lookup [core]: tool lookup_order returned [] at step 0; rule ...".
`core` and `regular` cases fail their item; `explore` cases are xfail (reported only); a case
with no new run under `--agent-traces-against` is skipped. The regular tier's pass-rate gate is
`regress`'s (a test run judges each case alone). Nothing is imported until the option is used.
"""

from __future__ import annotations

from typing import Any

import pytest


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("agent-traces", "otel-agent-trace regression set")
    group.addoption("--agent-traces", metavar="DIR", help="run the cases of this regression set as tests")
    group.addoption("--agent-traces-rules", metavar="FILE", help="team rules and assertions (as regress --rules)")
    group.addoption("--agent-traces-against", metavar="NEW_TRACES", nargs="+",
                    help="check new runs of the same tasks against the cases (as regress --against)")


def pytest_configure(config: Any) -> None:
    for tier in ("core", "regular", "explore"):
        config.addinivalue_line("markers", f"{tier}: an otel-agent-trace regression case of tier {tier}")


class CaseFailed(Exception):
    pass


class CaseSet(pytest.Collector):
    """The items' parent (node ids `agent-traces::<case>`, JUnit class `agent-traces`)."""

    def collect(self) -> list:
        return []


class CaseItem(pytest.Item):
    def __init__(self, *, case: Any, team: Any, against: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case, self.team, self.against = case, team, against
        self.add_marker(getattr(pytest.mark, case.tier))
        if case.tier == "explore":
            self.add_marker(pytest.mark.xfail(reason="explore tier: reported only", strict=False))

    def runtest(self) -> None:
        from otel_agent_trace.regress.check import check_case

        result = check_case(self.case, self.team, self.against)
        if result.status == "skip":
            pytest.skip(result.message)
        if result.status == "fail":
            raise CaseFailed(result.message)

    def repr_failure(self, excinfo: Any, style: Any = None) -> Any:
        if isinstance(excinfo.value, CaseFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.case.directory, None, f"case {self.case.name} [{self.case.tier}]"


@pytest.hookimpl(tryfirst=True)  # before -k / -m deselect
def pytest_collection_modifyitems(session: Any, config: Any, items: list) -> None:
    directory = config.getoption("agent_traces")
    if not directory:
        return
    from otel_agent_trace.regress.cases import RegressError, analyzed, load_cases
    from otel_agent_trace.regress.check import load_team

    try:
        team = load_team(config.getoption("agent_traces_rules"))
        cases = load_cases(directory)
        paths = config.getoption("agent_traces_against")
        against = analyzed(list(paths), rules=team.rules) if paths else None
    except RegressError as exc:
        raise pytest.UsageError(f"--agent-traces: {exc}") from None
    parent = CaseSet.from_parent(session, name="agent-traces", nodeid="agent-traces")
    for case in cases:
        items.append(CaseItem.from_parent(parent, name=case.name, case=case, team=team, against=against))
