// Builds the analytic profile of interop/hf_profile.h from llm/'s cost model: one
// LayerTime and one set of stash bytes per (layer kind, batch size), at the layout
// hf_profile_layout gives (Megatron-LM's tensor parallelism with sequence parallelism).
#include "interop/hf_profile.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "llm/layer_time.h"
#include "llm/memory.h"
#include "llm/profile_layers.h"
#include "llm/step_time.h"

namespace pipescope {

namespace {

void check_divides(int t, int64_t n, const std::string& what) {
  if (n % t != 0) {
    throw InputError("--tensor-parallel " + std::to_string(t) + " does not divide " + what + " (" + std::to_string(n) + ")");
  }
}

// "8x NVIDIA H100 SXM5 80GB (...)" -> "NVIDIA H100 SXM5 80GB (...)": one GPU of the node.
std::string gpu_model_name(const Hardware& node) {
  const std::size_t x = node.name.find("x ");
  const bool counted = x != std::string::npos && x > 0 && node.name.find_first_not_of("0123456789") == x;
  return counted ? node.name.substr(x + 2) : node.name;
}

double ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

// Parameters (bf16 / fp16: 2 bytes each) and the optimizer step over them.
void set_parameters(LayerProfile& l, int64_t parameters, const GpuModel& gpu) {
  l.parameter_bytes = parameters * 2;
  l.optimizer_ms = ms(optimizer_step_ns(gpu, parameters));
}

// The decoder spec (llm/profile_layers.h: the shape, read back for memory as Megatron
// keeps it) with what an HF profile adds: the family, t and one sample's forward FLOPs.
Json decoder_spec(const TransformerShape& shape, const Json& common, double forward_flops) {
  Json spec = decoder_layer_spec(shape, "hf_decoder_layer");
  for (const auto& [key, value] : common.items()) spec[key] = value;
  spec["forward_flops_per_sample"] = forward_flops;
  return spec;
}

}  // namespace

ParallelLayout hf_profile_layout(const HfProfileOptions& o, int micro_batch) {
  ParallelLayout l;
  l.t = o.tensor_parallel;
  l.sequence_parallel = o.tensor_parallel > 1;
  l.recompute = o.recompute;
  l.micro_batch = micro_batch;
  l.attention = o.attention;
  return l;
}

Profile make_hf_profile(const HfModel& m, const GpuModel& file_gpu, const HfProfileOptions& o) {
  const int t = o.tensor_parallel;
  if (t < 1 || t > file_gpu.node.devices) {
    throw InputError("--tensor-parallel: expected 1 to " + std::to_string(file_gpu.node.devices) + " (GPUs per node), got " +
                     std::to_string(t));
  }
  TransformerShape shape = m.shape;
  check_divides(t, shape.heads, "num_attention_heads");
  check_divides(t, shape.kv_heads, "num_key_value_heads");
  check_divides(t, shape.ffn_hidden, "intermediate_size");
  check_divides(t, shape.vocabulary, "vocab_size");
  if (o.sequence < 1 || o.sequence > (int64_t{1} << 22)) throw InputError("--seq: expected 1 to 4194304");
  if (o.recompute == Recompute::Full) {
    throw InputError("hf profile: recompute full re-runs whole stages, which a plan says (simulate --recompute); "
                     "the profile's layers keep selective or none");
  }
  shape.sequence = static_cast<int>(o.sequence);
  if (dtype_bytes(o.dtype) != 2) {
    throw InputError("--dtype: expected bf16 or fp16 with --hf-config (the cost model counts 2-byte activations and "
                     "GEMM operands, as Korthikanti et al.'s Table 2 does), got \"" + to_string(o.dtype) + "\"");
  }
  const GpuModel gpu = gpu_at_dtype(file_gpu, to_string(o.dtype));
  // The cost model counts FLOPs in int64: a sample's largest GEMMs (attention scores, the
  // linears, the logits) must fit with room to spare.
  const double head_dim = shape.kv_channels > 0 ? shape.kv_channels : shape.hidden / shape.heads;
  const double width = head_dim * (shape.heads + 2.0 * shape.kv_heads), s_len = static_cast<double>(o.sequence);
  const double per_token = 2.0 * (2 * s_len * head_dim * shape.heads + static_cast<double>(shape.hidden) *
                                  (width + head_dim * shape.heads + 3.0 * shape.ffn_hidden * std::max(1, shape.moe_topk) +
                                   shape.vocabulary + shape.experts));
  for (double b : o.batch_sizes) {
    if (!(b >= 1 && b <= 65536 && b == std::floor(b))) {
      throw InputError("--batch-sizes: expected whole samples (1 to 65536) with --hf-config, got " + std::to_string(b));
    }
    if (b * s_len * per_token > 0x1p60) {
      throw InputError("--seq: " + std::to_string(o.sequence) + " tokens of this model at batch size " +
                       std::to_string(static_cast<int64_t>(b)) + " make a layer's FLOPs overflow a 64-bit count");
    }
  }
  const Json common = {{"family", m.family}, {"hidden", shape.hidden}, {"sequence", o.sequence}, {"tensor_parallel", t}};
  LayerProfile emb, head;
  emb.name = "model.embed_tokens", head.name = "lm_head";
  std::vector<LayerProfile> layers(static_cast<std::size_t>(shape.layers));
  for (int b_index = 0; b_index < static_cast<int>(o.batch_sizes.size()); ++b_index) {
    const ParallelLayout l = hf_profile_layout(o, static_cast<int>(o.batch_sizes[static_cast<std::size_t>(b_index)]));
    const double hidden_bytes = static_cast<double>(l.micro_batch) * shape.sequence * shape.hidden * 2 / t;  // one rank's shard
    append_costs(emb, embedding_time(shape, l, gpu), {embedding_activation_bytes(shape, l), embedding_weight_grad_bytes(shape, l)},
           hidden_bytes);
    const StashBytes stash{layer_activation_bytes(shape, l), layer_weight_grad_bytes(shape, l)};
    const LayerTime dense = transformer_layer_time(shape, l, gpu, false);
    const LayerTime moe = shape.experts > 0 ? transformer_layer_time(shape, l, gpu, true) : dense;
    for (int i = 0; i < shape.layers; ++i) append_costs(layers[static_cast<std::size_t>(i)], is_moe_layer(shape, i) ? moe : dense, stash, hidden_bytes);
    append_costs(head, head_time(shape, l, gpu), {head_activation_bytes(shape, l), head_weight_grad_bytes(shape, l)}, 4);  // the loss
  }
  // Parameters per GPU of the group; the head counts its own V h even when tied (the last
  // stage keeps a copy of the embedding, as Megatron-LM's does).
  set_parameters(emb, std::llround(embedding_parameters(shape).per_gpu(t, 1)), gpu);
  set_parameters(head, std::llround(head_parameters(shape, true).per_gpu(t, 1)), gpu);
  emb.spec = common;
  emb.spec["type"] = "hf_embedding";
  emb.spec["vocabulary"] = shape.vocabulary;
  head.spec = common;
  head.spec["type"] = "hf_lm_head";
  head.spec["vocabulary"] = shape.vocabulary;
  head.spec["tied"] = shape.tied_embeddings;
  const ParallelLayout whole = hf_profile_layout({}, 1);  // t = 1: one sample's FLOPs of the whole layer
  Profile p;
  p.model = shape.name + (t > 1 ? " tp" + std::to_string(t) : "");
  p.device_name = gpu_model_name(gpu.node) + (t > 1 ? " (tensor-parallel group of " + std::to_string(t) + ")" : "");
  p.device_memory_bytes = gpu.node.memory_bytes;
  p.backend = "analytic";
  p.dtype = to_string(o.dtype);
  p.batch_sizes = o.batch_sizes;
  p.layers.push_back(emb);
  for (int i = 0; i < shape.layers; ++i) {
    LayerProfile& l = layers[static_cast<std::size_t>(i)];
    const bool moe = is_moe_layer(shape, i);
    l.name = "model.layers." + std::to_string(i);
    set_parameters(l, std::llround(layer_parameters(shape, moe).per_gpu(t, 1)), gpu);
    l.spec = decoder_spec(shape, common, transformer_layer_flops(shape, whole, moe).forward);
    p.layers.push_back(std::move(l));
  }
  p.layers.push_back(head);
  return p;
}

Hardware tensor_parallel_hardware(const GpuModel& gpu, int gpus, int t) {
  if (t < 1 || gpus < t || gpus % t != 0) {
    throw InputError("--gpus: expected a multiple of --tensor-parallel " + std::to_string(t) + ", got " + std::to_string(gpus));
  }
  const int per_node = gpu.gpus_per_node();
  if (per_node % t != 0) throw InputError("--tensor-parallel " + std::to_string(t) + " does not divide the " + std::to_string(per_node) + " GPUs of a node");
  Hardware hw = gpu.node;
  hw.devices = gpus / t;
  hw.speed.clear();
  hw.devices_per_node = per_node / t;
  if (gpu.node.devices_per_node == 0) hw.inter_node = hw.link;  // one-node file: no network known
  hw.name = std::to_string(gpus) + "x " + gpu_model_name(gpu.node) +
            (t > 1 ? " as " + std::to_string(hw.devices) + " tensor-parallel groups of " + std::to_string(t) : "");
  return hw;
}

std::optional<HfProfileJob> hf_profile_job(const Profile& profile, std::string* why) {
  // Not a profile of `profile synth --hf-config`: no reason, it is simply another profile.
  const auto type = [](const Json& spec) {
    return spec.is_object() && spec.contains("type") && spec["type"].is_string() ? spec["type"].get<std::string>() : "";
  };
  if (profile.backend != "analytic" || profile.layers.size() < 3) return std::nullopt;
  const Json& first = profile.layers.front().spec;
  const Json& block = profile.layers[1].spec;
  if (type(first) != "hf_embedding" || type(block) != "hf_decoder_layer" || !block.contains("family") ||
      !block["family"].is_string() || !block.contains("tensor_parallel") ||
      !block["tensor_parallel"].is_number_integer() || !first.contains("vocabulary") ||
      !first["vocabulary"].is_number_integer()) {
    return std::nullopt;
  }
  const std::optional<Dtype> dtype = dtype_from_name(profile.dtype);
  std::optional<TransformerShape> shape = transformer_shape_of(profile, 1);
  if (!shape || !dtype) return std::nullopt;
  HfProfileJob job;
  job.model.family = block["family"].get<std::string>();
  job.model.shape = *shape;
  job.model.shape.vocabulary = first["vocabulary"].get<int>();  // as the config has it: padding is the layout's
  job.model.shape.sequence = 0;
  job.options.tensor_parallel = block["tensor_parallel"].get<int>();
  const std::string suffix = " tp" + std::to_string(job.options.tensor_parallel);
  std::string& name = job.model.shape.name;
  if (job.options.tensor_parallel > 1 && name.size() > suffix.size() &&
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
    name.resize(name.size() - suffix.size());
  }
  job.options.sequence = shape->sequence;
  job.options.dtype = *dtype;
  job.options.batch_sizes = profile.batch_sizes;
  // The GPU file and recompute it was written with: the first that gives these very numbers.
  const Json want = profile_to_json(profile);
  std::set<std::string> seen;  // a name in $PIPESCOPE_GPU_DIR hides the bundled file of that name
  for (const std::string& dir : gpu_file_dirs()) {
    std::error_code ec;
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      if (entry.path().extension() == ".json") files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const std::filesystem::path& file : files) {
      if (!seen.insert(file.stem().string()).second) continue;
      try {
        const GpuModel gpu = load_gpu_model(file.string());
        if (gpu.node.memory_bytes != profile.device_memory_bytes) continue;
        for (Recompute recompute : {Recompute::Selective, Recompute::None}) {
          job.options.recompute = recompute;
          if (profile_to_json(make_hf_profile(job.model, gpu, job.options)) == want) {
            job.gpu = file.stem().string();
            job.gpu_model = gpu;
            return job;
          }
        }
      } catch (const InputError&) {
        // a GPU file that cannot write this profile (its dtype, its node) is not its GPU
      }
    }
  }
  if (why) {
    *why = profile.source + ": its costs are not those `profile synth --hf-config` writes for " +
              job.model.shape.name + " on any GPU file (" + profile.device_name +
           "): a measured or edited profile";
  }
  return std::nullopt;
}

}  // namespace pipescope
