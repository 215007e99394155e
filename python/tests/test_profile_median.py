"""pipescope_torch.profile_median: each `_ms` field the median of the profiles' values,
every other field required equal; bad input exits 2 naming the file, layer and field, and
writes nothing.
"""

import copy
import json
import os
import random
import statistics
import subprocess
import sys

from helpers import PYTHON_DIR, load_and_check_profile
from pipescope_torch.profile_median import MergeError, median_profile

BASE = {
    "format": "pipescope.profile", "version": 1, "model": "m",
    "device": {"name": "cpu", "memory_bytes": 1 << 30}, "backend": "cpu", "dtype": "fp32",
    "batch_sizes": [4, 8], "notes": [],
    "layers": [
        {"name": "0", "forward_ms": [1.0, 2.0], "backward_ms": [2.0, 4.0], "activation_bytes": [64, 128],
         "output_bytes": [16, 32], "parameter_bytes": 400, "optimizer_ms": 0.5},
        {"name": "loss", "forward_ms": [0.1, 0.2], "backward_ms": [0.2, 0.4], "activation_bytes": [4, 8],
         "output_bytes": [4, 4], "parameter_bytes": 0, "optimizer_ms": 0.0},
    ],
}


def with_times(scale):
    p = copy.deepcopy(BASE)
    for layer in p["layers"]:
        for key in ("forward_ms", "backward_ms"):
            layer[key] = [v * scale for v in layer[key]]
        layer["optimizer_ms"] *= scale
    return p


def test_each_timing_is_the_median_and_bytes_are_kept():
    # Three profiles at 1x, 3x (a slow spell) and 1.2x: the median is the 1.2x one's values.
    merged = median_profile([with_times(1.0), with_times(3.0), with_times(1.2)], ["a", "b", "c"])
    assert merged["layers"][0]["forward_ms"] == [1.2, 2.4]
    assert merged["layers"][0]["optimizer_ms"] == 0.6
    assert merged["layers"][1]["backward_ms"] == [0.2 * 1.2, 0.4 * 1.2]
    assert merged["layers"][0]["activation_bytes"] == [64, 128]
    assert merged["notes"][-1].startswith("timings: the median of 3 profiles")


def test_property_the_median_is_elementwise_over_random_profiles():
    rng = random.Random(7)
    for _ in range(200):
        n = rng.choice([1, 2, 3, 5])
        profiles = []
        for _ in range(n):
            p = copy.deepcopy(BASE)
            for layer in p["layers"]:
                layer["forward_ms"] = [rng.uniform(0, 10) for _ in range(2)]
            profiles.append(p)
        merged = median_profile(profiles, [str(i) for i in range(n)])
        for i in range(2):
            for j in range(2):
                assert merged["layers"][i]["forward_ms"][j] == statistics.median(
                    p["layers"][i]["forward_ms"][j] for p in profiles)


def test_refuses_profiles_whose_bytes_differ():
    other = copy.deepcopy(BASE)
    other["layers"][0]["activation_bytes"] = [64, 130]
    try:
        median_profile([BASE, other], ["a.json", "b.json"])
    except MergeError as e:
        assert "b.json" in str(e) and "layer 0 (0) field 'activation_bytes'" in str(e)
    else:
        raise AssertionError("merged profiles whose bytes differ")


def test_refuses_other_layers_or_batch_sizes():
    fewer = copy.deepcopy(BASE)
    fewer["layers"].pop()
    sizes = copy.deepcopy(BASE)
    sizes["batch_sizes"] = [4, 16]
    for bad, field in ((fewer, "'layers'"), (sizes, "'batch_sizes'")):
        try:
            median_profile([BASE, bad], ["a.json", "b.json"])
        except MergeError as e:
            assert "b.json" in str(e) and field in str(e)
        else:
            raise AssertionError(f"merged profiles with other {field}")


def test_cli_writes_a_profile_and_exits_2_on_bad_input(tmp_path):
    paths = []
    for i, scale in enumerate((1.0, 2.0, 1.5)):
        paths.append(str(tmp_path / f"p{i}.json"))
        with open(paths[-1], "w") as f:
            json.dump(with_times(scale), f)
    out = str(tmp_path / "median.json")
    cmd = [sys.executable, "-m", "pipescope_torch.profile_median"]
    r = subprocess.run(cmd + paths + ["-o", out], cwd=PYTHON_DIR, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    merged = load_and_check_profile(out, [4, 8])
    assert merged["layers"][0]["forward_ms"] == [1.5, 3.0]

    broken = str(tmp_path / "broken.json")
    with open(broken, "w") as f:
        f.write("{not json")
    bad_out = str(tmp_path / "never.json")
    r = subprocess.run(cmd + [paths[0], broken, "-o", bad_out], cwd=PYTHON_DIR, capture_output=True, text=True)
    assert r.returncode == 2 and "broken.json" in r.stderr
    assert not os.path.exists(bad_out)


def test_fuzz_mutated_profiles_merge_or_raise_merge_error_only():
    # Seeded random mutations of one profile of a pair (a field replaced by a value of
    # another type, a layer dropped, a list shortened): the merge returns a profile or
    # raises MergeError naming the file, never another exception.
    rng = random.Random(11)
    junk = [None, "x", -1, 2.5, [], [1], {}, {"a": 1}, True, [1.0, "y"]]
    for _ in range(2000):
        bad = copy.deepcopy(BASE)
        for _ in range(rng.randint(1, 3)):
            layers = bad["layers"] if isinstance(bad["layers"], list) else []
            dicts = [layer for layer in layers if isinstance(layer, dict)]
            target = bad if rng.random() < 0.2 or not dicts else rng.choice(dicts)
            keys = list(target.keys())
            choice = rng.random()
            if choice < 0.6 and keys:
                target[rng.choice(keys)] = rng.choice(junk)
            elif choice < 0.8 and layers:
                layers.pop(rng.randrange(len(layers)))
            elif keys:
                key = rng.choice(keys)
                if isinstance(target[key], list) and target[key]:
                    target[key] = target[key][:-1]
        try:
            merged = median_profile([BASE, bad], ["a.json", "b.json"])
            assert isinstance(merged, dict)
        except MergeError as e:
            assert "a.json" in str(e) or "b.json" in str(e)


def run_median(tmp_path, profiles, out):
    paths = []
    for i, text in enumerate(profiles):
        paths.append(str(tmp_path / f"in{i}.json"))
        with open(paths[-1], "w") as f:
            f.write(text)
    cmd = [sys.executable, "-m", "pipescope_torch.profile_median"]
    return subprocess.run(cmd + paths + ["-o", out], cwd=PYTHON_DIR, capture_output=True, text=True), paths


def test_nan_and_infinity_times_exit_2_naming_the_file_and_field(tmp_path):
    # Issue 56: Python's json reads NaN and Infinity, so a NaN time merged into the median and
    # exited 0; pipescope's reader refuses both. Each exits 2 naming the file and the JSON path,
    # and writes nothing.
    good = json.dumps(with_times(1.0))
    out = str(tmp_path / "never.json")
    for literal, what in (("NaN", "NaN is not a JSON number"), ("Infinity", "Infinity is not a JSON number"),
                          ("-Infinity", "-Infinity is not a JSON number"),
                          ("1e400", "number overflow parsing '1e400' (beyond the range of a double)")):
        bad = good.replace('"forward_ms": [1.0, 2.0]', f'"forward_ms": [1.0, {literal}]', 1)
        assert bad != good
        r, paths = run_median(tmp_path, [good, bad], out)
        assert r.returncode == 2, r.stderr
        assert r.stderr.startswith(f"pipescope_torch.profile_median: {paths[1]}: layers[0].forward_ms[1]: {what}"), \
            r.stderr
        assert "Traceback" not in r.stderr and not os.path.exists(out)
    # a NaN reached by another door (a dict built in Python) is refused by validate_profile
    nan = with_times(1.0)
    nan["layers"][1]["backward_ms"][0] = float("nan")
    try:
        median_profile([BASE, nan], ["a.json", "b.json"])
    except MergeError as e:
        assert str(e) == "b.json: profile: layers[1].backward_ms: expected finite numbers, got nan", str(e)
    else:
        raise AssertionError("merged a NaN time")


def test_a_key_twice_or_deep_nesting_exits_2_naming_where(tmp_path):
    good = json.dumps(with_times(1.0))
    out = str(tmp_path / "never.json")
    twice = good.replace('"parameter_bytes": 400', '"parameter_bytes": 400, "parameter_bytes": 500', 1)
    r, paths = run_median(tmp_path, [good, twice], out)
    assert r.returncode == 2 and r.stderr == (f"pipescope_torch.profile_median: {paths[1]}: layers[0].parameter_bytes: "
                                              "key given twice in one object (each key may appear once)\n"), r.stderr
    # 10^6 nested arrays (Python's own parser would raise RecursionError): refused where the
    # 101st level opens, as pipescope's reader refuses it
    deep = good.replace('"notes": []', '"notes": ' + "[" * 1000000 + "]" * 1000000, 1)
    r, paths = run_median(tmp_path, [good, deep], out)
    assert r.returncode == 2, r.stderr
    assert r.stderr == (f"pipescope_torch.profile_median: {paths[1]}: notes" + "[0]" * 99 + ": JSON nested deeper "
                        "than 100 levels of arrays and objects (the limit for pipescope input files)\n"), r.stderr[:300]
    assert not os.path.exists(out)


def test_an_output_into_a_missing_folder_exits_2_naming_it(tmp_path):
    # Issue 56: open(args.output) raised FileNotFoundError, a traceback and exit 1.
    good = json.dumps(with_times(1.0))
    out = str(tmp_path / "missing" / "median.json")
    r, _ = run_median(tmp_path, [good, good], out)
    assert r.returncode == 2, r.stderr
    assert r.stderr == (f"pipescope_torch.profile_median: {out}: output folder '{tmp_path / 'missing'}' does not "
                        "exist\n"), r.stderr
    r, _ = run_median(tmp_path, [good, good], str(tmp_path))  # a folder where the file goes
    assert r.returncode == 2 and r.stderr == f"pipescope_torch.profile_median: {tmp_path}: is a folder, expected a " \
                                             "file to write\n", r.stderr
