"""``EMBER_LOGS=output_code``: print the generated source (the one check of that variable,
to move into ember's central logging module when it exists)."""
import os
import sys

__all__ = ["output_code_enabled", "log_output_code"]


def output_code_enabled():
    names = {p.strip().lstrip("+") for p in os.environ.get("EMBER_LOGS", "").split(",")}
    return "output_code" in names


def log_output_code(kind, source):
    if output_code_enabled():
        print(f"# ---- ember inductor output code ({kind}) ----\n{source}\n", file=sys.stderr)
