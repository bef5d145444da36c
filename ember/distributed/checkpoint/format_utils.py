"""Converting between distributed checkpoints and single ``ember.save`` files.

Command line::

    python -m ember.distributed.checkpoint.format_utils dcp_to_torch CKPT_DIR out.pt
    python -m ember.distributed.checkpoint.format_utils torch_to_dcp in.pt CKPT_DIR
"""
import argparse
import os
import sys

__all__ = ["dcp_to_torch_save", "torch_save_to_dcp"]


def dcp_to_torch_save(dcp_checkpoint_dir, torch_save_path):
    """Loads a whole distributed checkpoint (full tensors, saved nesting) in this process
    and writes it with ``ember.save``."""
    from .._ember import save as ember_save
    from .state_dict_loader import load
    sd = {}
    load(sd, checkpoint_id=dcp_checkpoint_dir, no_dist=True)
    ember_save(sd, torch_save_path)


def torch_save_to_dcp(torch_save_path, dcp_checkpoint_dir):
    """Reads an ``ember.save``/``torch.save`` file (weights-only) and writes it as a
    distributed checkpoint from this process."""
    from .._ember import load as ember_load
    from .state_dict_saver import save
    sd = ember_load(torch_save_path, weights_only=True)
    if not isinstance(sd, dict):
        raise ValueError(f"{torch_save_path} holds a {type(sd).__name__}, not a state dict")
    save(sd, checkpoint_id=dcp_checkpoint_dir, no_dist=True)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m ember.distributed.checkpoint.format_utils",
        description="Convert between distributed checkpoints and ember.save files.")
    parser.add_argument("mode", choices=["dcp_to_torch", "torch_to_dcp"])
    parser.add_argument("src")
    parser.add_argument("dst")
    args = parser.parse_args(argv)
    if args.mode == "dcp_to_torch":
        if not os.path.isdir(args.src):
            parser.error(f"{args.src} is not a checkpoint directory")
        dcp_to_torch_save(args.src, args.dst)
    else:
        if not os.path.isfile(args.src):
            parser.error(f"{args.src} is not a file")
        torch_save_to_dcp(args.src, args.dst)
    print(f"Converted checkpoint {args.src} -> {args.dst}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
