"""What encoding and decoding a graph needs from the file: array literals go to storages,
the sub-graphs of higher-order ops (``cond``, ``while_loop``, ``map``) are graphs in turn."""
from ._graph import decode_graph, encode_graph
from ._storage import read_tensor_array

__all__ = ["Encoder", "LiteEncoder", "Decoder"]


class Encoder:
    """For program.json: sub-graphs as they are."""

    def __init__(self, writer):
        self.writer = writer

    def array(self, a):
        return self.writer.add(a)

    def subgraph(self, sub):
        return encode_graph(sub.graph_module.graph, self)


class LiteEncoder(Encoder):
    """For lite/program.json: sub-graphs decomposed to primitives too."""

    def __init__(self, writer, hints):
        super().__init__(writer)
        self.hints = hints

    def subgraph(self, sub):
        from ._lite_graph import lite_graph
        return lite_graph(sub.graph_module, self.hints, self)


class Decoder:
    def __init__(self, ar, hints, where):
        self.ar, self.hints, self.where = ar, hints, where

    def array(self, entry):
        return read_tensor_array(entry, self.ar.read, f"{self.where}: array literal")

    def subgraph(self, nodes, where):
        from ..._dynamo.higher_order_capture import Subgraph
        gm = decode_graph(nodes, self.hints, f"{where}: sub-graph", self)
        try:
            return Subgraph.from_graph_module(gm)
        except (ValueError, KeyError, AttributeError, TypeError) as e:
            raise ValueError(f"{where}: malformed sub-graph ({e})") from None
