"""Prints the differential fuzzer's case counts and mismatch classes after the run (the
settings profiles live in fuzz_settings.py)."""


def pytest_terminal_summary(terminalreporter):
    from fuzz_core import Stats
    from fuzz_settings import PROFILE
    if not Stats.ALL:
        return
    total = sum(s.cases for s in Stats.ALL.values())
    terminalreporter.section(f"differential fuzzer ({PROFILE}): {total} cases")
    for s in Stats.ALL.values():
        terminalreporter.write_line(s.summary())
