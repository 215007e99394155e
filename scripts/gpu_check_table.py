"""Prints gpu-check.sh's table from the comparisons it wrote, and writes results.json:
per K and schedule, predicted vs measured step time and per-stage peak memory, with
relative errors (measured - predicted) / predicted, and whether each bound holds
(step time within 5% for K in {2, 4} with 1F1B; peak memory within 1%)."""
import json
import pathlib
import sys

out, gpu, dtype, tests = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
rows, results = [], {"gpu": gpu, "dtype": dtype, "gpu_tests": tests, "runs": []}


def err(p, m):
    return (m - p) / p if p else 0.0


for k in (1, 2, 4):
    for s in ("1f1b", "gpipe"):
        f = out / "runs" / f"k{k}-{s}-comparison.json"
        if not f.exists():
            rows.append(f"K={k} {s:6s} run failed (see runs/k{k}-{s}-run.txt)")
            continue
        vals = {v["name"]: v for v in json.loads(f.read_text())["values"]}
        st = vals["step_time_ms"]
        e = err(st["predicted"], st["measured"])
        run = {"K": k, "schedule": s, "step_ms": [st["predicted"], st["measured"], e], "stages": []}
        ok_time = abs(e) < 0.05 if (s == "1f1b" and k > 1) else None
        rows.append(f"K={k} {s:6s} step {st['predicted']:9.3f} ms pred {st['measured']:9.3f} ms meas {100*e:+6.1f}%"
                    + ("" if ok_time is None else ("  ok" if ok_time else "  OVER 5%")))
        for i in range(k):
            pm, pa = vals[f"stage {i} peak_memory_bytes"], vals[f"stage {i} peak_activation_bytes"]
            em, ea = err(pm["predicted"], pm["measured"]), err(pa["predicted"], pa["measured"])
            run["stages"].append({"peak_memory": [pm["predicted"], pm["measured"], em],
                                  "peak_activations": [pa["predicted"], pa["measured"], ea]})
            rows.append(f"      stage {i}: peak {pm['predicted']/2**20:10.1f} MiB pred {pm['measured']/2**20:10.1f} MiB meas"
                        f" {100*em:+6.2f}%  (activations {100*ea:+6.2f}%)" + ("  ok" if abs(em) < 0.01 else "  OVER 1%"))
        results["runs"].append(run)

gemm = out / "gemm.json"
if gemm.exists():
    results["gemm"] = json.loads(gemm.read_text())
print(f"GPU: {gpu}   dtype: {dtype}   gpu tests: {tests}")
if "gemm" in results and "backend_tflops" in results["gemm"]:
    g = results["gemm"]
    print(f"largest-layer GEMM {g['m']}x{g['n']}x{g['k']}: {g['backend_tflops']:.0f} TFLOP/s vs best cuBLASLt "
          f"{g['best_tflops']:.0f} TFLOP/s = {100*g['fraction']:.0f}% (bound 60%)")
print("\n".join(rows))
(out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
