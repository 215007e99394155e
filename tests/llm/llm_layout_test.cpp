// The layout vocabulary's names round-trip, and the precision recipes keep the bytes per
// parameter Megatron-LM's theoretical_memory_usage.py assumes (18 for --bf16: bf16
// weights 2, fp32 main gradients 4, fp32 master weights + Adam m + v 12).
#include <gtest/gtest.h>

#include "llm/layout.h"

namespace pipescope {
namespace {

TEST(LlmLayout, EnumNamesRoundTrip) {
  for (Sharding s : {Sharding::None, Sharding::DistributedOptimizer, Sharding::Zero2, Sharding::Zero3})
    EXPECT_EQ(sharding_from_name(to_string(s)), s);
  for (PrecisionRecipe p : {PrecisionRecipe::Bf16Mixed, PrecisionRecipe::Fp32, PrecisionRecipe::Fp8Params})
    EXPECT_EQ(precision_recipe_from_name(to_string(p)), p);
  EXPECT_EQ(sharding_from_name("zero-1"), Sharding::DistributedOptimizer);
  EXPECT_FALSE(sharding_from_name("zero-4").has_value());
}

TEST(LlmLayout, MegatronBf16KeepsEighteenBytesPerParameter) {
  EXPECT_EQ(precision_of(PrecisionRecipe::Bf16Mixed).per_parameter(), 18);
  EXPECT_EQ(precision_of(PrecisionRecipe::Fp32).per_parameter(), 16);
}

TEST(LlmLayout, GpusAndGlobalBatch) {
  ParallelLayout l;
  l.t = 8, l.cp = 2, l.d = 4, l.p = 16, l.micro_batch = 1, l.microbatches = 32;
  EXPECT_EQ(l.gpus(), 8 * 2 * 4 * 16);
  EXPECT_EQ(l.global_batch(), 128);
}

}  // namespace
}  // namespace pipescope
