// Small executable models for the exec tests: fast enough to run hundreds of pipelined
// steps, yet with every layer type (attention, MLP block, LayerNorm, GELU, linear).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/profile.h"
#include "core/report.h"
#include "exec/layers/model.h"
#include "exec/profiler/profiler.h"
#include "planner/plan_builder.h"

namespace pipescope::test {

// 2 x (attention + MLP) blocks, LayerNorm, GELU and two linears: 8 layers, hidden 16,
// 2 heads, sequence 4.
inline exec::ModelFile tiny_gpt_model() {
  exec::ModelFile m;
  m.name = "tiny-gpt";
  m.source = "tiny-gpt (test)";
  const int h = 16, s = 4;
  for (int i = 0; i < 2; ++i) {
    m.layers.push_back({"attn" + std::to_string(i), Json{{"type", "attention_block"}, {"hidden", h}, {"heads", 2}, {"sequence", s}}});
    m.layers.push_back({"mlp" + std::to_string(i), Json{{"type", "mlp_block"}, {"hidden", h}, {"ffn", 32}, {"sequence", s}}});
  }
  m.layers.push_back({"ln", Json{{"type", "layernorm"}, {"features", h}, {"sequence", s}}});
  m.layers.push_back({"fc", Json{{"type", "linear"}, {"in", h}, {"out", 24}, {"sequence", s}}});
  m.layers.push_back({"gelu", Json{{"type", "gelu"}, {"features", 24}, {"sequence", s}}});
  m.layers.push_back({"head", Json{{"type", "linear"}, {"in", 24}, {"out", 8}, {"sequence", s}}});
  return m;
}

// The tiny GPT profiled by the executor's own profiler (tracking allocator: the memory
// numbers the executor holds, workspace_bytes included) at micro-batch sizes 1 and 2.
inline Profile tiny_gpt_measured_profile() {
  exec::ProfileOptions po;
  po.batch_sizes = {1, 2};
  po.warmup = 0;
  po.repeats = 1;
  return exec::profile_model(tiny_gpt_model(), po);
}

// The measured tiny GPT with made-up times that differ by layer and grow with the
// micro-batch size: F = 0.010 (1 + i mod 3) ms x the size's rank (1, 2), B = 2.5 F, I =
// W = 1.25 F, and layer i's optimizer step optimizer_ms[i mod size] (the exec tests
// compare executor and simulator on times that are not all equal).
inline Profile timed_tiny_gpt_profile(const std::vector<double>& optimizer_ms) {
  Profile p = tiny_gpt_measured_profile();
  for (std::size_t i = 0; i < p.layers.size(); ++i) {
    LayerProfile& l = p.layers[i];
    const double f = 0.010 * static_cast<double>(1 + i % 3);
    for (std::size_t b = 0; b < p.batch_sizes.size(); ++b) {
      const double scale = static_cast<double>(b + 1);
      l.forward_ms[b] = f * scale;
      l.backward_ms[b] = 2.5 * f * scale;
      if (!l.backward_input_ms.empty()) l.backward_input_ms[b] = l.backward_weight_ms[b] = 1.25 * f * scale;
    }
    l.optimizer_ms = optimizer_ms[i % optimizer_ms.size()];
  }
  return p;
}

// Every memory number of every position of `measured` (the executor's tracking allocator)
// equals `predicted`'s (the simulator's): static parts, activations, transients, weight
// versions, the peak, and what offload sent to and held on the host.
inline void expect_same_position_memory(const StepReport& predicted, const StepReport& measured,
                                        const std::string& label) {
  ASSERT_EQ(measured.positions.size(), predicted.positions.size()) << label;
  for (std::size_t d = 0; d < predicted.positions.size(); ++d) {
    const PositionReport &a = predicted.positions[d], &b = measured.positions[d];
    const std::string where = label + ", position " + std::to_string(d);
    EXPECT_EQ(b.peak_memory_bytes, a.peak_memory_bytes)
        << where << " (tracked - predicted = " << b.peak_memory_bytes - a.peak_memory_bytes << ")";
    EXPECT_EQ(b.static_bytes, a.static_bytes) << where;
    EXPECT_EQ(b.weight_bytes, a.weight_bytes) << where;
    EXPECT_EQ(b.gradient_bytes, a.gradient_bytes) << where;
    EXPECT_EQ(b.optimizer_bytes, a.optimizer_bytes) << where;
    EXPECT_EQ(b.peak_activation_bytes, a.peak_activation_bytes) << where;
    EXPECT_EQ(b.transient_bytes, a.transient_bytes) << where;
    EXPECT_EQ(b.weight_versions, a.weight_versions) << where;
    EXPECT_EQ(b.weight_version_bytes, a.weight_version_bytes) << where;
    EXPECT_EQ(b.offloaded_bytes, a.offloaded_bytes) << where;
    EXPECT_EQ(b.host_peak_bytes, a.host_peak_bytes) << where;
    EXPECT_EQ(b.offload_delay_ns, a.offload_delay_ns) << where;
  }
}

// A report's memory curve (its timeline's samples) reaches each position's peak: static +
// activations + transients + kept weight versions at one instant.
inline void expect_curves_reach_the_peaks(const StepReport& r, const std::string& label) {
  std::vector<int64_t> top(r.positions.size(), 0);
  for (const MemorySample& x : r.timeline.memory) {
    ASSERT_LT(x.position, static_cast<int>(top.size())) << label;
    top[static_cast<std::size_t>(x.position)] = std::max(top[static_cast<std::size_t>(x.position)],
                                                         x.activation_bytes + x.transient_bytes + x.weight_version_bytes);
  }
  for (std::size_t d = 0; d < top.size(); ++d) {
    EXPECT_EQ(r.positions[d].static_bytes + top[d], r.positions[d].peak_memory_bytes)
        << label << ", " << r.kind << " curve of position " << d;
  }
}

// K positions, M micro-batches of `microbatch_size` samples, the layers cut uniformly;
// interleaved and the V-shapes take 2 chunks per position.
inline Plan uniform_plan(const Profile& profile, ScheduleKind kind, int K, int M, double microbatch_size) {
  PlanChoice c;
  c.stages = K;
  c.microbatches = M;
  c.microbatch_size = microbatch_size;
  c.schedule = kind;
  c.chunks = kind == ScheduleKind::Interleaved || required_chunks(kind) == 2 ? 2 : 1;
  c.partition = PartitionKind::Uniform;
  return make_plan(profile, c).plan;
}

// A profile of the model whose times are made up (1 ms per op) but whose specs are
// real: enough to build plans and run them.
inline Profile profile_with_specs(const exec::ModelFile& m) {
  Profile p;
  p.model = m.name;
  p.device_name = "test";
  p.device_memory_bytes = 1 << 30;
  p.backend = "cpu";
  p.dtype = "fp32";
  p.batch_sizes = {1};
  p.source = m.source;
  for (const exec::ModelLayer& l : m.layers) {
    LayerProfile lp;
    lp.name = l.name;
    lp.forward_ms = {1};
    lp.backward_ms = {2};
    lp.activation_bytes = {1024};
    lp.output_bytes = {256};
    lp.spec = l.spec;
    p.layers.push_back(lp);
  }
  return p;
}

// The tracked activation peak of every position equals the prediction's, byte for byte
// (and is not vacuously 0).
inline void expect_activation_peaks_equal(const StepReport& predicted, const StepReport& measured,
                                          const std::string& label) {
  ASSERT_EQ(predicted.positions.size(), measured.positions.size()) << label;
  for (std::size_t d = 0; d < predicted.positions.size(); ++d) {
    EXPECT_GT(predicted.positions[d].peak_activation_bytes, 0) << label;
    EXPECT_EQ(measured.positions[d].peak_activation_bytes, predicted.positions[d].peak_activation_bytes)
        << label << ", position " << d;
  }
}

}  // namespace pipescope::test
