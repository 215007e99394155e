// Megatron-LM flags for a plan (flag names and value formats of core_v0.15.0's
// megatron/training/arguments.py; layout rules of megatron/core/transformer/
// transformer_config.py and pipeline_parallel_layer_layout.py). Cuts are said in the
// simplest form Megatron accepts that reproduces them exactly, tried in order:
//   even split; --account-for-embedding/loss-in-pipeline-split (the embedding or head
//   counted as a layer); --decoder-first/last-pipeline-num-layers (uneven ends, even
//   middle); --pipeline-model-parallel-layout (anything else).
// A v2 plan's layout adds its fields as Megatron-LM flags (layout_flags below: t, SP,
// cp, ep, the distributed optimizer, recompute, precision, rank order) or refuses the
// field Megatron-LM lacks. Invariant: the decoder layers per virtual stage that Megatron
// derives from the emitted flags equal the plan's, stage by stage
// (tests/interop/interop_export_test.cpp recomputes them with Megatron's rules).
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <sstream>

#include "core/error.h"
#include "interop/export.h"
#include "interop/hf_config.h"
#include "llm/framework.h"

namespace pipescope {

namespace {

using Flags = std::vector<std::pair<std::string, std::string>>;  // flag, value ("" = a switch)

// Megatron's stage of model-order stage s with K ranks and v chunks is s itself
// (layout index vpp_rank * K + pp_rank); decoder counts are compared in that order.
bool all_equal(const std::vector<int>& c, int value) {
  for (int x : c) {
    if (x != value) return false;
  }
  return true;
}

// --account-for-embedding/loss-in-pipeline-split: (L + e + l) units split evenly over
// K v stages, the embedding taking one unit of stage 0 and the loss one of the last.
std::optional<Flags> accounted_split(const PlanShape& s) {
  const int S = s.stages(), L = s.decoder_total();
  for (int e = 0; e <= (s.has_embedding_layer() ? 1 : 0); ++e) {
    for (int l = 0; l <= (s.has_head_layer() ? 1 : 0); ++l) {
      if (e + l == 0 || (L + e + l) % S != 0) continue;
      const int u = (L + e + l) / S;
      bool match = true;
      for (int st = 0; st < S && match; ++st) {
        match = s.decoder_layers[st] == u - (st == 0 ? e : 0) - (st == S - 1 ? l : 0);
      }
      if (!match) continue;
      Flags f;
      if (e) f.emplace_back("--account-for-embedding-in-pipeline-split", "");
      if (l) f.emplace_back("--account-for-loss-in-pipeline-split", "");
      return f;
    }
  }
  return std::nullopt;
}

// --decoder-first/last-pipeline-num-layers: rank 0's chunks hold a each, rank K-1's
// b each, the middle ranks' chunks m each (Megatron divides each rank's count by v).
std::optional<Flags> uneven_ends(const PlanShape& s) {
  const int K = s.positions, v = s.chunks;
  if (K < 2) return std::nullopt;
  auto rank_counts = [&](int p) {
    std::vector<int> c;
    for (int st = 0; st < s.stages(); ++st) {
      if (s.stage_position[st] == p) c.push_back(s.decoder_layers[st]);
    }
    return c;
  };
  const int a = s.decoder_layers[0], b = s.decoder_layers[s.stages() - 1];
  if (!all_equal(rank_counts(0), a) || !all_equal(rank_counts(K - 1), b)) return std::nullopt;
  int m = -1;
  for (int p = 1; p + 1 < K; ++p) {
    std::vector<int> c = rank_counts(p);
    if (m < 0) m = c.front();
    if (!all_equal(c, m)) return std::nullopt;
  }
  Flags f;
  if (a != m || m < 0) {
    if (a <= 0) return std::nullopt;
    f.emplace_back("--decoder-first-pipeline-num-layers", std::to_string(a * v));
  }
  if (b != m || m < 0) {
    if (b <= 0) return std::nullopt;
    f.emplace_back("--decoder-last-pipeline-num-layers", std::to_string(b * v));
  }
  return f;
}

// "Et*3|t*4|...|t*2L": one '|'-separated entry per stage in model order.
std::string layout_string(const PlanShape& s) {
  std::string out;
  for (int st = 0; st < s.stages(); ++st) {
    if (st) out += '|';
    if (st == 0) out += 'E';  // Megatron always has an embedding and a loss; a profile
    const int t = s.decoder_layers[st];  // without them keeps them with the end stages
    if (t == 1) out += "t";
    if (t > 1) out += "t*" + std::to_string(t);
    if (st == s.stages() - 1) out += 'L';
  }
  return out;
}

}  // namespace

std::vector<int> megatron_layout_decoders(const std::string& layout) {
  auto refuse = [&](const std::string& why) -> void {
    throw InputError("--pipeline-model-parallel-layout: \"" + layout + "\": " + why);
  };
  std::vector<int> out(1, 0);
  bool ended = false;
  for (std::size_t i = 0; i < layout.size(); ++i) {
    const char c = layout[i];
    if (c == '|') {
      if (ended) refuse("L (the loss) may only end the last stage");
      out.push_back(0);
    } else if (c == 'E') {
      if (out.size() != 1 || out[0] != 0) refuse("E (the embedding) may only begin the first stage");
    } else if (c == 'L') {
      ended = true;
    } else if (c == 't') {
      int64_t n = 1;
      if (i + 1 < layout.size() && layout[i + 1] == '*') {
        std::size_t j = i + 2;
        n = 0;
        while (j < layout.size() && std::isdigit(static_cast<unsigned char>(layout[j])) && n <= (1 << 20)) {
          n = n * 10 + (layout[j++] - '0');
        }
        if (j == i + 2 || n < 1 || n > (1 << 20)) refuse("expected t*N with 1 <= N <= 2^20");
        i = j - 1;
      }
      if (ended) refuse("no decoder layer may follow L");
      out.back() += static_cast<int>(n);
    } else {
      refuse(std::string("unexpected '") + c + "' (this reader takes E, t, t*N, L and |, the form pipescope's export writes)");
    }
  }
  if (layout.empty() || layout[0] != 'E' || !ended) refuse("expected E first and L last");
  return out;
}

namespace {

// A value as one shell word: quoted when it holds anything but [A-Za-z0-9._-] (a
// layout's '|' and '*' would otherwise pipe and glob).
std::string shell_word(const std::string& value) {
  for (char c : value) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return "'" + value + "'";
  }
  return value;
}

// The Hugging Face config a job was planned from, when it can still be read: as named
// (from where the plan was made), else beside the plan. nullopt: a job of Megatron's model
// flags, or a config no longer there (the header says which flags that leaves out).
std::optional<HfModel> model_config(const Job& job, const std::string& plan_dir) {
  if (job.model_source.empty()) return std::nullopt;
  for (const std::filesystem::path& path : {std::filesystem::path(job.model_source),
                                            std::filesystem::path(plan_dir) / job.model_source}) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) return load_hf_model(path.string());
  }
  return std::nullopt;
}

std::string number(double value) {
  char out[32];
  std::snprintf(out, sizeof out, "%.10g", value);
  return out;
}

// The model as Megatron-LM flags (core_v0.15.0 arguments.py), from the job's shape: what
// pipescope counted, so that Megatron builds the same layers. From the Hugging Face config
// besides, the numerics Megatron-Bridge's conversion sets (model_bridge.py CONFIG_MAPPING:
// rope_theta -> rotary_base, rms_norm_eps -> layernorm_epsilon, initializer_range ->
// init_method_std; llama3 rope scaling -> --use-rope-scaling). Dropout stays at Megatron's
// defaults, whose masks llm/memory.h counts. Throws InputError for a shape Megatron's flags
// cannot build (an attention output or MLP bias without the others).
void model_flags(const PlanShape& s, Flags& f, std::vector<std::string>& notes) {
  const Job& job = *s.job;
  const TransformerShape& m = job.shape;
  const std::string field = "job.model.shape.";
  if (!m.bias_linear && (m.output_bias || m.mlp_bias)) {
    throw InputError("", field + (m.output_bias ? "output_bias" : "mlp_bias"),
                     "Megatron-LM biases every linear layer (the default) or none (--disable-bias-linear), with "
                     "--add-qkv-bias for q, k and v alone; it has no flag for a bias on the " +
                         std::string(m.output_bias ? "attention output projection" : "MLP") + " alone");
  }
  f.emplace_back("--num-layers", std::to_string(m.layers));
  f.emplace_back("--hidden-size", std::to_string(m.hidden));
  // the FFN width pipescope counted (Megatron's own default where the job gave none)
  const int ffn = m.ffn_hidden > 0 ? m.ffn_hidden : default_ffn_hidden(m.hidden, m.swiglu);
  f.emplace_back("--ffn-hidden-size", std::to_string(ffn));
  f.emplace_back("--num-attention-heads", std::to_string(m.heads));
  if (m.kv_heads > 0 && m.kv_heads != m.heads) {
    f.emplace_back("--group-query-attention", "");
    f.emplace_back("--num-query-groups", std::to_string(m.kv_heads));
  }
  if (m.kv_channels > 0) f.emplace_back("--kv-channels", std::to_string(m.kv_channels));
  f.emplace_back("--seq-length", std::to_string(m.sequence));
  const std::optional<HfModel> hf = model_config(job, s.plan_dir);
  const int positions = std::max(m.sequence, hf ? hf->numerics.max_position_embeddings : 0);
  f.emplace_back("--max-position-embeddings", std::to_string(positions));
  f.emplace_back("--position-embedding-type", m.learned_positions ? "learned_absolute" : "rope");
  if (m.rms_norm) f.emplace_back("--normalization", "RMSNorm");
  if (m.swiglu) f.emplace_back("--swiglu", "");
  if (!m.bias_linear) f.emplace_back("--disable-bias-linear", "");
  if (!m.bias_linear && m.qkv_bias) f.emplace_back("--add-qkv-bias", "");
  if (!m.tied_embeddings) f.emplace_back("--untie-embeddings-and-output-weights", "");
  f.emplace_back("--vocab-size", std::to_string(job.vocab_size > 0 ? job.vocab_size : m.vocabulary));
  f.emplace_back("--make-vocab-size-divisible-by", std::to_string(job.vocab_divisible_by));
  if (m.experts > 0) {
    f.emplace_back("--num-experts", std::to_string(m.experts));
    f.emplace_back("--moe-router-topk", std::to_string(m.moe_topk));
    // Megatron falls back to --ffn-hidden-size as pipescope does; said, as Megatron-Bridge sets it
    f.emplace_back("--moe-ffn-hidden-size", std::to_string(m.moe_ffn_hidden > 0 ? m.moe_ffn_hidden : ffn));
    if (m.moe_layer_frequency > 1) f.emplace_back("--moe-layer-freq", std::to_string(m.moe_layer_frequency));
    if (m.shared_expert_ffn_hidden > 0) {
      f.emplace_back("--moe-shared-expert-intermediate-size", std::to_string(m.shared_expert_ffn_hidden));
    }
    f.emplace_back("--moe-token-dispatcher-type", "alltoall");  // the all-to-alls llm/layer_time.h times
  }
  if (!hf) {
    notes.push_back(job.model_source.empty()
                        ? "model from Megatron's flags: numerics (--rotary-base, --norm-epsilon, --init-method-std) "
                          "at Megatron's defaults"
                        : "model source " + job.model_source + " not found (as named, or beside the plan): "
                          "--rotary-base, --norm-epsilon and --init-method-std left at Megatron's defaults");
    return;
  }
  const HfNumerics& n = hf->numerics;
  if (!m.learned_positions && n.rope_theta) f.emplace_back("--rotary-base", number(*n.rope_theta));
  if (n.norm_epsilon) f.emplace_back("--norm-epsilon", number(*n.norm_epsilon));
  if (n.initializer_range) f.emplace_back("--init-method-std", number(*n.initializer_range));
  if (n.rope_scaling) {
    if (n.rope_scaling_type != "llama3") {
      throw InputError(hf->source, "rope_scaling", "\"" + n.rope_scaling_type + "\": Megatron-LM's flags scale RoPE as "
                                                   "Llama 3.1 does (--use-rope-scaling, rope_type llama3) only");
    }
    f.emplace_back("--use-rope-scaling", "");
    if (n.rope_scaling_factor) f.emplace_back("--rope-scaling-factor", number(*n.rope_scaling_factor));
  }
  if (m.swiglu && !n.hidden_act.empty() && n.hidden_act != "silu") {
    notes.push_back("the config's gated " + n.hidden_act + " MLP: Megatron-LM's flags gate only SiLU (--swiglu); the "
                    "same shape and cost, another activation (Megatron-Bridge sets activation_func in Python)");
  }
}

void check_schedule(const PlanShape& s) {
  if (s.positions == 1) return;  // no pipeline: the schedule does not matter
  if (s.schedule == ScheduleKind::OneFOneB && s.chunks == 1) return;
  if (s.schedule == ScheduleKind::Interleaved && s.chunks > 1) return;
  std::string why = s.schedule == ScheduleKind::GPipe
                        ? "Megatron-LM has no GPipe schedule (it runs 1F1B: the same bubble, less activation memory)"
                        : std::string(kMegatronVersion) + " has no \"" + s.schedule_name + "\" pipeline schedule (it runs 1f1b and interleaved)";
  throw InputError("", "schedule", why + "; plan with --schedules 1f1b,interleaved to export to Megatron-LM");
}

// The layout's parallel sizes (Megatron-LM core_v0.15.0 arguments.py; the expert tensor
// parallel size is left at its default, t, which llm/memory.h assumes).
void parallel_flags(const ParallelLayout& l, Flags& f) {
  if (l.t > 1) f.emplace_back("--tensor-model-parallel-size", std::to_string(l.t));
  if (l.sequence_parallel && l.t > 1) f.emplace_back("--sequence-parallel", "");
  if (l.tp_comm_overlap) f.emplace_back("--tp-comm-overlap", "");  // Transformer Engine's userbuffers (needs SP)
  if (l.cp > 1) f.emplace_back("--context-parallel-size", std::to_string(l.cp));
  if (l.ep > 1) f.emplace_back("--expert-model-parallel-size", std::to_string(l.ep));
}

// bf16 mixed: --bf16. fp32: no flag (Megatron's default). The attention kernel:
// --attention-backend flash or unfused (megatron/core/transformer/enums.py AttnBackend).
// fp8 linears: Transformer Engine's fp8 GEMMs (--fp8-format hybrid: e4m3 forward, e5m2
// gradients) with the recipe's scaling (--fp8-recipe, llm/layout.h's Fp8RecipeInfo names
// Megatron's); fp8 parameters also keep the weights in fp8 (--fp8-param-gather).
// framework_refusal has refused a recipe Megatron-LM has no --fp8-recipe for and fp8
// parameters without the distributed optimizer (arguments.py).
void precision_flags(const ParallelLayout& l, Flags& f) {
  f.emplace_back("--attention-backend", to_string(l.attention));
  if (l.precision == PrecisionRecipe::Fp32) return;
  f.emplace_back("--bf16", "");
  if (const Fp8Recipe fp8 = implied_fp8(l.precision, l.fp8); fp8 != Fp8Recipe::None) {
    f.emplace_back("--fp8-format", "hybrid");
    f.emplace_back("--fp8-recipe", fp8_recipe_info(fp8).megatron);
  }
  if (l.precision != PrecisionRecipe::Fp8Params) return;
  f.emplace_back("--fp8-param-gather", "");
}

// Sharding, recompute and rank order: none, the distributed optimizer, the overlap Megatron
// runs and its two orders (framework_refusal has refused the rest).
void layout_flags(const ParallelLayout& l, Flags& f) {
  if (l.sharding == Sharding::DistributedOptimizer) f.emplace_back("--use-distributed-optimizer", "");
  // The data-parallel overlap the plan was timed with (llm/step_time.h's StepOptions).
  if (l.overlap_grad_reduce) f.emplace_back("--overlap-grad-reduce", "");
  if (l.overlap_param_gather) f.emplace_back("--overlap-param-gather", "");
  if (l.recompute == Recompute::Selective) f.emplace_back("--recompute-granularity", "selective");
  if (l.recompute == Recompute::Full) {  // every layer recomputed from its own input
    f.emplace_back("--recompute-granularity", "full");
    f.emplace_back("--recompute-method", "uniform");
    f.emplace_back("--recompute-num-layers", "1");
  }
  // initialize.py: order = "tp-cp-ep-pp-dp" if --use-tp-pp-dp-mapping else "tp-cp-ep-dp-pp"
  // (validate_layout's check_order holds cp = ep under the first when p > 1).
  if (l.order == "tp-cp-ep-pp-dp") f.emplace_back("--use-tp-pp-dp-mapping", "");
}

}  // namespace

ExportResult export_megatron(const PlanShape& s) {
  check_schedule(s);
  Flags f;
  if (s.layout) {
    parallel_flags(*s.layout, f);
  } else if (s.tensor_parallel > 1) {
    // The profile's tensor-parallel activations and sends are split t ways: sequence parallelism.
    f.emplace_back("--tensor-model-parallel-size", std::to_string(s.tensor_parallel));
    f.emplace_back("--sequence-parallel", "");
  }
  f.emplace_back("--pipeline-model-parallel-size", std::to_string(s.positions));
  std::vector<std::string> notes;
  if (s.job) {
    model_flags(s, f, notes);
  } else {
    f.emplace_back("--num-layers", std::to_string(s.decoder_total()));
    if (s.sequence > 0) f.emplace_back("--seq-length", std::to_string(s.sequence));
  }
  f.emplace_back("--micro-batch-size", std::to_string(s.microbatch_size));
  f.emplace_back("--global-batch-size", std::to_string(s.global_batch));
  if (s.layout) {
    precision_flags(*s.layout, f);
  } else {
    if (s.dtype == Dtype::Bf16) f.emplace_back("--bf16", "");
    if (s.dtype == Dtype::Fp16) f.emplace_back("--fp16", "");
  }
  std::string cut = "even";
  int most = 0;
  for (int c : s.decoder_layers) most = std::max(most, c);
  if (s.positions > 1 && !all_equal(s.decoder_layers, s.decoder_layers.front())) {
    if (std::optional<Flags> acc = accounted_split(s)) {
      cut = "account-for";
      f.insert(f.end(), acc->begin(), acc->end());
    } else if (std::optional<Flags> ends = uneven_ends(s)) {
      cut = "first-last";
      f.insert(f.end(), ends->begin(), ends->end());
    } else {
      cut = "layout";
      f.emplace_back("--pipeline-model-parallel-layout", layout_string(s));
    }
  }
  // The layout states v itself; the other forms take it from this flag.
  if (s.positions > 1 && s.chunks > 1 && cut != "layout") f.emplace_back("--num-virtual-stages-per-pipeline-rank", std::to_string(s.chunks));
  // Megatron-LM overlaps p2p with compute by default (interleaved only; 1F1B's is batched
  // and waited on); --no-overlap-p2p-communication makes the interleaved schedule's blocking too.
  const bool interleaved = s.positions > 1 && s.chunks > 1;
  if (s.p2p == P2p::Blocking && interleaved) f.emplace_back("--no-overlap-p2p-communication", "");
  if (s.layout) {
    layout_flags(*s.layout, f);
  } else if (s.recompute == Recompute::Full) {
    // Each stage keeps only its input: one recompute unit as large as its largest stage.
    f.emplace_back("--recompute-granularity", "full");
    f.emplace_back("--recompute-method", "uniform");
    f.emplace_back("--recompute-num-layers", std::to_string(std::max(1, most)));
  }

  const int cp = s.layout ? s.layout->cp : 1;
  std::ostringstream text;
  text << "# pipescope export --to megatron (" << kMegatronVersion << ")\n"
       << "# " << s.world_size() << " GPUs = tensor " << s.tensor_parallel << (cp > 1 ? " x context " + std::to_string(cp) : "")
       << " x pipeline " << s.positions << " x data " << s.replicas << "; Megatron derives data-parallel size "
       << s.replicas << " = WORLD_SIZE / (tensor x " << (cp > 1 ? "context x " : "") << "pipeline); launch with WORLD_SIZE="
       << s.world_size() << "\n";
  if (s.layout) {
    text << "# ranks in order " << s.layout->order << " (Megatron-Core's RankGenerator, first fastest): on nodes of "
         << s.gpus_per_node << " GPUs";
    const Json groups = rank_groups_json(*s.layout, s.gpus_per_node);
    for (const char* g : {"tp", "cp", "ep", "dp", "pp"}) {
      if (groups[g]["size"].get<int>() < 2) continue;
      text << ", " << g << " " << groups[g]["size"].get<int>() << " ("
           << (groups[g]["crosses_nodes"].get<bool>() ? std::to_string(groups[g]["ranks_per_node"].get<int>()) + " per node"
                                                      : std::string("in one node"))
           << ")";
    }
    text << "\n";
  }
  text << "# schedule " << s.schedule_name << ", " << s.microbatches << " micro-batches per step; cut: " << cut << "\n";
  if (s.job) {
    text << "# data and tokenizer are the run's: add --tokenizer-type / --tokenizer-model (a tokenizer of --vocab-size "
            "tokens) and --data-path, or --mock-data with --tokenizer-type NullTokenizer\n";
  }
  for (const std::string& note : notes) text << "# note: " << note << "\n";
  text << predicted_lines(s, "# ");
  // What Megatron-LM runs (above): 1F1B's batched, waited-on p2p is pipescope's blocking; the
  // interleaved schedule's overlaps unless --no-overlap-p2p-communication. It has no batched
  // mode in pipescope's sense (torch's, the zero-bubble runtime's).
  const P2p runs = interleaved && s.p2p != P2p::Blocking ? P2p::Overlapped : P2p::Blocking;
  if (s.positions > 1 && runs != s.p2p) {
    text << "# p2p: the plan was predicted with " << to_string(s.p2p) << " p2p; Megatron-LM's " << (interleaved ? "interleaved" : "1f1b")
         << " schedule runs " << to_string(runs) << " (predict that with --p2p " << to_string(runs) << ")\n";
  }
  Json flags = Json::array();
  for (std::size_t i = 0; i < f.size(); ++i) {
    text << f[i].first << (f[i].second.empty() ? "" : " " + shell_word(f[i].second)) << (i + 1 < f.size() ? " \\" : "") << "\n";
    flags.push_back(f[i].second.empty() ? Json::array({f[i].first}) : Json::array({f[i].first, f[i].second}));
  }
  Json json = {{"target", "megatron"}, {"target_version", kMegatronVersion}, {"flags", flags},
               {"world_size", s.world_size()}, {"data_parallel_size", s.replicas}, {"cut", cut},
               {"p2p", to_string(runs)}};
  json["notes"] = notes;
  if (s.job) json["predicted"] = predicted_json(s);
  if (s.layout) {
    json["order"] = s.layout->order;
    json["gpus_per_node"] = s.gpus_per_node;
    json["groups"] = rank_groups_json(*s.layout, s.gpus_per_node);
  }
  return {text.str(), json};
}

}  // namespace pipescope
