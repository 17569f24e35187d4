"""``engine.utils.data``: datasets, samplers and the DataLoader (torch.utils.data's API).

- ``dataset.py``     Dataset, IterableDataset, TensorDataset, ConcatDataset, ChainDataset, Subset,
                     random_split
- ``sampler.py``     Sampler, SequentialSampler, RandomSampler, SubsetRandomSampler, WeightedRandomSampler,
                     BatchSampler
- ``_collate.py``    default_collate, default_convert
- ``dataloader.py``  DataLoader (in-process; vectorised batches for TensorDatasets)
- ``distributed.py`` DistributedSampler (explicit num_replicas/rank; torch's shuffled order)
"""

from ._collate import default_collate, default_convert
from .dataloader import DataLoader, get_worker_info
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .distributed import DistributedSampler
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler",
    "IterableDataset", "RandomSampler",
    "Sampler", "SequentialSampler", "StackDataset", "Subset", "SubsetRandomSampler", "TensorDataset",
    "WeightedRandomSampler",
    "default_collate", "default_convert", "get_worker_info", "random_split",
]
