#!/usr/bin/python3
"""Converts PipeDream's published layer graphs (msr-fiddle/pipedream,
profiler/*/profiles/<model>/graph.txt, MIT licence, Copyright Microsoft Corporation)
into pipescope v1 profiles, keeping exactly the graph PipeDream's optimizer
(optimizer/optimizer_graph_hierarchical.py) partitions:

  - every `Input*` source is dropped (PipeDream zeroes and removes them), then every
    sink whose description starts with `__getitem__` (one pass, as PipeDream does);
  - one PipeDream node = one layer, named "<node id>: <description>" (cut to 64 chars);
  - forward_ms / backward_ms = forward_compute_time / backward_compute_time (ms per
    mini-batch as profiled);
  - activation_bytes = output_bytes = activation_size (a list of outputs is summed,
    as PipeDream's Node.from_str does); parameter_bytes = parameter_size;
  - layers in a topological order (Kahn, ties to the earlier line of graph.txt) and
    `edges` = PipeDream's edges renumbered;
  - batch_sizes = [the mini-batch PipeDream profiled], read off the input tensor's
    bytes (3 x 224 x 224 fp32 per image, 3 x 299 x 299 for Inception-v3; 64 for GNMT,
    whose input carries no size).

Usage: convert_pipedream.py PIPEDREAM_CHECKOUT OUT_DIR
"""
import heapq
import json
import os
import sys

MODELS = {  # model -> (graph.txt under the checkout, bytes of one input sample or None)
    "alexnet": ("profiler/image_classification/profiles/alexnet", 3 * 224 * 224 * 4),
    "densenet121": ("profiler/image_classification/profiles/densenet121", 3 * 224 * 224 * 4),
    "inception_v3": ("profiler/image_classification/profiles/inception_v3", 3 * 299 * 299 * 4),
    "nasnetalarge": ("profiler/image_classification/profiles/nasnetalarge", 3 * 224 * 224 * 4),
    "nasnetamobile": ("profiler/image_classification/profiles/nasnetamobile", 3 * 224 * 224 * 4),
    "resnet101": ("profiler/image_classification/profiles/resnet101", 3 * 224 * 224 * 4),
    "resnet18": ("profiler/image_classification/profiles/resnet18", 3 * 224 * 224 * 4),
    "resnet50": ("profiler/image_classification/profiles/resnet50", 3 * 224 * 224 * 4),
    "resnext101": ("profiler/image_classification/profiles/resnext101", 3 * 224 * 224 * 4),
    "resnext50": ("profiler/image_classification/profiles/resnext50", 3 * 224 * 224 * 4),
    "squeezenet1_0": ("profiler/image_classification/profiles/squeezenet1_0", 3 * 224 * 224 * 4),
    "vgg16": ("profiler/image_classification/profiles/vgg16", 3 * 224 * 224 * 4),
    "gnmt": ("profiler/translation/profiles/gnmt", None),
    "gnmt_large": ("profiler/translation/profiles/gnmt_large", None),
}


def parse(path):
    nodes, order, edges = {}, [], []
    for line in open(path):
        line = line.rstrip("\n")
        if not line.strip():
            continue
        if line.startswith("\t"):
            a, b = line.strip().split(" -- ")
            edges.append((a, b))
            continue
        node_id, desc, meta = line.split(" -- ")[:3]
        fields = dict(kv.split("=", 1) for kv in meta.split(", "))
        act = fields["activation_size"]
        act = sum(float(x) for x in act.strip("[]").split("; ")) if "[" in act else float(act)
        nodes[node_id] = {"desc": desc, "f": float(fields["forward_compute_time"]),
                          "b": float(fields["backward_compute_time"]), "act": act,
                          "params": float(fields["parameter_size"])}
        order.append(node_id)
    return nodes, order, edges


def convert(model, path, sample_bytes):
    nodes, order, edges = parse(path)
    ins = {n: [] for n in order}
    outs = {n: [] for n in order}
    for a, b in edges:
        outs[a].append(b)
        ins[b].append(a)
    batch = 64
    for n in order:  # PipeDream: drop Input sources ...
        if not ins[n] and nodes[n]["desc"].startswith("Input"):
            if sample_bytes and nodes[n]["act"] > 0:
                batch = round(nodes[n]["act"] / sample_bytes)
            for b in outs[n]:
                ins[b].remove(n)
            del ins[n], outs[n]
    for n in [n for n in order if n in outs and not outs[n]]:  # ... then __getitem__ sinks
        if nodes[n]["desc"].startswith("__getitem__"):
            for a in ins[n]:
                outs[a].remove(n)
            del ins[n], outs[n]
    kept = [n for n in order if n in outs]
    line = {n: i for i, n in enumerate(order)}
    indegree = {n: len(ins[n]) for n in kept}
    ready = [(line[n], n) for n in kept if indegree[n] == 0]
    heapq.heapify(ready)
    topo = []
    while ready:
        _, n = heapq.heappop(ready)
        topo.append(n)
        for b in outs[n]:
            indegree[b] -= 1
            if indegree[b] == 0:
                heapq.heappush(ready, (line[b], b))
    assert len(topo) == len(kept), model + ": the graph has a cycle"
    index = {n: i for i, n in enumerate(topo)}
    layers = []
    for n in topo:
        v = nodes[n]
        layers.append({"name": (n + ": " + v["desc"])[:64], "forward_ms": [v["f"]], "backward_ms": [v["b"]],
                       "activation_bytes": [int(v["act"])], "output_bytes": [int(v["act"])],
                       "parameter_bytes": int(v["params"])})
    out_edges = sorted((index[a], index[b]) for a in topo for b in outs[a])
    return {"format": "pipescope.profile", "version": 1, "model": model,
            "device": {"name": "GPU used by PipeDream's profiler", "memory_bytes": 16000000000},
            "backend": "cuda", "dtype": "fp32", "batch_sizes": [batch], "layers": layers,
            "edges": [list(e) for e in out_edges]}


def compact_json(profile):
    """One line per layer, the edges on one line: small diffs, still readable."""
    head = {k: v for k, v in profile.items() if k not in ("layers", "edges")}
    lines = ["{"]
    for k, v in head.items():
        lines.append(" %s: %s," % (json.dumps(k), json.dumps(v)))
    lines.append(' "layers": [')
    layers = [json.dumps(l) for l in profile["layers"]]
    lines.append(",\n".join("  " + l for l in layers))
    lines.append(" ],")
    lines.append(' "edges": %s' % json.dumps(profile["edges"], separators=(",", ":")))
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    checkout, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    for model, (folder, sample_bytes) in MODELS.items():
        profile = convert(model, os.path.join(checkout, folder, "graph.txt"), sample_bytes)
        with open(os.path.join(out_dir, model + ".json"), "w") as f:
            f.write(compact_json(profile))
        total = sum(l["forward_ms"][0] + l["backward_ms"][0] for l in profile["layers"])
        print("%-14s batch %3d  %4d layers  %4d edges  f+b %.3f ms" % (
            model, profile["batch_sizes"][0], len(profile["layers"]), len(profile["edges"]), total))


if __name__ == "__main__":
    main()
