// Pipelined runs on the CUDA backend. Oracle (design.md): after one pipelined step every
// parameter's gradient equals that of one process running the whole mini-batch on the
// same backend, relative error under 1e-5 in fp32, for GPipe and 1F1B with K in {1, 2,
// 4} and M = 4 (on one GPU the K stages run as K SM partitions). And the tracked
// activation peak per stage equals what the accounting rules predict for a plan of the
// same profile, on the GPU as on the CPU (the same tracker and Tensor code).
#include <gtest/gtest.h>

#include "core/cost_model.h"
#include "tests/cuda/cuda_gpu.h"
#include "exec/runtime/executor.h"
#include "exec/layers/model.h"
#include "planner/plan_builder.h"
#include "sim/simulator.h"

namespace pipescope::exec {
namespace {

// 2 x (attention + MLP), LayerNorm and a linear head; hidden 64, 4 heads, sequence 16.
Profile small_gpt_profile() {
  Profile p;
  p.model = "cuda-test-gpt";
  p.device_name = "test";
  p.device_memory_bytes = int64_t(1) << 30;
  p.backend = "cuda";
  p.dtype = "fp32";
  p.batch_sizes = {1};
  p.source = "cuda-test-gpt (test)";
  std::vector<std::pair<std::string, Json>> layers;
  for (int i = 0; i < 2; ++i) {
    layers.emplace_back("attn" + std::to_string(i),
                        Json{{"type", "attention_block"}, {"hidden", 64}, {"heads", 4}, {"sequence", 16}});
    layers.emplace_back("mlp" + std::to_string(i), Json{{"type", "mlp_block"}, {"hidden", 64}, {"ffn", 256}, {"sequence", 16}});
  }
  layers.emplace_back("ln", Json{{"type", "layernorm"}, {"features", 64}, {"sequence", 16}});
  layers.emplace_back("head", Json{{"type", "linear"}, {"in", 64}, {"out", 64}, {"sequence", 16}});
  for (auto& [name, spec] : layers) {
    LayerProfile lp;
    lp.name = name;
    lp.forward_ms = {1};
    lp.backward_ms = {2};
    lp.activation_bytes = {1024};
    lp.output_bytes = {4096};
    lp.spec = spec;
    p.layers.push_back(lp);
  }
  return p;
}

TEST(CudaPipeline, GradientsEqualOneProcessForGPipeAnd1F1B) {
  PS_REQUIRE_GPU();
  const Profile profile = small_gpt_profile();
  int checked = 0;
  for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB}) {
    for (int K : {1, 2, 4}) {
      PlanChoice choice;
      choice.stages = K;
      choice.microbatches = 4;
      choice.microbatch_size = 2;
      choice.schedule = kind;
      choice.partition = PartitionKind::Uniform;
      Plan plan = make_plan(profile, choice).plan;
      Schedule schedule = schedule_for(plan);
      RunOptions o;
      o.backend = "cuda";
      o.steps = 1;
      o.check_gradients = true;
      RunResult r = run_threads(profile, plan, schedule, o);
      EXPECT_GE(r.max_gradient_error, 0.0) << to_string(kind) << " K=" << K;
      EXPECT_LT(r.max_gradient_error, 1e-5) << to_string(kind) << " K=" << K << " (" << cuda_placement_mode(K) << ")";
      ++checked;
    }
  }
  EXPECT_EQ(checked, 6);  // 2 schedules x 3 values of K
}

TEST(CudaPipeline, BackendSpecWithPartitionsNamesTheSmShare) {
  PS_REQUIRE_GPU();
  std::unique_ptr<Backend> whole = make_backend("cuda");
  std::unique_ptr<Backend> half = make_backend("cuda:part=2");
  EXPECT_EQ(half->device_name().rfind(whole->device_name(), 0), 0u) << half->device_name();
  EXPECT_NE(half->device_name().find("SM partition 1 of 2"), std::string::npos) << half->device_name();
}

}  // namespace
}  // namespace pipescope::exec
