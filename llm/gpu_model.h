// One GPU's speed as the LLM-scale time model sees it: a GEMM's time from its shape, a
// memory-bound op's from the bytes it moves, and the node's links. Invariant: a GEMM of
// (m, n, k) takes max(2 m n k / (peak x efficiency(m, n, k)), bytes / (HBM x
// memory_efficiency)), efficiency = max_efficiency x waves(m, n) x k / (k + k_half):
//   waves(m, n) = tiles / (ceil(tiles / sms) x sms),  tiles = ceil(m / tile_m) ceil(n / tile_n)
// (wave quantization: the last wave of output tiles leaves SMs idle), and the k term
// (short inner dimensions, the attention scores' head dim, do not fill the pipeline).
// A GPU file without "gpu.gemm" gets a flat 0.45 of peak for GEMMs and of HBM bandwidth
// for memory-bound ops, and no wave term. This is the one reader of profiles/gpus/*.json:
// llm-time, llm-plan, `profile synth` and the GUI all read a GPU file here.
//   GpuModel g = load_gpu_model(find_gpu_file("a100-80gb", {data_dir("profiles/gpus")}));
//   int64_t ns = gemm_ns(g, {8192, 2304, 6144});
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/hardware.h"
#include "core/json_reader.h"
#include "llm/layout.h"

namespace pipescope {

struct GemmCurve {
  int sms = 0;                 // streaming multiprocessors (compute units); 0: no wave term
  int tile_m = 128;            // output tile of the GEMM kernels the library picks
  int tile_n = 128;
  double max_efficiency = 0.45;  // achieved / peak on a large, wave-aligned GEMM
  double k_half = 0;           // the k at which the k term halves the efficiency (0: none)
};

// The fused attention kernel's speed (FlashAttention-2/3, cuDNN): achieved / the bf16 dense
// peak for the attention FLOPs it really runs (the causal half; the backward's five GEMMs,
// 2.5 x the forward's, recomputed scores included), rising with the keys per query block:
//   e(s_kv) = efficiency x s_kv / (s_kv + seq_half)
// (a short sequence leaves each thread block few key tiles to stream over its queries).
// Fitted per GPU at head dimension 128 (every fitted row's), bf16.
struct AttentionCurve {
  double forward_efficiency = 0;
  double backward_efficiency = 0;
  double seq_half = 0;
};

struct GpuModel {
  Hardware node;                     // devices per node, NVLink, the per-GPU network port
  std::map<std::string, double> peak_dense_tflops;  // per dtype, as the file states ("bf16" required)
  double peak_tflops = 0;            // the dense peak GEMMs run at: bf16's, or gpu_at_dtype's choice
  double hbm_gb_per_s = 0;
  double memory_efficiency = 0.45;   // achieved / peak HBM bandwidth of fused elementwise ops
  double collective_gb_per_s = 0;    // what one GPU's ring reaches inside the node ("collective_gb_per_s"; absent: the NVLink)
  double collective_efficiency = 0.45;  // NCCL bus bandwidth / link bandwidth
  GemmCurve gemm;
  // The max_efficiency of the fp8 GEMM classes (llm/layout.h's GemmClass: per-tensor scaled,
  // per-row scaled, MX block scaled) at the file's "fp8" peak, the wave and k terms as bf16's;
  // 0: the GPU has no such kernel (gemm_ns refuses it). "gpu.gemm_fp8".
  double fp8_tensor_efficiency = 0, fp8_row_efficiency = 0, mxfp8_efficiency = 0;
  AttentionCurve flash;  // "gpu.attention.flash"; absent: the GEMM curve's max_efficiency, no seq term
  bool flat = true;                  // no "gpu.gemm" section: the flat default above
  int gpus_per_node() const { return node.devices_per_node > 0 ? node.devices_per_node : node.devices; }
};

// Reads a pipescope.hardware file with a "gpu" section (profiles/gpus/*.json). The
// optional "gpu.gemm" {sms, tile: [m, n], max_efficiency, k_half} and
// "gpu.memory_efficiency", "gpu.collective_efficiency" carry the curve; errors name the
// file and the field.
GpuModel gpu_model_from_json(const JsonReader& reader);
GpuModel load_gpu_model(const std::string& path);
// `name_or_path` is a file, or a name looked up as <dir>/<name>.json in `dirs` in order;
// neither throws InputError naming --gpu and the folders tried.
std::string find_gpu_file(const std::string& name_or_path, const std::vector<std::string>& dirs);
// The GPU file a --gpu value (or a v3 plan's job.cluster.gpu) names: a file (relative to
// `base_dir` first, when given), else NAME.json in $PIPESCOPE_GPU_DIR, then the bundled
// profiles/gpus/. Throws InputError naming --gpu. llm-time, llm-plan, `simulate --plan` and
// the GUI's job all resolve it here.
std::string gpu_file_path(const std::string& name_or_path, const std::string& base_dir = "");
// The folders a GPU name is looked up in, in order: $PIPESCOPE_GPU_DIR (when set), then
// the bundled profiles/gpus/.
std::vector<std::string> gpu_file_dirs();
GpuModel load_gpu(const std::string& name_or_path, const std::string& base_dir = "");
// The same GPU running its GEMMs in `dtype` ("bf16", "fp16", ...): peak_tflops is the file's
// peak_dense_tflops entry for it; a file without one throws InputError naming the file and
// gpu.peak_dense_tflops.
GpuModel gpu_at_dtype(const GpuModel& gpu, const std::string& dtype);

struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;  // a batched GEMM (attention: b x heads)
};

double gemm_efficiency(const GpuModel& gpu, const GemmShape& shape);
int64_t gemm_flops(const GemmShape& shape);
// A GEMM of the class (bf16 by default: 2-byte operands and result; the fp8 classes read
// 1-byte operands at the file's "fp8" peak and write bf16). Throws InputError naming the
// GPU file when it states no peak or efficiency for the class.
int64_t gemm_ns(const GpuModel& gpu, const GemmShape& shape, GemmClass cls = GemmClass::Bf16);
// The fused attention kernel running `flops` (as it runs them: the causal half, the
// backward's 2.5 x) over `seq_kv` keys per query, forward or backward, by gpu.flash.
int64_t flash_attention_ns(const GpuModel& gpu, double flops, int64_t seq_kv, bool backward);
// A memory-bound op that reads and writes `bytes` in all.
int64_t memory_ns(const GpuModel& gpu, double bytes);

}  // namespace pipescope
