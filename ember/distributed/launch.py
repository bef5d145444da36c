"""``python -m ember.distributed.launch``: the legacy launcher (``torch.distributed.launch``).

The same as ``ember.distributed.run`` except that, unless ``--use-env`` is given, each worker
also gets ``--local-rank=N`` on its command line, as the legacy launcher did.
"""
import sys

from .run import get_args_parser, run

__all__ = ["main"]


def main(args=None):
    parser = get_args_parser()
    parser.prog = "ember.distributed.launch"
    parser.add_argument("--use-env", "--use_env", action="store_true",
                        help="pass the local rank in LOCAL_RANK only (no --local-rank)")
    ns = parser.parse_args(args)
    sys.exit(run(ns, None if ns.use_env else ["--local-rank={local_rank}"]))


if __name__ == "__main__":
    main()
