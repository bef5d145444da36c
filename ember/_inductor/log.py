"""``EMBER_LOGS=output_code`` (or ``set_logs(output_code=True)``): print the generated
source; the switch is ember.compile's central one (`ember._dynamo.logs`)."""
import sys

__all__ = ["output_code_enabled", "log_output_code"]


def output_code_enabled():
    # ember.compile's switches: EMBER_LOGS (re-read when it changes) and set_logs()
    from .._dynamo import logs
    return logs.enabled("output_code")


def log_output_code(kind, source):
    if output_code_enabled():
        print(f"# ---- ember inductor output code ({kind}) ----\n{source}\n", file=sys.stderr)
