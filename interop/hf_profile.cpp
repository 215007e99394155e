// Builds the analytic profile of interop/hf_profile.h. Tensor parallelism (Megatron-LM's
// scheme with sequence parallelism): GEMMs, attention and every kept tensor split t
// ways; each decoder layer adds two all-reduce volumes forward (after attention and
// after the MLP, as reduce-scatter + all-gather) and two backward, each of
// 2 (t-1)/t x (s b h x dtype) bytes over the GPU's collective bandwidth. The head
// is vocabulary-parallel (its logits split t ways); the embedding all-reduces once.
#include "interop/hf_profile.h"

#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "core/op_rules.h"
#include "interop/synth_profile.h"

namespace pipescope {

GpuSpec gpu_spec_from_json(const JsonReader& r) {
  GpuSpec g;
  g.node = hardware_from_json(r);
  if (!r.has("gpu")) r.fail("missing field \"gpu\" (peak_dense_tflops, hbm_gb_per_s): not a GPU hardware file");
  JsonReader gpu = r["gpu"];
  JsonReader peaks = gpu["peak_dense_tflops"];
  if (!peaks.json().is_object() || peaks.json().empty()) peaks.fail("expected an object of dtype -> TFLOP/s");
  for (const auto& [dtype, value] : peaks.json().items()) g.peak_tflops[dtype] = peaks[dtype].as_double(1e-3, 1e7);
  g.hbm_gb_per_s = gpu["hbm_gb_per_s"].as_double(1e-3, 1e9);
  g.collective_gb_per_s = gpu.has("collective_gb_per_s") ? gpu["collective_gb_per_s"].as_double(1e-3, 1e9)
                                                          : g.node.link.bandwidth_gb_per_s;
  return g;
}

GpuSpec load_gpu_spec(const std::string& path) { return gpu_spec_from_json(JsonReader::from_file(path)); }

std::string find_gpu_file(const std::string& name_or_path, const std::vector<std::string>& dirs) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_regular_file(name_or_path, ec)) return name_or_path;
  std::string tried;
  for (const std::string& dir : dirs) {
    if (dir.empty()) continue;
    fs::path candidate = fs::path(dir) / (name_or_path + ".json");
    if (fs::is_regular_file(candidate, ec)) return candidate.string();
    tried += (tried.empty() ? "" : ", ") + dir;
  }
  throw InputError("--gpu: \"" + name_or_path + "\" is neither a file nor a GPU file in " +
                   (tried.empty() ? std::string("(no GPU folder known)") : tried) +
                   " (names: h100-sxm, h200, a100-80gb, b200, mi300x)");
}

namespace {

void check_divides(int t, int64_t n, const std::string& what) {
  if (n % t != 0) {
    throw InputError("--tensor-parallel " + std::to_string(t) + " does not divide " + what + " (" + std::to_string(n) + ")");
  }
}

// Time of one ring all-reduce of `bytes` over t GPUs (core/op_rules.h), in ms.
double allreduce_ms(double bytes, int t, double gb_per_s, double latency_us) {
  if (t <= 1) return 0.0;
  return ring_allreduce_bytes(bytes, t) / (gb_per_s * 1e6) + ring_allreduce_hops(t) * latency_us / 1e3;
}

// "8x NVIDIA H100 SXM5 80GB (...)" -> "NVIDIA H100 SXM5 80GB (...)": one GPU of the node.
std::string gpu_model_name(const Hardware& node) {
  const std::size_t x = node.name.find("x ");
  const bool counted = x != std::string::npos && x > 0 && node.name.find_first_not_of("0123456789") == x;
  return counted ? node.name.substr(x + 2) : node.name;
}

// What every layer builder needs: the model, the options, and the achieved rates.
struct LayerContext {
  const HfModel& m;
  const HfProfileOptions& o;
  const GpuSpec& gpu;
  int t;                  // tensor-parallel size
  int d;                  // dtype bytes
  double flops_per_ms;    // achieved
  double hbm_bytes_per_ms;
  ParameterCount params;
  Json common;            // spec fields every layer carries

  double s() const { return static_cast<double>(o.sequence); }
  double h() const { return static_cast<double>(m.hidden); }
  double compute_ms(double flops) const { return flops / t / flops_per_ms; }
  // One all-reduce of a micro-batch's hidden state among the t ranks.
  double hidden_allreduce_ms(double b) const {
    return allreduce_ms(b * s() * h() * d, t, gpu.collective_gb_per_s, gpu.node.link.latency_us);
  }
  double hidden_bytes(double b) const { return b * s() * h() * d / t; }  // one rank's shard
};

LayerProfile embedding_layer(const LayerContext& c) {
  LayerProfile emb;
  emb.name = "model.embed_tokens";
  emb.parameter_bytes = c.params.embedding / c.t * c.d;
  for (double b : c.o.batch_sizes) {
    const double lookup = 2.0 * c.hidden_bytes(b) / c.hbm_bytes_per_ms;  // read rows, write the hidden state
    emb.forward_ms.push_back(lookup + c.hidden_allreduce_ms(b));
    emb.backward_input_ms.push_back(0.0);
    emb.backward_weight_ms.push_back(2 * lookup);  // scatter-add into the table
    emb.backward_ms.push_back(2 * lookup);
    emb.activation_bytes.push_back(8.0 * b * c.s());  // token ids (int64)
    emb.weight_grad_bytes.push_back(8.0 * b * c.s());  // W scatters by them
    emb.output_bytes.push_back(c.hidden_bytes(b));
  }
  emb.spec = c.common;
  emb.spec["type"] = "hf_embedding";
  emb.spec["vocabulary"] = c.m.vocabulary;
  return emb;
}

LayerProfile decoder_layer(const LayerContext& c, int64_t index, const LayerFlops& f) {
  LayerProfile blk;
  blk.name = "model.layers." + std::to_string(index);
  blk.parameter_bytes = ((c.params.attention + c.params.mlp) / c.t + c.params.norms) * c.d;
  for (double b : c.o.batch_sizes) {
    const double comm = 2 * c.hidden_allreduce_ms(b);  // after attention and after the MLP
    blk.forward_ms.push_back(c.compute_ms(b * f.forward()) + comm);
    blk.backward_input_ms.push_back(c.compute_ms(b * f.backward_input()) + comm);
    blk.backward_weight_ms.push_back(c.compute_ms(b * f.backward_weight()));
    blk.backward_ms.push_back(blk.backward_input_ms.back() + blk.backward_weight_ms.back());
    blk.activation_bytes.push_back(b * decoder_layer_activation_bytes(c.m, c.o.sequence, c.d, c.o.selective_recompute, c.t));
    blk.weight_grad_bytes.push_back(b * decoder_layer_weight_grad_bytes(c.m, c.o.sequence, c.d, c.t));
    blk.output_bytes.push_back(c.hidden_bytes(b));
  }
  blk.spec = c.common;
  blk.spec["type"] = "hf_decoder_layer";
  blk.spec["forward_flops_per_sample"] = f.forward();
  // The shape in Megatron-LM's words, for memory as Megatron keeps it (interop/llm_shape.h).
  blk.spec["heads"] = c.m.heads;
  blk.spec["kv_heads"] = c.m.kv_heads;
  blk.spec["head_dim"] = c.m.head_dim;
  blk.spec["ffn_hidden"] = c.m.ffn;
  blk.spec["qkv_bias"] = c.m.qkv_bias;
  blk.spec["bias_linear"] = c.m.output_bias && c.m.mlp_bias;
  if (c.m.moe()) {
    blk.spec["experts"] = c.m.experts;
    blk.spec["moe_topk"] = c.m.top_k;
  }
  return blk;
}

LayerProfile head_layer(const LayerContext& c) {
  LayerProfile head;
  head.name = "lm_head";
  // The final norm, and the head's own V x h matrix unless tied. Under tying the last
  // stage still holds a copy of the embedding (Megatron-LM's shared embedding), so the
  // head's bytes count V h either way.
  head.parameter_bytes = (c.params.final_norm + c.m.vocabulary * c.m.hidden / c.t) * c.d;
  const double flops = head_flops(c.m, c.o.sequence);
  const double V = static_cast<double>(c.m.vocabulary);
  for (double b : c.o.batch_sizes) {
    head.forward_ms.push_back(c.compute_ms(b * flops) + c.hidden_allreduce_ms(b));
    head.backward_input_ms.push_back(c.compute_ms(b * flops) + c.hidden_allreduce_ms(b));
    head.backward_weight_ms.push_back(c.compute_ms(b * flops));
    head.backward_ms.push_back(head.backward_input_ms.back() + head.backward_weight_ms.back());
    // Final-norm input and head input (h each), and the fp32 logits kept for the loss.
    head.activation_bytes.push_back(2 * c.hidden_bytes(b) + b * c.s() * 4 * V / c.t);
    head.weight_grad_bytes.push_back(2 * c.hidden_bytes(b));  // the norm's and the head's inputs, not the logits
    head.output_bytes.push_back(4);  // the loss
  }
  head.spec = c.common;
  head.spec["type"] = "hf_lm_head";
  head.spec["vocabulary"] = c.m.vocabulary;
  head.spec["tied"] = c.m.tied;
  return head;
}

}  // namespace

Profile make_hf_profile(const HfModel& m, const GpuSpec& gpu, const HfProfileOptions& o) {
  const int t = o.tensor_parallel;
  if (t < 1 || t > gpu.node.devices) {
    throw InputError("--tensor-parallel: expected 1 to " + std::to_string(gpu.node.devices) + " (GPUs per node), got " + std::to_string(t));
  }
  check_divides(t, m.heads, "num_attention_heads");
  check_divides(t, m.kv_heads, "num_key_value_heads");
  check_divides(t, m.ffn, "intermediate_size");
  if (!(o.efficiency > 0 && o.efficiency <= 1)) throw InputError("--efficiency: expected a value in (0, 1]");
  if (o.sequence < 1 || o.sequence > (int64_t{1} << 22)) throw InputError("--seq: expected 1 to 4194304");
  auto peak = gpu.peak_tflops.find(to_string(o.dtype));
  const int d = dtype_bytes(o.dtype);
  if (peak == gpu.peak_tflops.end()) {
    throw InputError(gpu.node.source + ": gpu.peak_dense_tflops: no entry for \"" + to_string(o.dtype) + "\"");
  }
  const LayerContext c{m, o, gpu, t, d, peak->second * 1e12 * o.efficiency / 1e3, gpu.hbm_gb_per_s * 1e6 * o.efficiency,
                       count_parameters(m),
                       {{"family", m.family}, {"hidden", m.hidden}, {"sequence", o.sequence}, {"tensor_parallel", t}}};
  Profile p;
  p.model = m.name + (t > 1 ? " tp" + std::to_string(t) : "");
  p.device_name = gpu_model_name(gpu.node) + (t > 1 ? " (tensor-parallel group of " + std::to_string(t) + ")" : "");
  p.device_memory_bytes = gpu.node.memory_bytes;
  p.backend = "analytic";
  p.dtype = to_string(o.dtype);
  p.batch_sizes = o.batch_sizes;
  p.layers.push_back(embedding_layer(c));
  const LayerFlops f = decoder_layer_flops(m, o.sequence);
  for (int64_t l = 0; l < m.layers; ++l) p.layers.push_back(decoder_layer(c, l, f));
  p.layers.push_back(head_layer(c));
  // One Adam step over each layer's (per-rank) parameters at the GPU's HBM bandwidth.
  for (LayerProfile& l : p.layers) l.optimizer_ms = adam_step_ms(l.parameter_bytes, gpu.hbm_gb_per_s);
  return p;
}

Hardware tensor_parallel_hardware(const GpuSpec& gpu, int gpus, int t) {
  if (t < 1 || gpus < t || gpus % t != 0) {
    throw InputError("--gpus: expected a multiple of --tensor-parallel " + std::to_string(t) + ", got " + std::to_string(gpus));
  }
  const int per_node = gpu.node.devices_per_node > 0 ? gpu.node.devices_per_node : gpu.node.devices;
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

}  // namespace pipescope
