// Reads the GPU file's efficiency curve and times GEMMs and memory-bound ops by it
// (llm/gpu_model.h). Every time is an integer number of nanoseconds, rounded up.
#include "llm/gpu_model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "core/data_dir.h"
#include "core/error.h"

namespace pipescope {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t to_ns(double seconds) { return static_cast<int64_t>(std::ceil(seconds * 1e9)); }

void read_curve(const JsonReader& gpu, GpuModel& g) {
  const JsonReader c = gpu["gemm"];
  g.gemm.sms = static_cast<int>(c["sms"].as_int(1, 100000));
  const JsonReader tile = c["tile"];
  if (!tile.json().is_array() || tile.size() != 2) tile.fail("expected [tile_m, tile_n], two integers");
  const std::vector<int64_t> mn = tile.as_ints(1);
  if (mn[0] > 4096 || mn[1] > 4096) tile.fail("expected tile sides of at most 4096");
  g.gemm.tile_m = static_cast<int>(mn[0]);
  g.gemm.tile_n = static_cast<int>(mn[1]);
  g.gemm.max_efficiency = c["max_efficiency"].as_double(1e-3, 1.0);
  g.gemm.k_half = c.has("k_half") ? c["k_half"].as_double(0, 1e6) : 0.0;
  g.memory_efficiency = gpu["memory_efficiency"].as_double(1e-3, 1.0);
  g.collective_efficiency = gpu["collective_efficiency"].as_double(1e-3, 1.0);
  g.flat = false;
}

// "gemm_fp8": {"tensor_scaled", "row_scaled", "mxfp8"} max efficiencies (each optional) and
// "attention": {"flash": {"forward_efficiency", "backward_efficiency", "seq_half"}}.
void read_kernels(const JsonReader& gpu, GpuModel& g) {
  if (gpu.has("gemm_fp8")) {
    const JsonReader f = gpu["gemm_fp8"];
    if (!f.json().is_object()) f.fail("expected an object of GEMM class -> max_efficiency");
    for (const auto& [key, value] : f.json().items()) {
      const double e = f[key].as_double(1e-3, 1.0);
      if (key == "tensor_scaled") {
        g.fp8_tensor_efficiency = e;
      } else if (key == "row_scaled") {
        g.fp8_row_efficiency = e;
      } else if (key == "mxfp8") {
        g.mxfp8_efficiency = e;
      } else {
        f[key].fail("expected tensor_scaled, row_scaled or mxfp8");
      }
    }
    if (!g.peak_dense_tflops.count("fp8")) f.fail("fp8 GEMM efficiencies need gpu.peak_dense_tflops.fp8");
  }
  if (gpu.has("attention")) {
    const JsonReader flash = gpu["attention"]["flash"];
    g.flash.forward_efficiency = flash["forward_efficiency"].as_double(1e-3, 1.0);
    g.flash.backward_efficiency = flash["backward_efficiency"].as_double(1e-3, 1.0);
    g.flash.seq_half = flash.has("seq_half") ? flash["seq_half"].as_double(0, 1e7) : 0.0;
  } else {
    g.flash.forward_efficiency = g.flash.backward_efficiency = g.gemm.max_efficiency;
  }
}

}  // namespace

GpuModel gpu_model_from_json(const JsonReader& r) {
  GpuModel g;
  g.node = hardware_from_json(r);
  if (!r.has("gpu")) r.fail("missing field \"gpu\" (peak_dense_tflops, hbm_gb_per_s): not a GPU hardware file");
  const JsonReader gpu = r["gpu"];
  const JsonReader peaks = gpu["peak_dense_tflops"];
  if (!peaks.json().is_object() || peaks.json().empty()) peaks.fail("expected an object of dtype -> TFLOP/s");
  for (const auto& [dtype, value] : peaks.json().items()) g.peak_dense_tflops[dtype] = peaks[dtype].as_double(1e-3, 1e7);
  g.peak_tflops = peaks["bf16"].as_double(1e-3, 1e7);
  g.hbm_gb_per_s = gpu["hbm_gb_per_s"].as_double(1e-3, 1e9);
  g.collective_gb_per_s = gpu.has("collective_gb_per_s") ? gpu["collective_gb_per_s"].as_double(1e-3, 1e9)
                                                          : g.node.link.bandwidth_gb_per_s;
  if (gpu.has("gemm")) read_curve(gpu, g);
  read_kernels(gpu, g);
  return g;
}

GpuModel load_gpu_model(const std::string& path) { return gpu_model_from_json(JsonReader::from_file(path)); }

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

GpuModel gpu_at_dtype(const GpuModel& gpu, const std::string& dtype) {
  const auto peak = gpu.peak_dense_tflops.find(dtype);
  if (peak == gpu.peak_dense_tflops.end()) {
    throw InputError(gpu.node.source + ": gpu.peak_dense_tflops: no entry for \"" + dtype + "\"");
  }
  GpuModel out = gpu;
  out.peak_tflops = peak->second;
  return out;
}

double gemm_efficiency(const GpuModel& gpu, const GemmShape& s) {
  const GemmCurve& c = gpu.gemm;
  double e = c.max_efficiency;
  if (c.sms > 0 && s.m > 0 && s.n > 0) {
    const int64_t tiles = ceil_div(s.m, c.tile_m) * ceil_div(s.n, c.tile_n) * std::max<int64_t>(s.batch, 1);
    const int64_t slots = ceil_div(tiles, c.sms) * c.sms;
    e *= static_cast<double>(tiles) / static_cast<double>(slots);
  }
  if (c.k_half > 0 && s.k > 0) e *= static_cast<double>(s.k) / (static_cast<double>(s.k) + c.k_half);
  return e;
}

int64_t gemm_flops(const GemmShape& s) { return 2 * s.m * s.n * s.k * std::max<int64_t>(s.batch, 1); }

namespace {

// The peak and max_efficiency a GEMM class runs at on `gpu`.
std::pair<double, double> class_peak(const GpuModel& gpu, GemmClass cls) {
  if (cls == GemmClass::Bf16) return {gpu.peak_tflops, gpu.gemm.max_efficiency};
  const double e = cls == GemmClass::Fp8TensorScaled ? gpu.fp8_tensor_efficiency
                   : cls == GemmClass::Fp8RowScaled  ? gpu.fp8_row_efficiency
                                                     : gpu.mxfp8_efficiency;
  const auto peak = gpu.peak_dense_tflops.find("fp8");
  if (e <= 0 || peak == gpu.peak_dense_tflops.end()) {
    const char* what = cls == GemmClass::Fp8TensorScaled ? "tensor_scaled" : cls == GemmClass::Fp8RowScaled ? "row_scaled" : "mxfp8";
    throw InputError(gpu.node.source + ": gpu.gemm_fp8." + what +
                     ": this GPU file states no such fp8 GEMM (and gpu.peak_dense_tflops.fp8); the recipe needs it");
  }
  return {peak->second, e};
}

}  // namespace

int64_t gemm_ns(const GpuModel& gpu, const GemmShape& s, GemmClass cls) {
  if (s.m <= 0 || s.n <= 0 || s.k <= 0) return 0;
  const double batch = static_cast<double>(std::max<int64_t>(s.batch, 1));
  const double flops = static_cast<double>(gemm_flops(s));
  const auto [peak, max_efficiency] = class_peak(gpu, cls);
  // The class's max_efficiency times the shape's wave and k terms (bf16's curve as it is).
  const double e = cls == GemmClass::Bf16 ? gemm_efficiency(gpu, s)
                                          : max_efficiency * gemm_efficiency(gpu, s) / gpu.gemm.max_efficiency;
  const double compute = flops / (peak * 1e12 * e);
  const double operand = cls == GemmClass::Bf16 ? 2.0 : 1.0;
  const double bytes = batch * (operand * static_cast<double>(s.m * s.k + s.k * s.n) + 2.0 * static_cast<double>(s.m * s.n));
  const double memory = bytes / (gpu.hbm_gb_per_s * 1e9 * gpu.memory_efficiency);
  return to_ns(std::max(compute, memory));
}

int64_t flash_attention_ns(const GpuModel& gpu, double flops, int64_t seq_kv, bool backward) {
  if (flops <= 0) return 0;
  const AttentionCurve& c = gpu.flash;
  double e = backward ? c.backward_efficiency : c.forward_efficiency;
  if (e <= 0) e = gpu.gemm.max_efficiency;  // a GpuModel built in code, no curve stated: the GEMM curve's
  if (c.seq_half > 0) e *= static_cast<double>(seq_kv) / (static_cast<double>(seq_kv) + c.seq_half);
  return to_ns(flops / (gpu.peak_tflops * 1e12 * e));
}

int64_t memory_ns(const GpuModel& gpu, double bytes) {
  if (bytes <= 0) return 0;
  return to_ns(bytes / (gpu.hbm_gb_per_s * 1e9 * gpu.memory_efficiency));
}

std::string gpu_file_path(const std::string& name_or_path, const std::string& base_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!base_dir.empty() && fs::is_regular_file(fs::path(base_dir) / name_or_path, ec)) {
    return (fs::path(base_dir) / name_or_path).string();
  }
  return find_gpu_file(name_or_path, gpu_file_dirs());
}

std::vector<std::string> gpu_file_dirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("PIPESCOPE_GPU_DIR")) dirs.emplace_back(env);
  dirs.push_back(data_dir("profiles/gpus"));
  return dirs;
}

GpuModel load_gpu(const std::string& name_or_path, const std::string& base_dir) {
  return load_gpu_model(gpu_file_path(name_or_path, base_dir));
}

}  // namespace pipescope
