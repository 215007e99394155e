// `pipescope profile --model MODEL.json --backend cpu`: measure every layer of a model
// file into an executable profile (exec/profiler/profiler.h); `pipescope profile synth`: write an
// analytic profile (GPT-style transformer, or a uniform / uneven toy stack) without
// measuring anything.
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "cli/plan_options.h"
#include "cli/profile_hf.h"
#include "core/error.h"
#include "interop/synth_profile.h"
#include "exec/backends/backend.h"
#include "exec/profiler/profiler.h"

namespace pipescope::cli {

namespace {

std::vector<double> parse_batch_sizes(const std::string& text) {
  std::vector<double> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      std::size_t used = 0;
      double v = std::stod(item, &used);
      if (used != item.size() || !(v > 0)) throw std::invalid_argument(item);
      out.push_back(v);
    } catch (const std::exception&) {
      throw InputError("--batch-sizes: expected positive numbers separated by commas, got \"" + text + "\"");
    }
  }
  if (out.empty()) throw InputError("--batch-sizes: expected at least one batch size");
  for (std::size_t i = 1; i < out.size(); ++i) {
    if (!(out[i] > out[i - 1])) throw InputError("--batch-sizes: expected strictly increasing sizes, got \"" + text + "\"");
  }
  return out;
}

// The flags of `profile --model` (measure a model file on a backend).
struct MeasureArgs {
  std::string model;
  exec::ProfileOptions options;
  std::string batch_sizes = "1,2,4,8";
  std::string output = "-";
  std::string dtype = "fp32";
  std::string statistic = "median";  // parsed into options.statistic when the command runs
  int partitions = 1;
};

// The flags of `profile synth`.
struct SynthArgs {
  std::string kind = "gpt";
  GptSpec gpt;
  std::string recompute_granularity = "none";  // gpt: parse_recompute_granularity -> gpt.recompute
  UniformSpec uniform;
  std::string batch_sizes = "1,2,4,8";
  std::string output = "-";
  int layers = -1;
  std::string name;
  HfSynthArgs hf;
  bool efficiency_given = false;
};

struct GemmArgs {
  int m = 4096, n = 8192, k = 2048, repeats = 20;
  std::string backend = "cuda", dtype = "bf16";
  bool json = true;
};

std::shared_ptr<MeasureArgs> add_measure_options(CLI::App* profile) {
  auto m = std::make_shared<MeasureArgs>();
  profile->add_option("--model", m->model, "Model file (pipescope.model) to measure layer by layer");
  profile->add_option("--backend", m->options.backend, "Backend to measure on: " + backend_list())->capture_default_str();
  profile->add_option("--dtype", m->dtype, "fp32 | bf16 (bf16: cuda only; fp32 arithmetic)")->capture_default_str();
  profile->add_option("--sm-partition", m->partitions,
                      "cuda: measure on an SM partition of 1/K of the GPU (what each of K virtual devices gets)")
      ->capture_default_str();
  profile->add_option("--batch-sizes", m->batch_sizes, "Micro-batch sizes to measure")->capture_default_str();
  profile->add_option("--repeats", m->options.repeats, "Timed rounds (each times every layer once)")
      ->capture_default_str();
  profile->add_option("--warmup", m->options.warmup, "Untimed rounds before the timed ones")->capture_default_str();
  profile->add_option("--statistic", m->statistic,
                      "What each op keeps of its timings: median | trimmed-mean (the mean less the fastest and slowest "
                      "tenth)")
      ->capture_default_str();
  profile->add_option("-o,--output", m->output, "Output file ('-' = stdout)")->capture_default_str();

  return m;
}

// The analytic profile the flags describe: an hf config, a GPT-style stack, or a toy stack.
std::string synthesize(SynthArgs& a) {
  const std::vector<double> sizes = parse_batch_sizes(a.batch_sizes);
  if (a.hf.requested()) {
    if (a.efficiency_given) {
      throw InputError("--efficiency: not with --hf-config (the GPU file's gemm curve and memory_efficiency set what is "
                       "reached); gpt only");
    }
    return a.hf.run(sizes, a.gpt.sequence, a.name);
  }
  Profile p;
  if (a.kind == "gpt") {
    a.gpt.batch_sizes = sizes;
    if (a.layers >= 0) a.gpt.layers = a.layers;
    if (!a.name.empty()) a.gpt.name = a.name;
    if (!a.hf.gpu.empty()) a.gpt.memory_gb_per_s = a.hf.load_gpu().hbm_gb_per_s;
    a.gpt.recompute = parse_recompute_granularity(a.recompute_granularity);
    p = make_gpt_profile(a.gpt);
  } else if (a.kind == "uniform" || a.kind == "uneven") {
    a.uniform.batch_sizes = sizes;
    if (a.layers >= 0) a.uniform.layers = a.layers;
    if (a.kind == "uneven") {
      a.uniform.name = "amoebanet-like";
      if (a.uniform.heavy_every == 0) a.uniform.heavy_every = 4;
      if (a.uniform.heavy_factor == 1.0) a.uniform.heavy_factor = 4.0;
    }
    if (!a.name.empty()) a.uniform.name = a.name;
    p = make_uniform_profile(a.uniform);
  } else {
    throw InputError("--kind: expected gpt, uniform or uneven, got \"" + a.kind + "\"");
  }
  // What is written must read back: the reader's checks (finite, in range) name
  // the field of any value the flags pushed out of range.
  std::string text = profile_to_json(p).dump(1) + "\n";
  (void)profile_from_json(JsonReader::from_text(text, "profile synth (the generated profile)"));
  return text;
}

CLI::App* add_synth_command(CLI::App* profile) {
  auto a = std::make_shared<SynthArgs>();
  CLI::App* synth = profile->add_subcommand("synth", "Write an analytic profile (no measurement)");
  synth->add_option("--kind", a->kind, "gpt | uniform | uneven")->capture_default_str();
  synth->add_option("--name", a->name, "Model name in the profile");
  synth->add_option("--layers", a->layers, "Transformer blocks (gpt, default 24) or layers (uniform/uneven, default 16)");
  synth->add_option("--hidden", a->gpt.hidden, "Hidden size (gpt)")->capture_default_str();
  synth->add_option("--heads", a->gpt.heads, "Attention heads (gpt)")->capture_default_str();
  synth->add_option("--sequence,--seq", a->gpt.sequence, "Sequence length (gpt, hf)")->capture_default_str();
  synth->add_option("--vocabulary", a->gpt.vocabulary, "Vocabulary size (gpt)")->capture_default_str();
  synth->add_option("--peak-tflops", a->gpt.peak_tflops, "Device peak TFLOP/s (gpt)")->capture_default_str();
  CLI::Option* efficiency =
      synth->add_option("--efficiency", a->gpt.efficiency, "Fraction of peak reached (gpt; hf: the GPU file says)")
          ->capture_default_str();
  synth->add_option("--device-name", a->gpt.device_name, "Device name (gpt)")->capture_default_str();
  synth->add_option("--device-memory", a->gpt.device_memory_bytes, "Device memory in bytes (gpt)")->capture_default_str();
  synth->add_flag_callback("--disable-bias-linear", [a] { a->gpt.bias_linear = false; },
                  "gpt: linear layers without biases (12 h^2 + 4 h parameters per block, as Megatron-LM's flag)");
  synth->add_option("--position-embedding-type", a->gpt.position_embedding,
                    "gpt: learned_absolute (an s x h table) | rope (no position parameters)")
      ->capture_default_str();
  synth->add_option("--recompute-granularity", a->recompute_granularity,
                    "gpt: none | selective (attention scores recomputed in backward, not stored: 34 s b h bytes per "
                    "block, as Megatron-LM's selective recompute or flash attention)")
      ->capture_default_str();
  synth->add_option("--embedding-dropout", a->gpt.embedding_dropout,
                    "gpt: dropout probability after the embedding; > 0 keeps its 1-byte mask (s b h)")
      ->capture_default_str();
  synth->add_option("--forward-ms", a->uniform.forward_ms, "Forward ms per layer at batch 1 (uniform/uneven)")->capture_default_str();
  synth->add_option("--backward-ms", a->uniform.backward_ms, "Backward ms per layer at batch 1 (uniform/uneven)")->capture_default_str();
  synth->add_option("--heavy-every", a->uniform.heavy_every, "Every n-th layer is heavy (uneven, default 4)");
  synth->add_option("--heavy-factor", a->uniform.heavy_factor, "How much heavier (uneven, default 4)");
  synth->add_option("--batch-sizes", a->batch_sizes, "Micro-batch sizes to tabulate")->capture_default_str();
  synth->add_option("-o,--output", a->output, "Output file ('-' = stdout)")->capture_default_str();
  a->hf.add_to(synth);
  synth->callback([a, efficiency] {
    a->efficiency_given = efficiency->count() > 0;
    write_output(a->output, synthesize(*a));
  });
  return synth;
}

CLI::App* add_gemm_command(CLI::App* profile) {
  auto g = std::make_shared<GemmArgs>();
  CLI::App* gemm = profile->add_subcommand(
      "gemm", "cuda: time the backend's GEMM C[m,n] = A[m,k] B[k,n] against the best cuBLASLt algorithm");
  gemm->add_option("--m", g->m, "Rows of A and C (micro-batch x sequence)")->capture_default_str();
  gemm->add_option("--n", g->n, "Columns of B and C")->capture_default_str();
  gemm->add_option("--k", g->k, "Inner dimension")->capture_default_str();
  gemm->add_option("--repeats", g->repeats, "Timed launches per algorithm")->capture_default_str();
  gemm->add_option("--backend", g->backend, "Backend (cuda)")->capture_default_str();
  gemm->add_option("--dtype", g->dtype, "fp32 | bf16")->capture_default_str();
  gemm->add_flag("--json", g->json, "Print the JSON object (the only output format)");
  gemm->callback([g] {
    std::cout << exec::measure_gemm_json(backend_spec(g->backend, g->dtype, 1), g->m, g->n, g->k, g->repeats) << "\n";
  });
  return gemm;
}

}  // namespace

void add_profile_command(CLI::App& app) {
  CLI::App* profile = app.add_subcommand("profile", "Measure or synthesise a per-layer profile");
  profile->require_subcommand(0, 1);
  std::shared_ptr<MeasureArgs> m = add_measure_options(profile);
  CLI::App* synth = add_synth_command(profile);
  CLI::App* gemm = add_gemm_command(profile);
  profile->callback([m, profile, synth, gemm] {
    if (synth->parsed() || gemm->parsed()) return;
    if (m->model.empty()) throw InputError("profile: give --model MODEL.json to measure, or use `profile synth`");
    m->options.batch_sizes = parse_batch_sizes(m->batch_sizes);
    m->options.statistic = exec::parse_profile_statistic(m->statistic);
    m->options.backend = backend_spec(m->options.backend, m->dtype, m->partitions);
    m->options.progress = &std::cerr;
    Profile p = exec::profile_model(exec::load_model(m->model), m->options);
    write_output(m->output, profile_to_json(p).dump(1) + "\n");
  });
}

}  // namespace pipescope::cli
