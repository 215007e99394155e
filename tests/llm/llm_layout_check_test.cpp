// validate_layout refuses what Megatron-LM (arguments.py, TransformerConfig) and the cluster
// refuse of the model and the degrees, and framework_refusal what one framework refuses and
// another runs (DeepSpeed's pipeline engine, Megatron-Core's rank orders): validate_job's two
// steps, each naming the flag and the numbers.
#include <gtest/gtest.h>

#include "core/error.h"
#include "llm/framework.h"
#include "llm/layout_check.h"
#include "llm_shapes.h"

namespace pipescope {
namespace {

// Runs validate_layout, then framework_refusal under `f` (validate_job's order); returns the
// refusal's message ("" and a test failure when both accept).
std::string refusal(const TransformerShape& s, const ParallelLayout& l, int gpus,
                    Framework f = Framework::Megatron) {
  try {
    const std::string why = framework_refusal(framework_offer(f), validate_layout(s, l, gpus));
    if (!why.empty()) return why;
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return "";
}

// "" when validate_layout and framework_refusal accept, else the refusal (the test prints it)
std::string accepted(const TransformerShape& s, const ParallelLayout& l, int gpus, Framework f = Framework::Megatron) {
  return framework_refusal(framework_offer(f), validate_layout(s, l, gpus));
}

ParallelLayout layout(int t, int cp, int d, int p) {
  ParallelLayout l;
  l.t = t, l.cp = cp, l.d = d, l.p = p;
  return l;
}

TEST(LlmLayoutCheck, AcceptsLlama70bOn64Gpus) {
  const TransformerShape s = testing::llama3_70b();
  std::vector<std::string> notes;
  const ParallelLayout ok = validate_layout(s, layout(8, 1, 1, 8), 64, &notes);
  EXPECT_EQ(ok.gpus(), 64);
  EXPECT_TRUE(notes.empty());
}

TEST(LlmLayoutCheck, DegreesMustMultiplyToTheGpus) {
  EXPECT_EQ(refusal(testing::llama3_70b(), layout(8, 1, 2, 4), 128),
            "--gpus: t * cp * d * p = 8 * 1 * 2 * 4 = 64, but the cluster has 128 GPUs");
}

// The limits of llm/layout_check.h, checked for every job whatever built it (flags, a
// plan file, the GUI): 2^20 GPUs, v <= 64, no negative width, the rank order a permutation.
TEST(LlmLayoutCheck, EveryCountIsInItsRangeAndTheOrderIsAPermutation) {
  const TransformerShape s = testing::llama3_8b();
  EXPECT_EQ(refusal(s, layout(1, 1, 2097152, 1), 2097152), "--gpus: expected 1 to 1048576, got 2097152");
  ParallelLayout l = layout(1, 1, 1, 2);
  l.v = 128;
  EXPECT_EQ(refusal(s, l, 2), "virtual pipeline size: expected 1 to 64, got 128");
  TransformerShape negative = s;
  negative.kv_channels = -1;  // before: taken as given, 0 alone is Megatron's h / a
  EXPECT_EQ(refusal(negative, layout(1, 1, 1, 1), 1), "--kv-channels: expected 0 to 16777216, got -1");
  l = layout(1, 1, 1, 1);
  l.order = "tp-cp-ep-dp-pq";  // before: llm-memory never placed a group, so took it
  EXPECT_EQ(refusal(s, l, 1), "order: \"tp-cp-ep-dp-pq\": unknown group \"pq\" (expected a permutation of tp, cp, ep, dp, pp)");
  // V = 128256 padded to a multiple of 2^16 x 2^15 = 2^31: beyond 2^30, refused before an int overflows.
  EXPECT_THROW(padded_vocabulary(128256, 1 << 15, 1 << 16), InputError);
  EXPECT_EQ(padded_vocabulary(128256, 8, 128), 129024);  // the next multiple of 128 x 8: 126 x 1024
}

TEST(LlmLayoutCheck, TensorParallelMustSplitHeadsGroupsAndFfn) {
  TransformerShape s = testing::llama3_8b();  // 32 heads, 8 query groups, ffn 14336
  EXPECT_EQ(refusal(s, layout(3, 1, 1, 1), 3),
            "--tensor-model-parallel-size: t = 3 does not divide --num-attention-heads 32");
  // 16 divides 32 heads and is a multiple of 8 groups (KV heads replicated twice): accepted.
  EXPECT_NO_THROW(validate_layout(s, layout(16, 1, 1, 1), 16));
  s.kv_heads = 32 / 8 * 3;  // 12 groups: heads 32 % 12 != 0 is refused first
  EXPECT_NE(refusal(s, layout(1, 1, 1, 1), 1).find("--num-query-groups"), std::string::npos);
  s = testing::llama3_8b();
  s.heads = 48, s.hidden = 4608, s.kv_heads = 12;  // t = 8: 48 % 8 == 0, 12 % 8 and 8 % 12 != 0
  EXPECT_EQ(refusal(s, layout(8, 1, 1, 1), 8),
            "--tensor-model-parallel-size: t = 8 neither divides nor is a multiple of --num-query-groups 12");
}

TEST(LlmLayoutCheck, ExpertAndContextParallelism) {
  const TransformerShape mx = testing::mixtral_8x7b();  // 8 experts, s 4096
  ParallelLayout l = layout(1, 1, 6, 1);
  l.ep = 3;
  EXPECT_EQ(refusal(mx, l, 6), "--expert-model-parallel-size: ep = 3 does not divide --num-experts 8");
  l = layout(1, 1, 2, 1);
  l.ep = 4;
  EXPECT_EQ(refusal(mx, l, 2), "--expert-model-parallel-size: ep = 4 does not divide d * cp = 2 * 1 = 2");
  l = layout(1, 2, 2, 1);
  l.ep = 4;  // d * cp = 4: accepted
  EXPECT_NO_THROW(validate_layout(mx, l, 4));
  l = layout(1, 1, 2, 1);
  l.ep = 2;
  EXPECT_NE(refusal(testing::llama3_8b(), l, 2).find("needs --num-experts"), std::string::npos);
  TransformerShape s = testing::llama3_8b();
  s.sequence = 4100;  // 4100 % (2 x 4) = 4
  EXPECT_EQ(refusal(s, layout(1, 4, 1, 1), 4),
            "--context-parallel-size: --seq-length 4100 is not a multiple of 2 * cp = 8 (each rank takes two "
            "of the 2 cp chunks)");
}

TEST(LlmLayoutCheck, PipelineBeforeDataNeedsCpEqualToEpInMegatron) {
  // initialize_model_parallel: dense pp groups have stride t cp, expert ones t ep.
  const TransformerShape mx = testing::mixtral_8x7b();  // 32 layers, 8 experts
  ParallelLayout l = layout(1, 2, 2, 2);
  l.order = "tp-cp-ep-pp-dp";
  EXPECT_EQ(refusal(mx, l, 8),
            "--order: \"tp-cp-ep-pp-dp\" (--use-tp-pp-dp-mapping) with cp = 2 and ep = 1: Megatron-Core's "
            "initialize_model_parallel needs cp = ep there (its dense and expert pipeline groups, strides t cp and t ep, "
            "must be the same); use tp-cp-ep-dp-pp");
  l.ep = 2;  // cp = ep: the same groups
  EXPECT_EQ("", accepted(mx, l, 8));
  l.ep = 1, l.order = "tp-cp-ep-dp-pp";  // Megatron's default order: any cp, ep
  EXPECT_EQ("", accepted(mx, l, 8));
  l.order = "tp-cp-ep-pp-dp", l.sharding = Sharding::Zero3;  // torchtitan shards over the cp ranks
  l.microbatches = 2;                                         // Schedule1F1B: M >= p
  EXPECT_EQ("", accepted(mx, l, 8, Framework::Torch));  // a Megatron-Core rule only
}

TEST(LlmLayoutCheck, LayersMustFillTheChunks) {
  const TransformerShape s = testing::llama3_70b();  // 80 layers
  ParallelLayout l = layout(1, 1, 1, 8);
  l.v = 3;
  EXPECT_EQ(refusal(s, l, 8), "--num-layers: 80 layers do not fill p * v = 8 * 3 = 24 chunks evenly");
  // More chunks than layers is not an unevenness: say that no chunk would be empty.
  l = layout(1, 1, 1, 128);
  EXPECT_EQ(refusal(s, l, 128),
            "--num-layers: 80 layers cannot give each of p * v = 128 * 1 = 128 chunks a layer (expected p * v <= 80)");
  l = layout(1, 1, 1, 2);
  l.layers_per_chunk = {40, 30};
  EXPECT_EQ(refusal(s, l, 2), "layers_per_chunk: the entries sum to 70, but --num-layers is 80");
  l.layers_per_chunk = {80};
  EXPECT_EQ(refusal(s, l, 2), "layers_per_chunk: expected p * v = 2 entries, got 1");
  l.layers_per_chunk = {41, 39};
  EXPECT_NO_THROW(validate_layout(s, l, 2));
}

TEST(LlmLayoutCheck, SequenceParallelWithoutTensorParallelIsTurnedOffAsMegatronDoes) {
  ParallelLayout l = layout(1, 1, 8, 1);
  l.sequence_parallel = true;
  std::vector<std::string> notes;
  const ParallelLayout ok = validate_layout(testing::llama3_8b(), l, 8, &notes);
  EXPECT_FALSE(ok.sequence_parallel);
  ASSERT_EQ(notes.size(), 1U);
  EXPECT_NE(notes[0].find("Disabling sequence parallelism"), std::string::npos);
}

TEST(LlmLayoutCheck, ShardingsEachFrameworkOffers) {
  const TransformerShape s = testing::llama3_70b();
  ParallelLayout l = layout(8, 1, 2, 4);
  l.microbatches = 8;  // torch's Schedule1F1B needs M >= p
  for (Sharding z : {Sharding::Zero2, Sharding::Zero3}) {
    l.sharding = z;
    // DeepSpeed's PipelineEngine asserts zero_optimization_stage() < 2.
    EXPECT_EQ(refusal(s, l, 64, Framework::DeepSpeed),
              "--sharding: \"" + to_string(z) + "\": DeepSpeed's PipelineEngine asserts zero_optimization.stage < 2 "
              "(\"ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism\"); it offers stage 0 or 1 "
              "(distributed-optimizer), and ZeRO-2 / 3 only without a pipeline (p = 1)");
    EXPECT_EQ("", accepted(s, l, 64, Framework::Torch));  // FSDP2 reshard_after_forward False / True
    // Megatron-LM runs them only as Megatron-FSDP, which pipescope neither times nor exports
    // (issue 56: validate and simulate took a Megatron zero-3 job that export --to megatron refused)
    EXPECT_EQ(refusal(s, l, 64, Framework::Megatron),
              "--sharding: Megatron-LM's data-parallel sharding is --use-distributed-optimizer (ZeRO-1: optimizer "
              "state / d); \"" + to_string(z) + "\" is only Megatron-FSDP's --data-parallel-sharding-strategy " +
              (z == Sharding::Zero2 ? "optim_grads" : "optim_grads_params") +
              " (--use-megatron-fsdp), a different data-parallel wrapper pipescope neither times nor exports; plan "
              "with sharding none or distributed-optimizer");
  }
  l.sharding = Sharding::DistributedOptimizer;
  EXPECT_EQ("", accepted(s, l, 64, Framework::DeepSpeed));  // ZeRO-1 with the pipeline engine
  l = layout(8, 1, 8, 1);
  l.sharding = Sharding::Zero3;
  EXPECT_EQ("", accepted(s, l, 64, Framework::DeepSpeed));  // no pipeline: any stage
}

TEST(LlmLayoutCheck, MegatronsDefaultsForFfnAndVocabulary) {
  EXPECT_EQ(default_ffn_hidden(4096, false), 16384);
  EXPECT_EQ(default_ffn_hidden(4096, true), 10880);  // int(4 h 2 / 3 / 64) x 64
  EXPECT_EQ(padded_vocabulary(50257, 1), 50304);     // GPT-2's vocabulary, 128-aligned
  EXPECT_EQ(padded_vocabulary(50257, 8), 51200);     // 1024-aligned
  EXPECT_EQ(padded_vocabulary(128256, 8), 129024);
  EXPECT_EQ(framework_from_name("deepspeed"), Framework::DeepSpeed);
  EXPECT_FALSE(framework_from_name("jax").has_value());
}

}  // namespace
}  // namespace pipescope
