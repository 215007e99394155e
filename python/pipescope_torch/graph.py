"""Turns a module into a LayerGraph: the torch.fx graph whose compute nodes are the layers.

Invariant: `layers` are the graph's call_module / call_function / call_method nodes in the
graph's own (topological) order, except builtin getattr calls (`x.shape`), which like
get_attr nodes only look a value up; every edge (i, j) has i < j and means layer j reads
a value layer i produced (directly or through such a lookup). A plain nn.Sequential becomes a chain of its children without
tracing; any other module is traced with torch.fx.symbolic_trace.

    g = build_layer_graph(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()))
    [l.name for l in g.layers]  # ['0', '1'];  g.profile_edges() is None (a chain)
"""

from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import torch
import torch.fx

from pipescope_torch.errors import BridgeError, one_line

LAYER_OPS = ("call_module", "call_function", "call_method")


def is_layer(node: torch.fx.Node) -> bool:
    return node.op in LAYER_OPS and not (node.op == "call_function" and node.target is getattr)


def producer_nodes(node: torch.fx.Node):
    """The layer nodes whose values `node` reads, looking through builtin getattr calls."""
    for src in node.all_input_nodes:
        if is_layer(src):
            yield src
        elif src.op == "call_function":  # a getattr lookup: its own inputs produce the value
            yield from producer_nodes(src)


@dataclass
class Layer:
    name: str
    node: torch.fx.Node
    parameter_bytes: int


@dataclass
class LayerGraph:
    root: torch.nn.Module  # owns the submodules and attributes the nodes name
    graph: torch.fx.Graph
    layers: List[Layer]
    edges: List[Tuple[int, int]] = field(default_factory=list)

    def profile_edges(self) -> Optional[List[Tuple[int, int]]]:
        """The edges to write, or None when the layers form the plain chain 0→1→…→n-1."""
        chain = [(i, i + 1) for i in range(len(self.layers) - 1)]
        return None if self.edges == chain else self.edges


def fetch_attr(root: torch.nn.Module, target: str):
    obj = root
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def _unique_parameter_bytes(params) -> int:
    seen, total = set(), 0
    for p in params:
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel() * p.element_size()
    return total


def _parameter_bytes(root: torch.nn.Module, node: torch.fx.Node) -> int:
    if node.op == "call_module":
        return _unique_parameter_bytes(root.get_submodule(node.target).parameters())
    # A function or method node owns the parameters it reads through get_attr nodes.
    params = [fetch_attr(root, n.target) for n in node.all_input_nodes if n.op == "get_attr"]
    return _unique_parameter_bytes(p for p in params if isinstance(p, torch.nn.Parameter))


def _is_plain_sequential(model: torch.nn.Module) -> bool:
    return (isinstance(model, torch.nn.Sequential)
            and type(model).forward is torch.nn.Sequential.forward)


def _sequential_graph(model: torch.nn.Sequential) -> torch.fx.Graph:
    graph = torch.fx.Graph()
    value = graph.placeholder("input")
    for name, _ in model.named_children():
        value = graph.call_module(name, (value,))
    graph.output(value)
    return graph


def _traced_graph(model: torch.nn.Module):
    try:
        traced = torch.fx.symbolic_trace(model)
    except Exception as exc:
        raise BridgeError(
            f"torch.fx cannot trace module {type(model).__name__}: {one_line(exc, 300)}") from exc
    return traced, traced.graph


def build_layer_graph(model: torch.nn.Module) -> LayerGraph:
    if _is_plain_sequential(model):
        root, graph = model, _sequential_graph(model)
    else:
        root, graph = _traced_graph(model)
    nodes = [n for n in graph.nodes if is_layer(n)]
    if not nodes:
        raise BridgeError(f"module {type(model).__name__} has no layers to profile "
                          "(its graph has no module, function or method calls)")
    index = {n: i for i, n in enumerate(nodes)}
    layers, used = [], set()
    for n in nodes:
        name = n.target if n.op == "call_module" and n.target not in used else n.name
        used.add(name)
        layers.append(Layer(name=str(name), node=n, parameter_bytes=_parameter_bytes(root, n)))
    edges = sorted({(index[src], index[dst]) for dst in nodes for src in producer_nodes(dst)})
    assert all(a < b for a, b in edges), "fx graph nodes are not in topological order"
    return LayerGraph(root=root, graph=graph, layers=layers, edges=edges)
