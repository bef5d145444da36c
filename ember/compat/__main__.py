"""``python -m ember.compat script.py [args...]``: run a PyTorch script on ember."""
import runpy
import sys

from . import install


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print("usage: python -m ember.compat script.py [args...]\n\nRuns a PyTorch script with "
              "'import torch' resolved to ember.", file=sys.stderr)
        return 2
    install()
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
