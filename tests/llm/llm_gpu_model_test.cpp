// The GPU file's GEMM curve (llm/gpu_model.h): every bundled file reads, an older file
// without "gpu.gemm" gets the flat 0.45, bad fields fail naming file and field, and the
// efficiency is its closed form: max_efficiency x tiles / (waves x SMs) x k / (k + k_half).
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "llm/gpu_model.h"
#include "tests/support/source_paths.h"

namespace pipescope {
namespace {

std::string gpu_file(const std::string& name) { return std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpus/" + name + ".json"; }

const char* kNode = R"("format": "pipescope.hardware", "version": 1, "name": "x", "devices": 8, "memory_bytes": 1,
  "link": {"bandwidth_gb_per_s": 300, "latency_us": 5})";

std::string with_gpu(const std::string& gpu) { return std::string("{") + kNode + R"(, "gpu": {)" + gpu + "}}"; }

const char* kPeaks = R"("peak_dense_tflops": {"bf16": 100}, "hbm_gb_per_s": 1000)";

std::string error_of(const std::string& text) {
  try {
    gpu_model_from_json(JsonReader::from_text(text, "gpu.json"));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(LlmGpuModel, EveryBundledFileHasACurve) {
  for (const char* name : {"a100-80gb", "h100-sxm", "h200", "b200", "mi300x"}) {
    const GpuModel g = load_gpu_model(gpu_file(name));
    EXPECT_FALSE(g.flat) << name;
    EXPECT_GT(g.gemm.sms, 100) << name;
    EXPECT_GT(g.gemm.max_efficiency, 0.5) << name;
    EXPECT_LE(g.gemm.max_efficiency, 1.0) << name;
  }
  // The A100 datasheet's 108 SMs and 312 TFLOP/s dense bf16.
  const GpuModel a100 = load_gpu_model(gpu_file("a100-80gb"));
  EXPECT_EQ(a100.gemm.sms, 108);
  EXPECT_DOUBLE_EQ(a100.peak_tflops, 312.0);
  EXPECT_EQ(a100.gpus_per_node(), 8);
}

TEST(LlmGpuModel, AFileWithoutTheCurveKeepsTheFlatDefault) {
  const GpuModel g = gpu_model_from_json(JsonReader::from_text(with_gpu(kPeaks), "old.json"));
  EXPECT_TRUE(g.flat);
  // Today's analytic profiles: 0.45 of peak whatever the shape (no wave, no k term).
  EXPECT_DOUBLE_EQ(gemm_efficiency(g, {1, 1, 1}), 0.45);
  EXPECT_DOUBLE_EQ(gemm_efficiency(g, {8192, 8192, 8192}), 0.45);
  // 2 x 4096^3 FLOPs at 45 TFLOP/s: 3.054 ms (compute-bound: 100 MB at 450 GB/s is 0.22 ms).
  EXPECT_NEAR(static_cast<double>(gemm_ns(g, {4096, 4096, 4096})), 2.0 * 4096.0 * 4096 * 4096 / 45e12 * 1e9, 1.0);
  EXPECT_DOUBLE_EQ(g.collective_gb_per_s, 300.0);  // absent: the NVLink's
}

TEST(LlmGpuModel, EfficiencyIsWavesTimesTheKTerm) {
  GpuModel g;
  g.peak_tflops = 100, g.hbm_gb_per_s = 1000, g.memory_efficiency = 1.0;
  g.gemm = {10, 128, 128, 0.8, 0};
  // 10 tiles on 10 SMs: one full wave.
  EXPECT_DOUBLE_EQ(gemm_efficiency(g, {128 * 5, 128 * 2, 4096}), 0.8);
  // 11 tiles: two waves of which 11 of 20 slots work.
  EXPECT_DOUBLE_EQ(gemm_efficiency(g, {128 * 11, 128, 4096}), 0.8 * 11.0 / 20.0);
  // A partial tile counts whole: 129 x 128 is 2 tiles of 10 slots.
  EXPECT_DOUBLE_EQ(gemm_efficiency(g, {129, 128, 4096}), 0.8 * 2.0 / 10.0);
  // Batched GEMMs add their tiles: 5 x 2 tiles, one wave.
  EXPECT_DOUBLE_EQ(gemm_efficiency(g, {256, 128, 64, 5}), 0.8);
  g.gemm.k_half = 64;
  EXPECT_DOUBLE_EQ(gemm_efficiency(g, {256, 128, 64, 5}), 0.8 * 0.5);  // k = k_half halves it
  EXPECT_DOUBLE_EQ(gemm_efficiency(g, {256, 128, 192, 5}), 0.8 * 0.75);
}

TEST(LlmGpuModel, ThinGemmsAreMemoryBound) {
  GpuModel g;
  g.peak_tflops = 100, g.hbm_gb_per_s = 1000, g.memory_efficiency = 0.5;
  g.gemm = {0, 128, 128, 1.0, 0};
  // k = 1: 2 x 8192^2 FLOPs take 1.3 us; the 8192^2 bf16 output alone is 134 MB: at
  // 500 GB/s, 2 (8192 + 8192 + 8192^2) bytes take 268.5 us.
  const double bytes = 2.0 * (8192.0 + 8192.0 + 8192.0 * 8192.0);
  EXPECT_NEAR(static_cast<double>(gemm_ns(g, {8192, 8192, 1})), bytes / 500e9 * 1e9, 1.0);
  EXPECT_NEAR(static_cast<double>(memory_ns(g, 1e9)), 2e6, 1.0);  // 1 GB at 500 GB/s
  EXPECT_EQ(gemm_ns(g, {0, 8, 8}), 0);
}

TEST(LlmGpuModel, BadCurvesNameTheField) {
  const std::string peaks = std::string(kPeaks) + ", ";
  const std::string tail = R"(, "memory_efficiency": 0.9, "collective_efficiency": 0.8)";
  EXPECT_NE(error_of(with_gpu(peaks + R"("gemm": {"sms": 108, "tile": [256], "max_efficiency": 0.8})" + tail))
                .find("gpu.gemm.tile"),
            std::string::npos);
  EXPECT_NE(error_of(with_gpu(peaks + R"("gemm": {"sms": 108, "tile": [256, 128], "max_efficiency": 1.5})" + tail))
                .find("max_efficiency"),
            std::string::npos);
  EXPECT_NE(error_of(with_gpu(peaks + R"("gemm": {"sms": 0, "tile": [256, 128], "max_efficiency": 0.8})" + tail))
                .find("gpu.gemm.sms"),
            std::string::npos);
  EXPECT_NE(error_of(with_gpu(peaks + R"("gemm": {"sms": 108, "tile": [256, 128], "max_efficiency": 0.8}, "memory_efficiency": 0.9)"))
                .find("collective_efficiency"),
            std::string::npos);
  EXPECT_NE(error_of(with_gpu(peaks + R"("gemm": {"sms": 108, "tile": [256, 0], "max_efficiency": 0.8})" + tail))
                .find("tile"),
            std::string::npos);
  EXPECT_NE(error_of(with_gpu(R"("hbm_gb_per_s": 1000)")).find("peak_dense_tflops"), std::string::npos);
  EXPECT_NE(error_of(std::string("{") + kNode + "}").find("gpu"), std::string::npos);
  EXPECT_EQ(error_of(with_gpu(peaks + R"("gemm": {"sms": 108, "tile": [256, 128], "max_efficiency": 0.8})" + tail)), "");
}

}  // namespace
}  // namespace pipescope
