"""``ember.distributed.pipelining`` (torch.distributed.pipelining): pipeline parallelism.

Split a model into stages with `pipe_split()` markers or a ``split_spec`` and `pipeline`,
give each rank its `PipelineStage` (``pipe.build_stage(rank)``) and run a schedule
(`ScheduleGPipe`, `Schedule1F1B`, `ScheduleInterleaved1F1B`): the first rank passes the
batch to ``step``, the last the target; activations and gradients travel between ranks by
point-to-point messages.

Example::
    >>> pipe = pipeline(model, mb_args=(x[:2],))
    >>> stage = pipe.build_stage(dist.get_rank(), device="cpu")
    >>> schedule = ScheduleGPipe(stage, n_microbatches=4, loss_fn=F.mse_loss)
    >>> out = schedule.step(x) if rank == 0 else schedule.step(target=y)
"""
from ._IR import Pipe, SplitPoint, pipe_split, pipeline
from .microbatch import TensorChunkSpec
from .schedules import (PipelineScheduleMulti, PipelineScheduleSingle, Schedule1F1B,
                        ScheduleGPipe, ScheduleInterleaved1F1B, ScheduleLoopedBFS)
from .stage import PipelineStage, build_stage

__all__ = ["Pipe", "SplitPoint", "pipe_split", "pipeline", "TensorChunkSpec",
           "PipelineScheduleMulti", "PipelineScheduleSingle", "Schedule1F1B",
           "ScheduleGPipe", "ScheduleInterleaved1F1B", "ScheduleLoopedBFS", "PipelineStage",
           "build_stage"]
