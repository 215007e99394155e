"""The JSON Schemas in schemas/ (draft 2020-12) against pipescope's own files and readers.

- every schema is a valid draft 2020-12 schema whose "format" is a const;
- every shipped file (profiles/, models/, the fuzz corpus) validates against the schema
  its "format" names;
- every kind of file the commands write (simulate, run, compare, plan, sweep, profile)
  validates, gates and all;
- the readers and the schemas agree in one direction: every file `pipescope validate`
  (the C++ readers) accepts validates. Checked on the fuzz corpus and on seeded random
  mutants of it (a key deleted, a value replaced); the seed is printed on failure.

Needs Debian's python3-jsonschema and the built binary (build/bin/pipescope, or
$PIPESCOPE_BINARY); skips with the reason when either is missing.
"""

import copy
import glob
import json
import os
import random
import subprocess

import pytest

jsonschema = pytest.importorskip("jsonschema", reason="needs Debian's python3-jsonschema")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEMAS = os.path.join(ROOT, "schemas")
BINARY = os.environ.get("PIPESCOPE_BINARY", os.path.join(ROOT, "build", "bin", "pipescope"))
READ_BY_VALIDATE = ("profile", "hardware", "plan", "model", "prediction", "measurement", "llm_plan")
SEED = 16


def load_json(path):
    """json.load that refuses NaN/Infinity like the C++ reader does."""
    def refuse(name):
        raise ValueError(f"{path}: {name} is not JSON")
    with open(path, encoding="utf-8") as f:
        return json.load(f, parse_constant=refuse)


def schema(name):
    return load_json(os.path.join(SCHEMAS, f"{name}.schema.json"))


ALL = {os.path.basename(p).split(".")[0]: None for p in glob.glob(os.path.join(SCHEMAS, "*.schema.json"))}


def errors(document, name=None):
    """Schema errors of `document` against the schema its format names (or `name`)."""
    fmt = name
    if name is None:
        fmt = document.get("format") if isinstance(document, dict) else None
        name = fmt[len("pipescope."):] if isinstance(fmt, str) and fmt.startswith("pipescope.") else None
    if name not in ALL:
        return [f"no schema for format {fmt!r}"]
    validator = jsonschema.Draft202012Validator(schema(name))
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]


def pipescope(*args, cwd=None):
    if not os.path.exists(BINARY):
        pytest.skip(f"{BINARY} not built (run scripts/test.sh, or set PIPESCOPE_BINARY)")
    return subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=300, cwd=cwd)


# Hugging Face config.json files (profile synth --hf-config reads them) are that
# project's format, not pipescope's: no schema here.
# A measured run's Chrome trace (pipescope_torch run --trace) is Chrome's format.
NOT_PIPESCOPE = ["fuzz/corpus/hf_config/", "fuzz/corpus/layout/", "fuzz/corpus/trace/"]


def shipped_files():
    patterns = ["profiles/*.json", "profiles/runtimes/*.json", "models/*.json", "fuzz/corpus/*/*.json"]
    found = (p for pat in patterns for p in glob.glob(os.path.join(ROOT, pat)))
    return sorted(p for p in found if not any(os.path.relpath(p, ROOT).startswith(n) for n in NOT_PIPESCOPE))


def test_every_format_has_a_valid_schema_with_format_const():
    expected = {"profile", "hardware", "model", "plan", "schedule", "prediction", "measurement", "comparison",
                "sweep", "plan_search", "llm-memory", "runtime", "calibration"}
    assert expected <= set(ALL), f"missing schemas: {expected - set(ALL)}"
    for name in ALL:
        s = schema(name)
        jsonschema.Draft202012Validator.check_schema(s)
        assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert s["properties"]["format"] == {"const": f"pipescope.{name}",
                                             "description": "names this format (and this schema)"}
        assert "format" in s["required"] and "version" in s["required"]


def test_schema_files_are_what_make_schemas_writes():
    import importlib.util
    spec = importlib.util.spec_from_file_location("make_schemas", os.path.join(SCHEMAS, "make_schemas.py"))
    make_schemas = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_schemas)
    built = make_schemas.build()
    assert set(built) == set(ALL)
    for name, s in built.items():
        with open(os.path.join(SCHEMAS, f"{name}.schema.json"), encoding="utf-8") as f:
            assert f.read() == make_schemas.text(s), f"{name}: run python3 schemas/make_schemas.py"


@pytest.mark.parametrize("path", shipped_files(), ids=lambda p: os.path.relpath(p, ROOT))
def test_shipped_file_validates(path):
    assert errors(load_json(path)) == []


def test_every_output_validates(tmp_path):
    p = lambda name: os.path.join(ROOT, "profiles", name)
    out = lambda name: str(tmp_path / name)
    toy, tiny, hw = p("toy-uniform.json"), p("gpt-tiny-cpu.json"), p("h200-8x-nvlink.json")
    runs = [
        ["simulate", "--profile", toy, "-K", "4", "-M", "4", "--schedule", "interleaved", "--chunks", "2",
         "--max-bubble", "1", "--max-step-ms", "1e9", "-o", out("prediction.json")],
        ["simulate", "--profile", tiny, "-K", "2", "-M", "2", "--hardware", hw, "--require-fit", "-o", out("tiny.json")],
        ["run", "--profile", tiny, "-K", "2", "-M", "2", "--steps", "1", "--compare", "--check-gradients",
         "--max-regression", "1e9", "--baseline", out("tiny.json"), "-o", out("measurement.json")],
        ["compare", out("tiny.json"), out("measurement.json"), "--max-step-error", "1e9", "-o", out("comparison.json")],
        ["plan", "--profile", toy, "--hardware", hw, "--devices", "4", "--batch", "8", "-o", out("plan.json")],
        ["sweep", "--profile", toy, "--devices", "2", "--batch", "4", "-o", out("sweep")],
        ["profile", "synth", "--kind", "gpt", "--layers", "2", "-o", out("synth-gpt.json")],
        ["profile", "synth", "--kind", "uneven", "-o", out("synth-uneven.json")],
        ["profile", "--model", os.path.join(ROOT, "models", "mlp-uneven.json"), "--backend", "cpu",
         "--batch-sizes", "1,2", "--repeats", "1", "--warmup", "0", "-o", out("measured-profile.json")],
        ["calibrate", "--trace", os.path.join(ROOT, "fuzz", "corpus", "trace", "k2-m1.json"), "--profile", toy,
         "-K", "2", "-M", "1", "-o", out("runtime.json")],
        ["simulate", "--profile", toy, "-K", "2", "-M", "4", "--runtime", out("runtime.json"),
         "-o", out("calibrated.json")],
    ]
    for args in runs:
        r = pipescope(*args)
        assert r.returncode == 0, f"{args}: exit {r.returncode}\n{r.stderr}"
    r = pipescope("plan", "--profile", toy, "--devices", "2", "--batch", "4", "--json", "--max-bubble", "1")
    assert r.returncode == 0, r.stderr
    (tmp_path / "plan-search.json").write_text(r.stdout)
    r = pipescope("llm-memory", "--hf-config", os.path.join(ROOT, "profiles", "hf", "mixtral-8x7b.json"),
                  "--seq-length", "4096", "--gpus", "16", "--tensor-model-parallel-size", "2", "--sequence-parallel",
                  "--expert-model-parallel-size", "4", "--pipeline-model-parallel-size", "2",
                  "--use-distributed-optimizer", "--global-batch-size", "32", "--json")
    assert r.returncode == 0, r.stderr
    (tmp_path / "llm-memory.json").write_text(r.stdout)
    r = pipescope("calibrate", "--trace", os.path.join(ROOT, "fuzz", "corpus", "trace", "k2-m1.json"), "--profile", toy,
                  "-K", "2", "-M", "1", "-o", out("runtime2.json"), "--json")
    assert r.returncode == 0, r.stderr
    (tmp_path / "calibration.json").write_text(r.stdout)
    expected = {"prediction.json": "prediction", "tiny.json": "prediction", "measurement.json": "measurement",
                "comparison.json": "comparison", "plan.json": "plan", "sweep.json": "sweep",
                "synth-gpt.json": "profile", "synth-uneven.json": "profile", "measured-profile.json": "profile",
                "plan-search.json": "plan_search", "llm-memory.json": "llm-memory", "runtime.json": "runtime",
                "calibrated.json": "prediction", "calibration.json": "calibration"}
    for name, kind in expected.items():
        document = load_json(out(name))
        assert document["format"] == f"pipescope.{kind}", name
        assert errors(document) == [], name
    measurement = load_json(out("measurement.json"))
    assert {"comparison", "gradient_check", "gates"} <= set(measurement), "run -o keeps what --json prints"


def test_every_output_of_the_ci_tests_validates(tmp_path):
    """Runs the C++ CI suite (every command, every printing flag, every gate) with its
    scratch folder here, then validates every pipescope file it left: the outputs the
    commands wrote and every stdout that was one JSON object (tests/ci/ci_util.h)."""
    binary = os.environ.get("PIPESCOPE_CI_TESTS", os.path.join(ROOT, "build", "bin", "ci_tests"))
    if not os.path.exists(binary):
        pytest.skip(f"{binary} not built")
    r = subprocess.run([binary], capture_output=True, text=True, timeout=600, env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert r.returncode == 0, r.stdout[-3000:]
    seen, bad = {}, []
    for path in glob.glob(str(tmp_path / "**" / "*.json"), recursive=True):
        if os.path.basename(path).startswith("input-") or not os.path.isfile(path):
            continue
        document = load_json(path)
        fmt = document.get("format") if isinstance(document, dict) else None
        if not isinstance(fmt, str) or not fmt.startswith("pipescope."):
            continue  # a Chrome trace
        seen[fmt] = seen.get(fmt, 0) + 1
        bad += [f"{path}: {e}" for e in errors(document)]
    assert not bad, "\n".join(bad[:20])
    kinds = {f"pipescope.{k}" for k in ("prediction", "measurement", "comparison", "plan", "plan_search", "sweep")}
    assert kinds <= set(seen), seen


# A version 1 schedule file as the design describes it: 1F1B on 2 positions, 2 micro-batches.
SCHEDULE = {
    "format": "pipescope.schedule", "version": 1, "name": "1f1b", "devices": 2, "microbatches": 2,
    "recompute": False, "stage_device": [0, 1],
    "device_ops": [
        [{"kind": "F", "stage": 0, "microbatch": 0}, {"kind": "F", "stage": 0, "microbatch": 1},
         {"kind": "B", "stage": 0, "microbatch": 0}, {"kind": "B", "stage": 0, "microbatch": 1}],
        [{"kind": "F", "stage": 1, "microbatch": 0}, {"kind": "B", "stage": 1, "microbatch": 0},
         {"kind": "F", "stage": 1, "microbatch": 1}, {"kind": "B", "stage": 1, "microbatch": 1}],
    ],
}


def test_schedule_schema_on_files_written_here():
    assert errors(SCHEDULE) == []
    zero_bubble = copy.deepcopy(SCHEDULE)
    zero_bubble["device_ops"][0][2:] = [{"kind": "I", "stage": 0, "microbatch": 0},
                                        {"kind": "W", "stage": 0, "microbatch": 0}]
    assert errors(zero_bubble) == []
    for mutate, where in [
        (lambda s: s["device_ops"][0][0].update(kind="X"), "device_ops/0/0/kind"),
        (lambda s: s.update(devices=0), "devices"),
        (lambda s: s.pop("stage_device"), ""),
        (lambda s: s["device_ops"][1][0].pop("microbatch"), "device_ops/1/0"),
        (lambda s: s.update(version=3), "version"),
    ]:
        bad = copy.deepcopy(SCHEDULE)
        mutate(bad)
        found = errors(bad)
        assert found and found[0].startswith(where + ":"), found


def schedule_v2(v1):
    """The same schedule in version 2's words (what pipescope writes)."""
    v2 = {k: v for k, v in v1.items() if k not in ("devices", "stage_device", "device_ops")}
    v2.update(version=2, positions=v1["devices"], stage_position=v1["stage_device"], position_ops=v1["device_ops"])
    return v2


def test_schedule_schema_reads_version_2():
    assert errors(schedule_v2(SCHEDULE)) == []
    for mutate, where in [
        (lambda s: s["position_ops"][0][0].update(kind="X"), "position_ops/0/0/kind"),
        (lambda s: s.update(positions=0), "positions"),
        (lambda s: s.pop("stage_position"), ""),
        (lambda s: s.update(devices=2), "devices"),  # version 1's key in a version 2 file
        (lambda s: s.update(version=1), ""),  # then it lacks version 1's keys
    ]:
        bad = schedule_v2(SCHEDULE)
        bad = copy.deepcopy(bad)
        mutate(bad)
        found = errors(bad)
        assert found and found[0].startswith(where + ":"), found


def paths_of(node, prefix=()):
    """Every (container path, key) in a JSON document, depth first."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
    for key, child in items:
        yield prefix, key
        yield from paths_of(child, prefix + (key,))


REPLACEMENTS = [None, "x", -1, 0, 1.5, 2 ** 60, -0.5, [], {}, True, [1], [1, 2, 3], 1e30]


def mutants(document, rng, count):
    """`count` copies of `document`, each with one key deleted or one value replaced."""
    paths = list(paths_of(document))
    for _ in range(count):
        m = copy.deepcopy(document)
        prefix, key = rng.choice(paths)
        parent = m
        for k in prefix:
            parent = parent[k]
        if isinstance(parent, dict) and rng.random() < 0.3:
            del parent[key]
        else:
            parent[key] = copy.deepcopy(rng.choice(REPLACEMENTS))
        yield m


def reader_accepts(paths):
    """The files `pipescope validate` (the C++ readers) accepts, among `paths`."""
    r = pipescope("validate", *paths)
    assert r.returncode in (0, 2), r.stderr
    return {line.rsplit(": ok (", 1)[0] for line in r.stdout.splitlines() if ": ok (" in line}


def test_reader_accepted_files_validate_on_corpus_and_mutants(tmp_path):
    rng = random.Random(SEED)
    files = [p for p in shipped_files() if load_json(p)["format"][len("pipescope."):] in READ_BY_VALIDATE]
    files += glob.glob(os.path.join(ROOT, "fuzz", "regressions", "*", "*.json"))
    candidates = []
    for path in files:
        candidates.append(path)
        try:
            document = load_json(path)
        except ValueError:
            continue  # not JSON for Python either: nothing to mutate
        # Big profiles make slow mutants; 60 mutants of each small file reach every kind of key.
        if os.path.getsize(path) > 200_000:
            continue
        for i, m in enumerate(mutants(document, rng, int(os.environ.get("PIPESCOPE_MUTANTS", "60")))):
            target = tmp_path / f"{os.path.basename(path)}.{i}.json"
            target.write_text(json.dumps(m))
            candidates.append(str(target))
    accepted = reader_accepts(candidates)
    disagreements, schema_rejected = [], 0
    for path in candidates:
        try:
            found = errors(load_json(path))
        except ValueError as e:
            found = [str(e)]
        schema_rejected += bool(found)
        if path in accepted and found:
            disagreements.append(f"{path}: the reader accepts it, the schema says {found[:2]}")
    assert not disagreements, f"seed {SEED}:\n" + "\n".join(disagreements)
    # Not vacuous: the mutants include files both sides refuse.
    assert len(accepted) < len(candidates) and schema_rejected > len(candidates) // 4, (len(accepted), schema_rejected)


def test_pipescope_torch_profile_validates(tmp_path):
    """The Python bridge writes profiles too (Debian's PyTorch, CPU)."""
    pytest.importorskip("torch", reason="needs torch (the project .venv: scripts/install-deps.sh)")
    from helpers import EXAMPLES, run_module
    out = tmp_path / "resnet.json"
    r = run_module("profile", f"{EXAMPLES}/resnet_block.py:build_model", "--input-shape", "3,32,32",
                   "--batch-sizes", "1,2", "--device", "cpu", "--warmup", "1", "--repeats", "1", "-o", str(out))
    assert r.returncode == 0, r.stderr
    document = load_json(out)
    assert "edges" in document, "the example has skip connections"
    assert errors(document) == []


def test_llm_time_json_validates_and_gpu_files_carry_their_curve():
    """`pipescope llm-time --json` against schemas/llm_time.schema.json; every GPU file
    (with its gpu.gemm curve) against the hardware schema's "gpu" section."""
    r = pipescope("llm-time", "--gpu", "a100-80gb", "--num-layers", "8", "--hidden-size", "2048",
                  "--num-attention-heads", "16", "--seq-length", "2048", "--vocab-size", "51200",
                  "--tensor-model-parallel-size", "8", "--pipeline-model-parallel-size", "2",
                  "--num-layers-per-virtual-pipeline-stage", "2", "--sequence-parallel",
                  "--recompute-granularity", "selective", "--gpus", "32", "--use-distributed-optimizer",
                  "--global-batch-size", "32", "--json")
    assert r.returncode == 0, r.stderr
    document = json.loads(r.stdout)
    assert document["format"] == "pipescope.llm_time"
    assert errors(document) == []
    for path in sorted(glob.glob(os.path.join(ROOT, "profiles", "gpus", "*.json"))):
        document = load_json(path)
        assert "gemm" in document["gpu"], path
        assert errors(document) == [], path


def test_llm_plan_json_validates(tmp_path):
    """`pipescope llm-plan --json` against schemas/llm_plan.schema.json, its --out plan
    (a v3 plan: "layout" and "job") against the plan schema, and `simulate --plan` of it
    (the job alone) against schemas/job_prediction.schema.json with llm-plan's step_ns and
    ranks, to the nanosecond and the byte."""
    out = tmp_path / "best.json"
    r = pipescope("llm-plan", "--gpu", "h100-sxm", "--num-layers", "8", "--hidden-size", "1024",
                  "--num-attention-heads", "16", "--num-query-groups", "4", "--ffn-hidden-size", "4096", "--swiglu",
                  "--vocab-size", "32000", "--seq-length", "2048", "--gpus", "16", "--global-batch-size", "64",
                  "--num-experts", "4", "--moe-router-topk", "2", "--top", "3", "--json", "--out", str(out))
    assert r.returncode == 0, r.stderr
    document = json.loads(r.stdout)
    assert document["format"] == "pipescope.llm_plan"
    assert errors(document) == []
    plan = load_json(out)
    assert plan["version"] == 3 and plan["layout"] == document["best"][0]["layout"]
    assert errors(plan) == []
    s = pipescope("simulate", "--plan", str(out), "--json")
    assert s.returncode == 0, s.stderr
    predicted = json.loads(s.stdout)
    assert errors(predicted) == []
    assert predicted["step_ns"] == document["best"][0]["step_ns"]
    assert predicted["ranks"] == document["best"][0]["ranks"]


def test_llm_plan_zb_v_json_validates_and_exports_torchs_class(tmp_path):
    """`llm-plan --framework torch --schedule zb-v`: its JSON and its --out plan (whose
    layout carries "schedule": "zb-v" and whose stages sit on a V) validate, and
    `export --to torch` names ScheduleZBVZeroBubble with the V's stage ranks."""
    out = tmp_path / "zbv.json"
    r = pipescope("llm-plan", "--gpu", "h100-sxm", "--num-layers", "8", "--hidden-size", "1024",
                  "--num-attention-heads", "16", "--num-query-groups", "4", "--ffn-hidden-size", "4096", "--swiglu",
                  "--vocab-size", "32000", "--seq-length", "2048", "--gpus", "8", "--global-batch-size", "32",
                  "--pipeline-model-parallel-size", "4", "--framework", "torch", "--schedule", "zb-v",
                  "--top", "2", "--json", "--out", str(out))
    assert r.returncode == 0, r.stderr
    document = json.loads(r.stdout)
    assert errors(document) == []
    assert {c["schedule"] for c in document["best"]} == {"zb-v"}
    plan = load_json(out)
    assert errors(plan) == []
    assert plan["schedule"]["kind"] == "zb-v" and plan["layout"]["schedule"] == "zb-v"
    assert [s["devices"][0] for s in plan["stages"]] == [0, 1, 2, 3, 3, 2, 1, 0]
    e = pipescope("export", "--plan", str(out), "--to", "torch", "--json")
    assert e.returncode == 0, e.stderr
    exported = json.loads(e.stdout)
    assert exported["schedule_class"] == "ScheduleZBVZeroBubble"
    assert exported["stage_ranks"] == [0, 1, 2, 3, 3, 2, 1, 0]


def test_every_export_validates(tmp_path):
    """`export --json` of each target, from version 1 plans (a profile's search) and version 3
    plans (a job planned for each framework, and one exported to a framework it was not
    planned for, which adds "planned_for"), validates against export.schema.json."""
    p = lambda name: os.path.join(ROOT, "profiles", name)
    out = lambda name: str(tmp_path / name)
    llama = ["--hf-config", p("hf/llama-3-8b.json"), "--gpu", "h100-sxm", "--gpus", "16", "--global-batch-size", "128",
             "--seq-length", "4096"]
    for args in (["plan", "--profile", p("toy-uniform.json"), "--devices", "4", "--batch", "8", "-o", out("v1.json")],
                 # t 8, p 2, cp 1 leave d 1, so sharding none: a Megatron-LM job torch runs (torch has no
                 # distributed optimizer, which the unpinned search picks)
                 ["plan", *llama, "--tensor-model-parallel-size", "8", "--pipeline-model-parallel-size", "2",
                  "--context-parallel-size", "1", "--out", out("megatron.json")],
                 ["plan", *llama, "--framework", "torch", "--out", out("torch.json")],
                 ["plan", *llama, "--framework", "deepspeed", "--out", out("deepspeed.json")]):
        r = pipescope(*args)
        assert r.returncode == 0, f"{args}: {r.stderr}"
    exports = [("v1.json", "megatron"), ("v1.json", "torch"), ("v1.json", "deepspeed"),
               ("megatron.json", "megatron"), ("megatron.json", "torch"), ("torch.json", "torch"),
               ("torch.json", "torchtitan"), ("deepspeed.json", "deepspeed")]
    seen = set()
    for plan, target in exports:
        r = pipescope("export", "--plan", out(plan), "--to", target, "--json")
        assert r.returncode == 0, f"{plan} to {target}: {r.stderr}"
        document = json.loads(r.stdout)
        assert document["format"] == "pipescope.export" and document["target"] == target
        assert errors(document) == [], f"{plan} to {target}"
        if "predicted" in document:
            seen.add((document["predicted"]["planned_for"], document["predicted"]["framework"]))
    assert ("megatron", "torch") in seen and ("torch", "torch") in seen, seen
    bad = json.loads(pipescope("export", "--plan", out("torch.json"), "--to", "torchtitan", "--json").stdout)
    bad.pop("args")
    assert errors(bad) != [], "torchtitan's args are required"
