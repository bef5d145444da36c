"""Entry point of a child started by ``ember.multiprocessing.spawn``:
``python -m ember.multiprocessing._child PAYLOAD INDEX ERROR_FILE``."""
import os
import pickle
import sys
import traceback


def run_guarded(fn, i, args, error_file):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        sys.exit(1)
    except SystemExit:
        raise
    except BaseException:  # noqa: BLE001 - reported to the parent with its traceback
        with open(error_file, "w", encoding="utf-8") as f:
            f.write(traceback.format_exc())
        sys.exit(1)


def main(argv):
    payload, index, error_file = argv[1], int(argv[2]), argv[3]
    if os.environ.get("EMBER_COMPAT") == "1":
        from ember.compat import install
        install()
    import multiprocessing.spawn as mpspawn
    from ember.multiprocessing.reductions import init_reductions
    init_reductions()
    with open(payload, "rb") as f:
        prep = pickle.load(f)
        mpspawn.prepare(prep)     # imports the parent's main module as __mp_main__
        fn, args = pickle.load(f)
    run_guarded(fn, index, args, error_file)


if __name__ == "__main__":
    main(sys.argv)
