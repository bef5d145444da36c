"""``python -m ember.compat script.py [args...]``: run a PyTorch script on ember."""
import builtins
import importlib.machinery
import os
import sys
import types

from . import install


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print("usage: python -m ember.compat script.py [args...]\n\nRuns a PyTorch script with "
              "'import torch' resolved to ember.", file=sys.stderr)
        return 2
    install()
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    # set up __main__ as `python script.py` does: the script's own folder (links resolved)
    # leads sys.path in place of the working directory -m put there, __file__ is absolute,
    # sys.argv[0] stays as typed (runpy.run_path would replace it by its path argument)
    path = os.path.abspath(script)
    sys.path[0] = os.path.dirname(os.path.realpath(script))
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=path, __cached__=None, __spec__=None, __builtins__=builtins,
                         __loader__=importlib.machinery.SourceFileLoader("__main__", path))
    with open(path, "rb") as f:
        code = compile(f.read(), path, "exec")
    sys.modules["__main__"] = main
    exec(code, main.__dict__)
    return 0


if __name__ == "__main__":
    sys.exit(main())
