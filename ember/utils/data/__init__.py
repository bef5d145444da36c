"""``ember.utils.data``: datasets, samplers and the DataLoader (``torch.utils.data``)."""
from ._collate import default_collate, default_convert
from ._worker import get_worker_info
from .dataloader import DataLoader, _DatasetKind  # noqa: F401
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset,
                      Subset, TensorDataset, random_split)
from .distributed import DistributedSampler
from .datapipes import (DataChunk, DFIterDataPipe, IterDataPipe, MapDataPipe,  # noqa: F401
                        argument_validation, functional_datapipe,
                        guaranteed_datapipes_determinism, non_deterministic, runtime_validation,
                        runtime_validation_disabled)
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,
                      SubsetRandomSampler, WeightedRandomSampler)

__all__ = ["DataLoader", "Dataset", "IterableDataset", "TensorDataset", "StackDataset",
           "ConcatDataset", "ChainDataset", "Subset", "random_split", "Sampler",
           "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler", "DistributedSampler", "default_collate", "default_convert",
           "get_worker_info", "IterDataPipe", "MapDataPipe", "DFIterDataPipe", "DataChunk",
           "functional_datapipe", "non_deterministic", "guaranteed_datapipes_determinism",
           "argument_validation", "runtime_validation", "runtime_validation_disabled"]
