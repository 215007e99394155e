"""The median of several profiles of one model: each timing field (a key ending in `_ms`,
one number or one per batch size) is the median of the profiles' values; every other field
must be the same in all of them (the bytes a layer keeps do not depend on the machine's
noise), or the merge refuses, naming the file, layer and field.

Invariant: the output is one of the inputs with only its `_ms` values replaced, so it is a
profile whenever they are.

Why: on this VM a slow spell lasts seconds, longer than one layer's timed runs, and moves a
median of 5 or 41 of them by up to 2.4x (mlp-512's layer 2 backward at micro-batch 16:
0.67 ms once against 0.28 ms in five other profiles, 2026-12-06). Profiles taken minutes
apart rarely share a spell.

    python -m pipescope_torch.profile_median a.json b.json c.json -o median.json
"""

import argparse
import json
import statistics
import sys
from typing import List

from pipescope_torch.errors import BridgeError
from pipescope_torch.json_input import load_json
from pipescope_torch.profile_json import validate_profile, write_text_atomically


class MergeError(ValueError):
    pass


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _median_field(values, where: str, names: List[str]):
    if all(_is_number(v) for v in values):
        return statistics.median(values)
    if all(isinstance(v, list) for v in values):
        for v, name in zip(values, names):
            if len(v) != len(values[0]):
                raise MergeError(f"{name}: {where}: {len(v)} entries, {names[0]} has {len(values[0])}")
        return [_median_field([v[i] for v in values], f"{where}[{i}]", names) for i in range(len(values[0]))]
    shape = "a number" if _is_number(values[0]) else "a list of numbers"
    bad = next((name for v, name in zip(values, names)
                if not (_is_number(v) if _is_number(values[0]) else isinstance(v, list))), names[0])
    if not (_is_number(values[0]) or isinstance(values[0], list)):
        bad, shape = names[0], "a number or a list of numbers"
    raise MergeError(f"{bad}: {where}: expected {shape}")


def _check(p, name: str) -> None:
    """validate_profile (profile_json.py, what the profiler's own output must pass), its
    refusal, or a field it found missing or of the wrong type, as a MergeError naming `name`."""
    try:
        validate_profile(p)
    except ValueError as e:
        raise MergeError(f"{name}: {e}") from None
    except KeyError as e:
        raise MergeError(f"{name}: profile: missing field {e}") from None
    except (TypeError, IndexError, AttributeError) as e:
        raise MergeError(f"{name}: profile: a field of the wrong type ({e})") from None


def median_profile(profiles: List[dict], names: List[str]) -> dict:
    """The median of `profiles` (parsed JSON), `names` naming each in errors."""
    if not profiles:
        raise MergeError("no profiles to merge")
    for p, name in zip(profiles, names):
        _check(p, name)
    first = profiles[0]
    for p, name in zip(profiles, names):
        if len(p["layers"]) != len(first["layers"]):
            raise MergeError(f"{name}: field 'layers': {len(p['layers'])} layers, {names[0]} has "
                             f"{len(first['layers'])}")
        if p.get("batch_sizes") != first.get("batch_sizes"):
            raise MergeError(f"{name}: field 'batch_sizes': {p.get('batch_sizes')}, {names[0]} has "
                             f"{first.get('batch_sizes')}")
    out = json.loads(json.dumps(first))
    for i, layer in enumerate(out["layers"]):
        keys = set(layer)
        for p, name in zip(profiles, names):
            if set(p["layers"][i]) != keys:
                raise MergeError(f"{name}: layer {i}: fields {sorted(set(p['layers'][i]) ^ keys)} are in one "
                                 f"profile and not in {names[0]}")
        for key in layer:
            values = [p["layers"][i][key] for p in profiles]
            where = f"layer {i} ({layer.get('name', '?')}) field '{key}'"
            if key.endswith("_ms"):
                layer[key] = _median_field(values, where, names)
                continue
            for v, name in zip(values, names):
                if v != values[0]:
                    raise MergeError(f"{name}: {where}: {v!r}, {names[0]} has {values[0]!r} (only timings may differ)")
    notes = out.get("notes")
    note = f"timings: the median of {len(profiles)} profiles (pipescope_torch.profile_median)"
    out["notes"] = (notes if isinstance(notes, list) else []) + [note]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m pipescope_torch.profile_median",
                                 description="The median of several profiles of one model.")
    ap.add_argument("profiles", nargs="+", help="profile JSON files of one model")
    ap.add_argument("-o", "--output", required=True, help="profile JSON to write")
    args = ap.parse_args(argv)
    try:
        # pipescope's reader's rules: no NaN or Infinity, no key twice, at most 100 levels
        loaded = [load_json(path, "profile") for path in args.profiles]
        merged = median_profile(loaded, args.profiles)
        write_text_atomically(args.output, json.dumps(merged, indent=1) + "\n")
    except (MergeError, BridgeError) as e:
        print(f"pipescope_torch.profile_median: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
