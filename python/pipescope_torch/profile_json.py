"""Builds, checks and writes the pipescope v1 profile ("format": "pipescope.profile").

Invariant: a profile this module writes passes validate_profile: every per-batch array has
len(batch_sizes) entries, times and bytes are non-negative, batch sizes strictly increase,
and every edge [from, to] has from < to (layers in topological order). The file appears
whole or not at all: it is written to a temporary file beside it, then os.replace'd.
"""

import json
import math
import os
import re
import tempfile
from typing import List, Optional, Sequence, Tuple

from pipescope_torch.errors import BridgeError

PER_BATCH_KEYS = ("forward_ms", "backward_ms", "activation_bytes", "output_bytes")
# workspace_bytes' keys, as core/profile.h reads them (pipescope_torch.workspace measures them).
WORKSPACE_KEYS = ("input", "forward", "forward_no_grad", "backward_input", "backward_weight",
                  "held_for_weight")


def build_profile(model: str, device_name: str, memory_bytes: int, backend: str,
                  batch_sizes: List[int], layers, per_batch: Sequence[Sequence],
                  edges: Optional[List[Tuple[int, int]]],
                  notes: Optional[List[str]] = None,
                  optimizer_ms: Optional[Sequence[float]] = None) -> dict:
    """`per_batch[b][i]` is layer i's LayerMeasurement at batch_sizes[b]. A layer gets
    "workspace_bytes" when every one of its measurements has a workspace; `notes` (what
    was not measured) become the profile's "notes", which pipescope's reader ignores."""
    out_layers = []
    for i, layer in enumerate(layers):
        at = [per_batch[b][i] for b in range(len(batch_sizes))]
        out = {
            "name": layer.name,
            "forward_ms": [round(m.forward_ms, 6) for m in at],
            "backward_ms": [round(m.backward_ms, 6) for m in at],
            "activation_bytes": [int(m.activation_bytes) for m in at],
            "output_bytes": [int(m.output_bytes) for m in at],
            "parameter_bytes": int(layer.parameter_bytes),
        }
        if all(m.backward_input_ms is not None for m in at):
            out["backward_input_ms"] = [round(m.backward_input_ms, 6) for m in at]
            out["backward_weight_ms"] = [round(m.backward_weight_ms, 6) for m in at]
        if all(m.weight_grad_bytes is not None for m in at):
            out["weight_grad_bytes"] = [int(m.weight_grad_bytes) for m in at]
        if all(m.held_for_weight_bytes is not None for m in at):
            out["held_for_weight_bytes"] = [int(m.held_for_weight_bytes) for m in at]
        shared = [getattr(m, "shared_with_next_bytes", None) for m in at]
        if all(s is not None for s in shared) and any(s > 0 for s in shared):
            out["shared_with_next_bytes"] = [int(s) for s in shared]
        if optimizer_ms is not None:
            out["optimizer_ms"] = round(float(optimizer_ms[i]), 6)
        if all(m.workspace is not None for m in at):
            out["workspace_bytes"] = {k: [int(m.workspace[k]) for m in at] for k in WORKSPACE_KEYS}
        if getattr(layer, "spec", None) is not None:
            out["spec"] = dict(layer.spec)
        out_layers.append(out)
    profile = {
        "format": "pipescope.profile", "version": 1,
        "model": model,
        "device": {"name": device_name, "memory_bytes": int(memory_bytes)},
        "backend": backend, "dtype": "fp32",
        "batch_sizes": list(batch_sizes),
        "layers": out_layers,
    }
    if edges:
        profile["edges"] = [[int(a), int(b)] for a, b in edges]
    if notes:
        profile["notes"] = list(notes)
    validate_profile(profile)
    return profile


def validate_profile(p: dict) -> None:
    """Raises ValueError naming the JSON path of the first structural problem."""
    def fail(path, msg):
        raise ValueError(f"profile: {path}: {msg}")

    if p.get("format") != "pipescope.profile" or p.get("version") != 1:
        fail("format", "expected pipescope.profile version 1")
    sizes = p["batch_sizes"]
    if not sizes or any(s <= 0 for s in sizes) or any(b <= a for a, b in zip(sizes, sizes[1:])):
        fail("batch_sizes", "expected positive, strictly increasing sizes")
    if p["device"]["memory_bytes"] < 1:
        fail("device.memory_bytes", "expected a positive size")
    if not p["layers"]:
        fail("layers", "expected at least one layer")
    for i, layer in enumerate(p["layers"]):
        for key, value in layer.items():  # pipescope's reader takes finite numbers only
            values = value if isinstance(value, list) else [value]
            bad = next((v for v in values if isinstance(v, float) and not math.isfinite(v)), None)
            if bad is not None:
                fail(f"layers[{i}].{key}", f"expected finite numbers, got {bad}")
        for key in PER_BATCH_KEYS:
            values = layer[key]
            if len(values) != len(sizes):
                fail(f"layers[{i}].{key}", f"expected {len(sizes)} values, got {len(values)}")
            if any(v < 0 for v in values):
                fail(f"layers[{i}].{key}", "negative value")
        if layer["parameter_bytes"] < 0:
            fail(f"layers[{i}].parameter_bytes", "negative value")
        if "weight_grad_bytes" in layer:
            need = layer["weight_grad_bytes"]
            if len(need) != len(sizes) or any(not 0 <= w <= a for w, a in zip(need, layer["activation_bytes"])):
                fail(f"layers[{i}].weight_grad_bytes", "expected one value per batch size in [0, activation_bytes]")
        if "shared_with_next_bytes" in layer:
            shared = layer["shared_with_next_bytes"]
            if len(shared) != len(sizes) or any(not 0 <= s <= a for s, a in zip(shared, layer["activation_bytes"])):
                fail(f"layers[{i}].shared_with_next_bytes", "expected one value per batch size in [0, activation_bytes]")
            if i + 1 == len(p["layers"]) or p.get("edges") is not None:
                fail(f"layers[{i}].shared_with_next_bytes", "only a chain's layers before the last share with the next")
        if "held_for_weight_bytes" in layer:
            held = layer["held_for_weight_bytes"]
            if len(held) != len(sizes) or any(h < 0 for h in held):
                fail(f"layers[{i}].held_for_weight_bytes", f"expected {len(sizes)} non-negative values")
        if "workspace_bytes" in layer:
            workspace = layer["workspace_bytes"]
            if not isinstance(workspace, dict) or set(workspace) != set(WORKSPACE_KEYS):
                fail(f"layers[{i}].workspace_bytes", f"expected the keys {', '.join(WORKSPACE_KEYS)}")
            for key in WORKSPACE_KEYS:
                values = workspace[key]
                if len(values) != len(sizes):
                    fail(f"layers[{i}].workspace_bytes.{key}", f"expected {len(sizes)} values, got {len(values)}")
                if any(v < 0 for v in values):
                    fail(f"layers[{i}].workspace_bytes.{key}", "negative value")
    seen = set()
    for k, (a, b) in enumerate(p.get("edges", [])):
        if not 0 <= a < b < len(p["layers"]):
            fail(f"edges[{k}]", f"edge {a} -> {b} does not go forward between layers")
        if (a, b) in seen:
            fail(f"edges[{k}]", "duplicate edge")
        seen.add((a, b))


def dumps_profile(profile: dict) -> str:
    """Indented JSON with every array of numbers kept on one line."""
    text = json.dumps(profile, indent=1)
    text = re.sub(r"\[([^\[\]{}\"]*)\]", lambda m: "[" + " ".join(m.group(1).split()) + "]", text)
    return text + "\n"


def write_profile_atomically(path: str, profile: dict) -> None:
    write_text_atomically(path, dumps_profile(profile))


def write_text_atomically(path: str, text: str) -> None:
    """`path` holds `text` whole, or is untouched (a temporary file renamed into place). A path
    that cannot be written (its folder missing, a folder in its place, no permission) raises
    BridgeError naming it."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise BridgeError(f"{path}: output folder '{folder}' does not exist")
    if os.path.isdir(path):
        raise BridgeError(f"{path}: is a folder, expected a file to write")
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    except OSError as exc:
        raise BridgeError(f"{path}: cannot write: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise BridgeError(f"{path}: cannot write: {exc.strerror or exc}") from None
        raise
