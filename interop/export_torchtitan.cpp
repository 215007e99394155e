// `export --to torchtitan`: a bash script that launches a version 3 plan with torchtitan
// 0.3.0 (`torchrun ... -m torchtitan.train --module llama3 --config <flavor's config>` and
// the tyro overrides that release reads: --training.*, --parallelism.*, and the
// activation_checkpoint:<mode> subcommand last), plus the schedule CSV in a here-document
// where no torch class runs the schedule. 0.3.0 configures jobs with Python config
// registries; the model's shape cannot be overridden on the command line (model_spec is
// tyro.conf.Suppress), so the plan's model must be one of llama3's registered configs.
// Invariant: the stages torchtitan builds (module_fqns_per_model_part, placed by
// _get_pp_rank_to_stage_indices_mapping) are exactly the plan's, every degree is stated
// (a config's own defaults, e.g. llama3_70b's tensor_parallel_degree 8, never leak in), and
// whatever torchtitan would run differently is refused naming the plan field.
#include <sstream>

#include "core/error.h"
#include "interop/export.h"
#include "interop/torch_schedule.h"

namespace pipescope {

namespace {

// torchtitan 0.3.0's llama3 configs (torchtitan/models/llama3/config_registry.py, the
// flavors of __init__.py): ffn is compute_ffn_hidden_dim(dim, multiple_of,
// ffn_dim_multiplier) (8B: 1024, 1.3; 70B and 405B: 4096, 1.3 and 1.2). All untied, GQA
// with 8 KV heads, vocabulary 128256, RMSNorm eps 1e-5, rope theta 500000 with Llama
// 3.1's scaling, no biases, SwiGLU. (1B and 3B have flavors but no config function.)
struct TitanConfig {
  const char* config;  // --config
  const char* flavor;  // model_registry's key
  int layers, hidden, heads, kv_heads, ffn, vocabulary;
  const char* runs_otherwise = nullptr;  // why the config does not run a pipescope plan as planned
};
constexpr TitanConfig kTitanConfigs[] = {
    {"llama3_8b", "8B", 32, 4096, 32, 8, 14336, 128256},
    {"llama3_70b", "70B", 80, 8192, 64, 8, 28672, 128256},
    {"llama3_405b", "405B", 126, 16384, 128, 8, 53248, 128256,
     "torchtitan's llama3_405b converts every linear layer but lm_head to float8 (Float8LinearConverter, torchao) "
     "and compiles with async tensor parallelism, in its model config, which the command line cannot change; "
     "pipescope's plan is bf16 mixed precision"},
};

constexpr const char* kCsvFile = "pipescope_schedule.csv";

std::string str(int64_t v) { return std::to_string(v); }

[[noreturn]] void refuse_model(const std::string& field, const std::string& why) {
  throw InputError("", "job.model.shape." + field, why);
}

// The llama3 config whose model is the job's, or a refusal naming the first field that
// torchtitan's llama3 cannot say.
const TitanConfig& titan_config(const Job& job) {
  const TransformerShape& m = job.shape;
  if (m.experts > 0) {
    refuse_model("experts", str(m.experts) + " experts: torchtitan 0.3.0's llama3 module is dense, and its MoE modules "
                            "(deepseek_v3, qwen3, gpt_oss, kimi_k2_7) are not " + m.name + "'s architecture");
  }
  if (m.qkv_bias) {
    refuse_model("qkv_bias", "true (q, k and v carry biases, as Qwen2's do): torchtitan 0.3.0's llama3 attention has "
                             "no biases, and its qwen3 module is Qwen3's (q/k norms, no biases)");
  }
  if (m.bias_linear || m.output_bias || m.mlp_bias) {
    refuse_model(m.bias_linear ? "bias_linear" : m.output_bias ? "output_bias" : "mlp_bias",
                 "true: torchtitan 0.3.0's llama3 linear layers have no biases");
  }
  if (!m.swiglu) refuse_model("swiglu", "false: torchtitan's llama3 feed-forward is SwiGLU (w1, w2, w3)");
  if (!m.rms_norm) refuse_model("rms_norm", "false: torchtitan's llama3 normalises with RMSNorm");
  if (m.learned_positions) refuse_model("learned_positions", "true: torchtitan's llama3 uses rotary positions");
  if (m.tied_embeddings) {
    refuse_model("tied_embeddings", "true: torchtitan 0.3.0's llama3 configs (llama3_8b, llama3_70b, llama3_405b) "
                                    "keep lm_head apart from tok_embeddings");
  }
  const int vocabulary = job.vocab_size > 0 ? job.vocab_size : m.vocabulary;
  const int head_dim = m.kv_channels > 0 ? m.kv_channels : m.hidden / m.heads;
  for (const TitanConfig& c : kTitanConfigs) {
    if (c.hidden != m.hidden) continue;
    auto same = [&](const char* field, int64_t ours, int64_t theirs) {
      if (ours != theirs) {
        refuse_model(field, str(ours) + ", but torchtitan's " + c.config + " (the llama3 config of hidden size " +
                                str(c.hidden) + ") has " + str(theirs) + "; its model cannot be changed from the command line");
      }
    };
    same("layers", m.layers, c.layers);
    same("heads", m.heads, c.heads);
    same("kv_heads", m.kv_heads > 0 ? m.kv_heads : m.heads, c.kv_heads);
    same("kv_channels", head_dim, c.hidden / c.heads);
    same("ffn_hidden", m.ffn_hidden, c.ffn);
    same("vocabulary", vocabulary, c.vocabulary);
    if (c.runs_otherwise != nullptr) refuse_model("hidden", str(m.hidden) + " (llama3 flavor " + c.flavor + "): " + c.runs_otherwise);
    return c;
  }
  refuse_model("hidden", str(m.hidden) + ": torchtitan 0.3.0's llama3 configs are llama3_8b (hidden 4096), llama3_70b "
                                          "(8192) and llama3_405b (16384); its model cannot be changed from the command line");
}

// Per stage, the modules torchtitan's _split_module keeps: tok_embeddings, layers.<i>, norm
// and lm_head (Llama3Model's children).
std::vector<std::vector<std::string>> module_fqns(const PlanShape& s) {
  std::vector<std::vector<std::string>> out;
  int decoder = 0;
  for (const auto& [first, end] : s.ranges) {
    std::vector<std::string>& stage = out.emplace_back();
    for (int l = first; l < end; ++l) {
      if (s.roles[l] == 'E') stage.push_back("tok_embeddings");
      if (s.roles[l] == 't') stage.push_back("layers." + str(decoder++));
      if (s.roles[l] == 'L') {
        stage.push_back("norm");
        stage.push_back("lm_head");
      }
    }
  }
  return out;
}

struct DataParallel {
  int replicate = 1, shard = 1;
  const char* reshard = "default";  // fsdp_reshard_after_forward
};

// torchtitan 0.3.0 applies fully_shard to every llama3 (parallelize_llama) over the dense
// storage mesh, sharding over dp_shard x cp (full_dtensor.py resolve_fsdp_mesh) and
// replicating over dp_replicate: sharding none is dp_replicate = d with cp = 1 (cp ranks
// are always sharded over), zero-2 / zero-3 are dp_shard = d with reshard_after_forward
// never / always (export --to torch's fully_shard(reshard_after_forward=False / True)).
DataParallel data_parallel(const ParallelLayout& l) {
  switch (l.sharding) {
    case Sharding::None:  // cp = 1: torch's offer refuses none with cp > 1 (llm/framework.cpp runtime_refusal)
      return {l.d, 1, "default"};
    case Sharding::DistributedOptimizer:
      refuse_layout("sharding", "distributed-optimizer (ZeRO-1): torchtitan shards with FSDP2 only (gradients and "
                                "optimizer state together); say none, zero-2 or zero-3");
    case Sharding::Zero2: return {1, l.d, "never"};
    case Sharding::Zero3: return {1, l.d, "always"};
  }
  refuse_layout("sharding", "unknown");
}

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

}  // namespace

ExportResult export_torchtitan(const PlanShape& s, const std::string& plan_name, bool csv) {
  if (!s.job || !s.layout) {
    throw InputError("", "job", "torchtitan's --config names the model: export a version 3 plan (`pipescope plan "
                                "--hf-config config.json --gpu NAME --framework torch -o plan.json`)");
  }
  const Job& job = *s.job;
  const ParallelLayout& l = *s.layout;
  if (job.framework != Framework::Torch) {
    throw InputError("", "job.framework", "\"" + to_string(job.framework) + "\": torchtitan runs torch's pipelining and "
                                          "FSDP2, so its plans are searched with --framework torch (pipescope's "
                                          "prediction depends on the framework)");
  }
  const TitanConfig& config = titan_config(job);
  if (l.order != "tp-cp-ep-dp-pp") {
    refuse_layout("order", "\"" + l.order + "\": torchtitan's ParallelDims lays the world out as (pp, dp_replicate, "
                           "dp_shard, cp, tp), tp fastest: order tp-cp-ep-dp-pp");
  }
  if (l.ep > 1) refuse_layout("ep", str(l.ep) + ": torchtitan's llama3 is dense");
  if (l.fp8 != Fp8Recipe::None) {
    // torchtitan's float8 / MX converters live in its model's Python config (llama3_8b_float8 and
    // the like), not on this command line
    refuse_layout("fp8", to_string(l.fp8) + ": torchtitan sets its float8 converter in the model's config, which this "
                         "command line cannot change; plan with --fp8-recipe none, or start from torchtitan's own float8 "
                         "config");
  }
  const int sp_divisor = (l.t > 1 && l.sequence_parallel ? l.t : 1) * (l.cp > 1 ? 2 * l.cp : 1);
  if (job.shape.sequence % sp_divisor != 0) {
    refuse_layout(l.cp > 1 ? "cp" : "t", "torchtitan's Trainer needs training.seq_len " + str(job.shape.sequence) +
                                             " divisible by " + str(sp_divisor) + " (t under sequence parallelism x 2 cp)");
  }
  const DataParallel dp = data_parallel(l);
  const int world = s.world_size();
  const int per_node = job.cluster.gpus_per_node > 0 ? job.cluster.gpus_per_node : s.gpus_per_node;
  if (world > per_node && world % per_node != 0) {
    throw InputError("", "job.cluster.gpus_per_node", str(world) + " GPUs are not whole nodes of " + str(per_node) +
                                                          ", which torchrun's --nproc_per_node needs");
  }
  const int nproc = std::min(world, per_node), nnodes = world / nproc;

  // The schedule: a class by get_schedule_class's name, or the plan's op order as a CSV that
  // _PipelineScheduleRuntime loads (compute_only), its stages placed in a loop (what
  // PipelineScheduleMulti's name makes torchtitan place).
  std::string schedule_name;
  const TorchSchedule* row = s.schedule ? torch_schedule(*s.schedule) : nullptr;
  if (s.positions > 1) {
    if (s.schedule && is_asynchronous(*s.schedule)) {
      refuse_layout("schedule", s.schedule_name + " updates weights without a flush; torchtitan's schedules flush");
    }
    if (csv) row = nullptr;
    if (row != nullptr) {
      check_torch_class(*row, s);
      if (row->single_stage && s.chunks > 1) {
        refuse_layout("v", str(s.chunks) + ": " + row->torch_class + " runs one stage per rank");
      }
      schedule_name = row->short_name;
    } else {
      for (int st = 0; st < s.stages(); ++st) {
        if (s.stage_position[st] != st % s.positions) {
          throw InputError("", "stages[" + str(st) + "].devices",
                           "schedule " + s.schedule_name + (csv ? " as a CSV (--torch-csv)" : " has no torch class; its CSV") +
                           " runs under torchtitan's looped stage placement (stage s on rank s % p = " + str(st % s.positions) +
                           "), the plan places it on rank " + str(s.stage_position[st]));
        }
      }
      schedule_name = "PipelineScheduleMulti";
    }
  }

  // torchtitan's batch: local_batch_size per data-parallel rank (dp_replicate x dp_shard),
  // split into micro-batches of pipeline_parallel_microbatch_size under a pipeline; without
  // one, the step's M micro-batches are gradient-accumulation steps
  // (global / (local x dp)).
  const int64_t local_batch = s.positions > 1 ? s.microbatch_size * s.microbatches : s.microbatch_size;
  const std::vector<std::vector<std::string>> fqns = module_fqns(s);
  std::vector<std::pair<std::string, std::string>> args = {
      {"--module", "llama3"},
      {"--config", config.config},
      {"--training.seq_len", str(job.shape.sequence)},
      {"--training.local_batch_size", str(local_batch)},
      {"--training.global_batch_size", str(s.global_batch)},
      {"--training.mixed_precision_param", l.precision == PrecisionRecipe::Fp32 ? "float32" : "bfloat16"},
      {"--parallelism.data_parallel_replicate_degree", str(dp.replicate)},
      {"--parallelism.data_parallel_shard_degree", str(dp.shard)},
      {"--parallelism.fsdp_reshard_after_forward", dp.reshard},
      {"--parallelism.tensor_parallel_degree", str(l.t)},
      {l.t > 1 && l.sequence_parallel ? "--parallelism.enable_sequence_parallel"
                                      : "--parallelism.no_enable_sequence_parallel", ""},
      {"--parallelism.context_parallel_degree", str(l.cp)},
      {"--parallelism.pipeline_parallel_degree", str(s.positions)},
  };
  if (s.positions > 1) {
    // A list of lists takes every word up to the next flag (tyro nargs "*"): followed by a
    // flag, never by the activation_checkpoint subcommand, which it would swallow as a stage.
    args.emplace_back("--parallelism.module_fqns_per_model_part", "");
    args.emplace_back("--parallelism.pipeline_parallel_schedule", schedule_name);
    if (row == nullptr) args.emplace_back("--parallelism.pipeline_parallel_schedule_csv", kCsvFile);
    args.emplace_back("--parallelism.pipeline_parallel_microbatch_size", str(s.microbatch_size));
    args.emplace_back("--training.disable_cuda_graphs", "");  // Trainer.Config refuses CUDA graphs with a pipeline
  }
  // torchtitan's modes (torchtitan/distributed/activation_checkpoint.py): FullAC, and SelectiveAC,
  // the per-op policy llm/ times as SelectivePolicy::EveryOtherMatmul.
  // The kernels the plan was timed with: compiled elementwise ops (torchtitan's CompileConfig,
  // --compile.enable) and async TP (--compile.enable_async_tensor_parallel, which needs compile).
  if (l.fused_elementwise) args.emplace_back("--compile.enable", "");
  if (l.tp_comm_overlap) args.emplace_back("--compile.enable_async_tensor_parallel", "");
  const std::string ac = l.recompute == Recompute::Full ? "full" : l.recompute == Recompute::Selective ? "selective" : "none";
  args.emplace_back("activation_checkpoint:" + ac, "");

  std::ostringstream text;
  text << "#!/usr/bin/env bash\n"
       << "# pipescope export --to torchtitan (" << kTorchtitanVersion << ", PyTorch 2.13): " << plan_name << "\n"
       << predicted_lines(s, "# ")
       << "# " << world << " GPUs = pipeline " << l.p << " x dp_replicate " << dp.replicate << " x dp_shard " << dp.shard
       << " x context " << l.cp << " x tensor " << l.t << " (torchtitan's ParallelDims: tp fastest, pp outermost); "
       << nnodes << (nnodes == 1 ? " node" : " nodes") << " of " << nproc << ": run this on each with NODE_RANK and MASTER_ADDR set\n"
       << "# model " << job.shape.name << " = torchtitan's llama3 flavor " << config.flavor << " (--config " << config.config
       << ": its numerics, rope theta 500000 with Llama 3.1's scaling, RMSNorm eps 1e-5; its tokenizer at the config's "
          "hf_assets_path)\n";
  if (s.positions > 1) {
    text << "# schedule " << s.schedule_name << " -> " << (row ? row->torch_class : "_PipelineScheduleRuntime + " + std::string(kCsvFile))
         << "; " << s.microbatches << " micro-batches of " << s.microbatch_size << " per step per data-parallel rank; "
         << s.stages() << " stages, " << s.chunks << " per pipeline rank, decoder layers per stage:";
    for (int n : s.decoder_layers) text << " " << n;
    text << "\n";
  }
  text << "# activation checkpointing " << ac << "; sharding " << to_string(l.sharding) << " (FSDP2 over dp_shard x cp, "
       << "reshard_after_forward " << dp.reshard << "); precision " << to_string(l.precision) << "\n"
       << "set -euo pipefail\n";
  if (row == nullptr && s.positions > 1) {
    text << "# pipescope's op order, one row per pipeline rank (_PipelineScheduleRuntime._load_csv, compute_only)\n"
         << "cat > " << kCsvFile << " <<'CSV'\n";
    for (const std::vector<std::string>& r : s.torch_csv) text << join(r, ",") << "\n";
    text << "CSV\n";
  }
  text << "torchrun --nnodes " << nnodes << " --nproc_per_node " << nproc
       << " --node_rank \"${NODE_RANK:-0}\" --master_addr \"${MASTER_ADDR:-localhost}\" --master_port \"${MASTER_PORT:-29500}\" \\\n"
       << "  -m torchtitan.train";
  Json argv = Json::array();
  for (const auto& [flag, value] : args) {
    text << " \\\n  " << flag;
    argv.push_back(flag);
    if (flag == "--parallelism.module_fqns_per_model_part") {  // one word per stage
      for (const std::vector<std::string>& stage : fqns) {
        text << " " << join(stage, ",");
        argv.push_back(join(stage, ","));
      }
    } else if (!value.empty()) {
      text << " " << value;
      argv.push_back(value);
    }
  }
  text << "\n";

  Json json = {{"target", "torchtitan"},
               {"target_version", kTorchtitanVersion},
               {"module", "llama3"},
               {"config", config.config},
               {"flavor", config.flavor},
               {"nnodes", nnodes},
               {"nproc_per_node", nproc},
               {"args", argv},
               {"module_fqns_per_model_part", fqns},
               {"stage_ranks", s.stage_position},
               {"pipeline_parallel_degree", s.positions},
               {"pipeline_parallel_microbatch_size", s.microbatch_size},
               {"local_batch_size", local_batch},
               {"global_batch_size", s.global_batch},
               {"data_parallel_replicate_degree", dp.replicate},
               {"data_parallel_shard_degree", dp.shard},
               {"tensor_parallel_degree", l.t},
               {"context_parallel_degree", l.cp},
               {"activation_checkpoint", ac}};
  if (s.positions > 1) json["pipeline_parallel_schedule"] = schedule_name;
  if (row == nullptr && s.positions > 1) json["schedule_csv"] = s.torch_csv;
  json["predicted"] = predicted_json(s);
  return {text.str(), json};
}

}  // namespace pipescope
