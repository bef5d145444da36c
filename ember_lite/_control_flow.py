"""The higher-order operators of ember programs, whose functions are sub-graphs (each a
compiled `ember_lite._graph.Graph`, called on tensors then sizes): ``cond`` runs the
graph its predicate selects, ``while_loop`` runs ``body_graph`` while ``cond_graph`` holds,
``map`` runs ``body_graph`` on each slice along dim 0 and stacks the results."""
import numpy as np

__all__ = ["CONTROL_FLOW"]


def _n_tensors(graph):
    return sum(1 for _, meta in graph.placeholders if not (isinstance(meta, dict) and
                                                             "int" in meta))


def _truth(pred, what):
    pred = np.asarray(pred)
    if pred.dtype != np.bool_ or pred.size != 1:
        raise RuntimeError(f"{what} must return a boolean scalar, got shape "
                           f"{list(pred.shape)} and dtype {pred.dtype}")
    return bool(pred.reshape(()))


def _cond(dt, pred, *rest, true_graph, false_graph):
    return (true_graph if _truth(pred, "cond's predicate") else false_graph)(*rest)


def _while_loop(dt, *rest, cond_graph, body_graph, n_carried):
    n = _n_tensors(body_graph)
    tensors, sizes = rest[:n], rest[n:]
    carried, additional = list(tensors[:n_carried]), tensors[n_carried:]
    while _truth(cond_graph(*carried, *additional, *sizes)[0], "while_loop's cond_fn"):
        carried = list(body_graph(*carried, *additional, *sizes))
    return tuple(np.array(c) for c in carried)


def _map(dt, *rest, body_graph, n_xs):
    n = _n_tensors(body_graph)
    tensors, sizes = rest[:n], rest[n:]
    xs, others = tensors[:n_xs], tensors[n_xs:]
    if xs[0].shape[0] == 0:
        raise RuntimeError("map: xs must not be empty along dim 0")
    rows = [body_graph(*(x[i] for x in xs), *others, *sizes) for i in range(xs[0].shape[0])]
    return tuple(np.stack([r[k] for r in rows]) for k in range(len(rows[0])))


CONTROL_FLOW = {"cond": _cond, "while_loop": _while_loop, "map": _map}
