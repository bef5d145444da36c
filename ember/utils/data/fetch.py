"""Fetchers: turn a batch of indices (or the next items of an iterable) into a batch."""

__all__ = ["create_fetcher"]


class _MapFetcher:
    def __init__(self, dataset, auto_collation, collate_fn):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn

    def fetch(self, indices):
        if self.auto_collation:
            getitems = getattr(self.dataset, "__getitems__", None)
            data = getitems(indices) if callable(getitems) else \
                [self.dataset[i] for i in indices]
        else:
            data = self.dataset[indices]
        return self.collate_fn(data)


class _IterableFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, batch_size, drop_last):
        self.it = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.batch_size = batch_size
        self.drop_last = drop_last

    def fetch(self, _indices):
        if not self.auto_collation:
            return self.collate_fn(next(self.it))
        # the batch sampler hands one placeholder index per item of the batch
        size = self.batch_size if self.batch_size is not None else len(_indices)
        data = []
        for item in self.it:
            data.append(item)
            if len(data) == size:
                break
        if not data or (self.drop_last and len(data) < size):
            raise StopIteration
        return self.collate_fn(data)


def create_fetcher(kind, dataset, auto_collation, collate_fn, batch_size, drop_last):
    """``kind``: 0 (map-style, ``_DatasetKind.Map``) or 1 (iterable)."""
    if kind == 0:
        return _MapFetcher(dataset, auto_collation, collate_fn)
    return _IterableFetcher(dataset, auto_collation, collate_fn, batch_size, drop_last)
