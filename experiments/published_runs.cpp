// A published-runs row read into a Job, evaluated and converted to the source's metric
// (experiments/published_runs.h). The row's fields map one to one onto TransformerShape
// and ParallelLayout; what does not map is refused naming the row and the field.
#include "experiments/published_runs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "core/error.h"
#include "llm/framework.h"
#include "llm/layout_check.h"

namespace pipescope {

namespace {

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

int read_int(const JsonReader& r, const std::string& key, int min = 1) {
  return static_cast<int>(r[key].as_int(min, 1 << 30));
}

TransformerShape row_shape(const JsonReader& m, int sequence) {
  TransformerShape s;
  s.name = m["name"].as_string();
  s.layers = read_int(m, "layers");
  s.hidden = read_int(m, "hidden");
  s.heads = read_int(m, "heads");
  const int kv = read_int(m, "kv_groups");
  s.kv_heads = kv == s.heads ? 0 : kv;
  s.ffn_hidden = read_int(m, "ffn");
  s.vocabulary = read_int(m, "vocab");
  s.swiglu = m["swiglu"].as_bool();
  const std::string norm = m["norm"].as_string();
  if (norm != "LayerNorm" && norm != "RMSNorm") m["norm"].fail("expected LayerNorm or RMSNorm, got \"" + norm + "\"");
  s.rms_norm = norm == "RMSNorm";
  s.bias_linear = m["bias"].as_bool();
  s.tied_embeddings = m["tied"].as_bool();
  const std::string pos = m["pos"].as_string();
  if (pos != "learned_absolute" && pos != "rope") m["pos"].fail("expected learned_absolute or rope, got \"" + pos + "\"");
  s.learned_positions = pos == "learned_absolute";
  s.sequence = sequence;
  return s;
}

// torchtitan cuts a model whose layers do not fill p x v chunks evenly (Llama 3.1 405B's
// 126 over 8 ranks): the first chunks take one layer more, as its pipeline split does.
std::vector<int> uneven_chunks(int layers, int chunks) {
  std::vector<int> out(static_cast<std::size_t>(chunks), layers / chunks);
  for (int c = 0; c < layers % chunks; ++c) out[static_cast<std::size_t>(c)] += 1;
  return out;
}

PublishedRun read_row(const JsonReader& r) {
  PublishedRun run;
  run.id = r["id"].as_string();
  const JsonReader src = r["source"];
  run.source = src["repo"].as_string() + " " + src["path"].as_string() + " @ " + src["commit"].as_string().substr(0, 12);
  run.framework_name = r["framework_version"].as_string();
  for (const JsonReader& a : r["assumed"].items()) run.assumed.push_back(a.as_string());
  const std::string framework = r["framework"].as_string();
  const std::optional<Framework> fw = framework_from_name(framework);
  if (!fw) r["framework"].fail("expected megatron, torch or deepspeed, got \"" + framework + "\"");
  Job& job = run.job;
  job.framework = *fw;
  job.cluster.gpu = r["gpu"].as_string();
  job.cluster.gpus_per_node = 8;
  job.shape = row_shape(r["model"], read_int(r, "seq_length"));
  job.vocab_size = job.shape.vocabulary;
  ParallelLayout& l = job.layout;
  l.t = read_int(r, "t"), l.cp = read_int(r, "cp"), l.ep = read_int(r, "ep"), l.d = read_int(r, "d");
  l.p = read_int(r, "p"), l.v = read_int(r, "v");
  l.sequence_parallel = r["sp"].as_bool();
  l.micro_batch = read_int(r, "micro_batch");
  const int global = read_int(r, "global_batch");
  if (global % (l.micro_batch * l.d) != 0) {
    r["global_batch"].fail(std::to_string(global) + " is not a multiple of micro_batch x d = " +
                           std::to_string(l.micro_batch * l.d));
  }
  l.microbatches = global / (l.micro_batch * l.d);
  const std::string sharding = r["sharding"].as_string();
  const std::optional<Sharding> sh = sharding_from_name(sharding);
  if (!sh) r["sharding"].fail("expected none, distributed-optimizer, zero-2 or zero-3, got \"" + sharding + "\"");
  l.sharding = *sh;
  const std::string recompute = r["recompute"].as_string();
  const std::optional<Recompute> rc = recompute_from_name(recompute);
  if (!rc) r["recompute"].fail("expected none, selective or full, got \"" + recompute + "\"");
  l.recompute = *rc;
  // What the kernels run: every row's attention is fused (llm-foundry's FlashAttention,
  // torchtitan's SDPA, Megatron-Core's Transformer Engine); fp8 by the row's recipe; the
  // TP overlap where the source names it (Megatron's README: --tp-comm-overlap; torchtitan's
  // "Async TP" rows); elementwise ops fused under Transformer Engine or torch.compile, eager
  // in a PyTorch run without compile (llm-foundry's Composer, torchtitan's eager rows).
  l.attention = AttentionKernel::Flash;
  if (r["precision"].as_string() == "fp8") {
    const std::string recipe = r["fp8_recipe"].as_string();
    const std::optional<Fp8Recipe> fp8 = fp8_recipe_from_name(recipe);
    if (!fp8 || *fp8 == Fp8Recipe::None) r["fp8_recipe"].fail("expected delayed, tensorwise, rowwise or mxfp8, got \"" + recipe + "\"");
    l.fp8 = *fp8;
  } else if (r["precision"].as_string() != "bf16") {
    r["precision"].fail("expected bf16 or fp8, got \"" + r["precision"].as_string() + "\"");
  }
  const JsonReader extra = r["extra_published"];
  if (job.framework == Framework::Megatron) {
    l.tp_comm_overlap = r["notes"].as_string().find("--tp-comm-overlap") != std::string::npos && l.t > 1;
  } else {
    l.tp_comm_overlap = run.id.find("asynctp") != std::string::npos;
    l.fused_elementwise = extra.has("torch_compile") && extra["torch_compile"].as_bool();
  }
  // torchtitan's schedules are named only in the row's id: "1f1b", "i1f1b" (interleaved).
  if (l.p > 1 && job.framework == Framework::Torch) {
    const bool interleaved = run.id.find("-i1f1b") != std::string::npos;
    l.schedule = interleaved ? ScheduleKind::Interleaved : ScheduleKind::OneFOneB;
    if (interleaved && l.v == 1) {
      l.v = 2;
      run.assumed.push_back("v = 2 for torchtitan's Interleaved1F1B (v not published)");
    }
  }
  const int chunks = l.p * l.v;
  if (job.shape.layers % chunks != 0) {
    l.layers_per_chunk = uneven_chunks(job.shape.layers, chunks);
    run.assumed.push_back("layers cut unevenly over p x v = " + std::to_string(chunks) +
                          " chunks, the first taking one more");
  }
  if (r.has("gpu_overrides")) {
    const JsonReader o = r["gpu_overrides"];
    for (const auto& [key, value] : o.json().items()) {
      if (key == "gpu.hbm_gb_per_s") {
        run.hbm_gb_per_s = o[key].as_double(1, 1e6);
      } else if (key == "memory_bytes") {
        run.memory_bytes = o[key].as_double(1, 1e15);
      } else {
        o[key].fail("expected gpu.hbm_gb_per_s or memory_bytes");
      }
    }
  }
  const JsonReader metric = r["metric"];
  const std::string kind = metric["kind"].as_string();
  if (kind == "tokens_per_s_per_gpu") {
    run.metric = RunMetric::TokensPerSecondPerGpu;
  } else if (kind == "megatron_tflops_per_gpu") {
    run.metric = RunMetric::MegatronTflopsPerGpu;
  } else {
    metric["kind"].fail("expected tokens_per_s_per_gpu or megatron_tflops_per_gpu, got \"" + kind + "\"");
  }
  run.published = metric["value"].as_double(1e-9, 1e12);
  const int gpus = read_int(r, "gpus");
  if (gpus != l.gpus()) {
    r["gpus"].fail(std::to_string(gpus) + ", but t x cp x d x p = " + std::to_string(l.gpus()));
  }
  set_framework_overlap(job.framework, r["overlap_grad_reduce"].as_bool(), r["overlap_param_gather"].as_bool(), l);
  try {
    validate_job(job, gpus);
  } catch (const InputError& e) {
    r.fail(std::string("the row's layout is refused: ") + e.what());
  }
  return run;
}

double median(std::vector<double> x) {
  if (x.empty()) return 0;
  std::sort(x.begin(), x.end());
  const std::size_t n = x.size();
  return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

}  // namespace

std::vector<PublishedRun> published_runs_from_json(const JsonReader& rows) {
  if (!rows.json().is_array()) rows.fail("expected an array of published runs");
  std::vector<PublishedRun> out;
  std::set<std::string> ids;
  for (const JsonReader& row : rows.items()) {
    out.push_back(read_row(row));
    if (!ids.insert(out.back().id).second) row["id"].fail("\"" + out.back().id + "\" appears twice");
  }
  return out;
}

std::vector<PublishedRun> load_published_runs(const std::string& path) {
  return published_runs_from_json(JsonReader::from_file(path));
}

GpuModel run_gpu(const PublishedRun& run, const GpuModel& gpu) {
  GpuModel g = gpu;
  if (run.hbm_gb_per_s > 0) g.hbm_gb_per_s = run.hbm_gb_per_s;
  if (run.memory_bytes > 0) g.node.memory_bytes = static_cast<int64_t>(run.memory_bytes);
  return g;
}

double megatron_r080_flops(const TransformerShape& s, int global_batch) {
  const double h = s.hidden, a = s.heads, L = s.layers, seq = s.sequence;
  const double groups = s.kv_heads > 0 ? s.kv_heads : s.heads;
  const double kv_channels = s.kv_channels > 0 ? s.kv_channels : h / a;
  const double gated = s.swiglu ? 1.5 : 1.0;
  const double ffn = s.ffn_hidden > 0 ? s.ffn_hidden : 4 * h;
  return 12.0 * global_batch * seq * L * h * h *
         ((1 + groups / a + seq / h) * (a * kv_channels / h) + (ffn / h) * gated + s.vocabulary / (2 * L * h));
}

RunPrediction predict_run(const PublishedRun& run, const GpuModel& gpu) {
  RunPrediction p;
  p.report = evaluate_job(run.job, run_gpu(run, gpu));
  const double step_s = static_cast<double>(p.report.time.step_ns) * 1e-9;
  const ParallelLayout& l = run.job.layout;
  const double gpus = l.gpus();
  if (run.metric == RunMetric::TokensPerSecondPerGpu) {
    p.predicted = static_cast<double>(l.global_batch()) * run.job.shape.sequence / (step_s * gpus);
  } else {
    p.predicted = megatron_r080_flops(run.job.shape, l.global_batch()) / (step_s * gpus) / 1e12;
  }
  p.error = p.predicted / run.published - 1.0;
  return p;
}

std::vector<std::string> run_groups(const PublishedRun& run) {
  const ParallelLayout& l = run.job.layout;
  const int s = run.job.shape.sequence;
  const char* seq = s <= 2048 ? "seq <= 2k" : s <= 8192 ? "seq 4k-8k" : s <= 32768 ? "seq 16k-32k" : "seq >= 64k";
  const int g = l.gpus();
  const char* gpus = g <= 8 ? "gpus 8" : g <= 64 ? "gpus 16-64" : g <= 512 ? "gpus 96-512" : "gpus > 512";
  std::ostringstream precision, degrees;
  precision << "precision " << (l.fp8 == Fp8Recipe::None ? std::string("bf16") : "fp8 " + to_string(l.fp8));
  degrees << "t" << l.t << " p" << l.p << " cp" << l.cp << " ep" << l.ep;
  return {seq, gpus, "framework " + to_string(run.job.framework), precision.str(), degrees.str(),
          "sharding " + to_string(l.sharding)};
}

ErrorSummary summarize_errors(const std::vector<double>& errors) {
  ErrorSummary s;
  s.rows = static_cast<int>(errors.size());
  std::vector<double> abs;
  for (double e : errors) {
    abs.push_back(std::fabs(e));
    s.worst_abs = std::max(s.worst_abs, std::fabs(e));
    s.mean_signed += e / static_cast<double>(errors.size());
  }
  s.median_abs = median(abs);
  return s;
}

namespace {

std::map<std::string, std::vector<double>> grouped(const std::vector<PublishedRun>& runs,
                                                   const std::vector<RunPrediction>& predictions) {
  std::map<std::string, std::vector<double>> out;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    out["all"].push_back(predictions[i].error);
    for (const std::string& g : run_groups(runs[i])) out[g].push_back(predictions[i].error);
  }
  return out;
}

std::string pct(double x) { return fmt("%+.1f%%", 100 * x); }

}  // namespace

std::string published_runs_markdown(const std::vector<PublishedRun>& runs, const std::vector<RunPrediction>& predictions) {
  std::ostringstream md;
  md << "| row | metric | published | predicted | error | step s | layout |\n|---|---|---:|---:|---:|---:|---|\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const PublishedRun& r = runs[i];
    const RunPrediction& p = predictions[i];
    const ParallelLayout& l = r.job.layout;
    md << "| " << r.id << " | " << (r.metric == RunMetric::TokensPerSecondPerGpu ? "tok/s/GPU" : "TFLOP/s/GPU") << " | "
       << fmt("%.1f", r.published) << " | " << fmt("%.1f", p.predicted) << " | " << pct(p.error) << " | "
       << fmt("%.3f", static_cast<double>(p.step_ns()) * 1e-9) << " | t" << l.t << (l.sequence_parallel ? "+SP" : "")
       << " cp" << l.cp << " p" << l.p << " v" << l.v << " d" << l.d << " b" << l.micro_batch << " M"
       << l.microbatches << " " << to_string(l.sharding) << " " << to_string(l.recompute) << " |\n";
  }
  md << "\n| group | rows | median abs error | worst abs error | mean signed error |\n|---|---:|---:|---:|---:|\n";
  for (const auto& [group, errors] : grouped(runs, predictions)) {
    const ErrorSummary s = summarize_errors(errors);
    md << "| " << group << " | " << s.rows << " | " << fmt("%.1f%%", 100 * s.median_abs) << " | "
       << fmt("%.1f%%", 100 * s.worst_abs) << " | " << pct(s.mean_signed) << " |\n";
  }
  return md.str();
}

Json published_runs_json(const std::vector<PublishedRun>& runs, const std::vector<RunPrediction>& predictions) {
  Json rows = Json::array();
  for (std::size_t i = 0; i < runs.size(); ++i) {
    rows.push_back({{"id", runs[i].id},
                    {"metric", runs[i].metric == RunMetric::TokensPerSecondPerGpu ? "tokens_per_s_per_gpu"
                                                                                   : "megatron_tflops_per_gpu"},
                    {"published", runs[i].published},
                    {"predicted", predictions[i].predicted},
                    {"error", predictions[i].error},
                    {"step_ms", static_cast<double>(predictions[i].step_ns()) / 1e6},
                    {"pipeline_ms", static_cast<double>(predictions[i].report.time.pipeline_ns) / 1e6},
                    {"dp_exposed_ms", static_cast<double>(predictions[i].report.time.dp_exposed_ns) / 1e6},
                    {"sharding_ms", static_cast<double>(predictions[i].report.time.sharding_ns) / 1e6},
                    {"optimizer_ms", static_cast<double>(predictions[i].report.time.optimizer_ns) / 1e6},
                    {"layer_forward_ms", static_cast<double>(predictions[i].report.time.layer.forward_ns) / 1e6},
                    {"layer_backward_ms", static_cast<double>(predictions[i].report.time.layer.backward_ns()) / 1e6},
                    {"bubble", predictions[i].report.time.bubble}});
  }
  Json summary = Json::object();
  for (const auto& [group, errors] : grouped(runs, predictions)) {
    const ErrorSummary s = summarize_errors(errors);
    summary[group] = {{"rows", s.rows}, {"median_abs_error", s.median_abs}, {"worst_abs_error", s.worst_abs},
                      {"mean_signed_error", s.mean_signed}};
  }
  return {{"format", "pipescope.published_runs"}, {"version", 1}, {"rows", rows}, {"summary", summary}};
}

}  // namespace pipescope
