// Hugging Face configs in: parameter counts against the published model sizes, training
// FLOPs per token against 6N + the attention term, activation bytes against the tensor
// list of Korthikanti et al. 2022, the per-layer profile against its closed forms, and
// the refusals (unknown family, missing field) that exit 2.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/error.h"
#include "interop/hf_config.h"
#include "interop/hf_profile.h"
#include "interop/synth_profile.h"

using namespace pipescope;

namespace {

std::string hf(const std::string& name) { return std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/hf/" + name; }
std::string gpu(const std::string& name) { return std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpus/" + name + ".json"; }

HfModel from_text(const std::string& text) { return hf_model_from_json(JsonReader::from_text(text, "config.json")); }

std::string error_of(const std::string& text) {
  try {
    from_text(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

struct Published {
  const char* file;
  double total;   // parameters, as published
  double active;  // parameters one token uses (MoE), 0 = total
  const char* source;
};

// The sizes the model makers publish.
const Published kPublished[] = {
    {"llama-3-8b.json", 8.03e9, 0, "Meta Llama 3 model card: 8B; Hugging Face lists 8.03B parameters"},
    {"llama-3-70b.json", 70.6e9, 0, "Meta Llama 3 model card: 70B; Hugging Face lists 70.6B parameters"},
    {"mixtral-8x7b.json", 46.7e9, 12.9e9, "Mistral AI, Mixtral of experts (2023): 46.7B total, 12.9B used per token"},
    {"mistral-7b.json", 7.24e9, 0, "Mistral 7B: Hugging Face lists 7.24B parameters"},
    {"qwen2-7b.json", 7.62e9, 0, "Qwen2 technical report / model card: 7.6B (Hugging Face 7.62B)"},
    {"gemma-7b.json", 7751248896.0 + 786825216.0, 0,
     "Gemma report, Table 2: 7,751,248,896 non-embedding + 786,825,216 embedding parameters"},
};

}  // namespace

TEST(HfConfig, ParameterCountsMatchThePublishedSizesWithinHalfAPercent) {
  for (const Published& p : kPublished) {
    HfModel m = load_hf_model(hf(p.file));
    const double counted = static_cast<double>(count_parameters(m).total());
    EXPECT_NEAR(counted / p.total, 1.0, 0.005) << p.file << ": counted " << counted << ", published " << p.total << " (" << p.source << ")";
  }
}

TEST(HfConfig, ExactCountsOfTheDenseLlamaShapes) {
  // Sum of the tensor shapes of Meta-Llama-3-8B's and -70B's safetensors.
  EXPECT_EQ(count_parameters(load_hf_model(hf("llama-3-8b.json"))).total(), 8030261248);
  EXPECT_EQ(count_parameters(load_hf_model(hf("llama-3-70b.json"))).total(), 70553706496);
}

TEST(HfConfig, MixtralActiveParametersAreTheTopTwoExperts) {
  HfModel m = load_hf_model(hf("mixtral-8x7b.json"));
  ParameterCount c = count_parameters(m);
  const double active = static_cast<double>(c.total() - c.layers * (c.mlp - c.mlp_active));
  EXPECT_NEAR(active / 12.9e9, 1.0, 0.005) << active;
}

TEST(HfConfig, TrainingFlopsPerTokenAre6NPlusTheAttentionTerm) {
  // 6 N + 12 L s (heads x head_dim), N the published parameters that multiply: all but
  // the embedding lookup (a tied embedding is the head's matrix, so it stays), top-k
  // experts under MoE. Within 2% (norms, biases and the router are what differs).
  for (int64_t seq : {2048, 4096, 8192}) {
    for (const Published& p : kPublished) {
      HfModel m = load_hf_model(hf(p.file));
      const double lookup = m.tied ? 0.0 : static_cast<double>(m.vocabulary * m.hidden);
      const double n = (p.active > 0 ? p.active : p.total) - lookup;
      const double expected = 6 * n + 12.0 * m.layers * seq * m.attention_width();
      EXPECT_NEAR(training_flops_per_token(m, seq) / expected, 1.0, 0.02) << p.file << " seq " << seq;
    }
  }
}

TEST(HfConfig, ActivationBytesFollowTheTensorList) {
  HfModel m = load_hf_model(hf("llama-3-8b.json"));
  // Per token: 4h + 2A + 2Akv + 3f = 4*4096 + 2*4096 + 2*1024 + 3*14336 = 69,632 elements,
  // x s = 4096 tokens x 2 bytes.
  EXPECT_DOUBLE_EQ(decoder_layer_activation_bytes(m, 4096, 2, true, 1), 69632.0 * 4096 * 2);
  // Without selective recompute the probabilities add heads x s^2 x 2 bytes (Korthikanti's
  // 5as/h term is 2as/h + the dropout's 3as/h; these families have no dropout).
  EXPECT_DOUBLE_EQ(decoder_layer_activation_bytes(m, 4096, 2, false, 1) - decoder_layer_activation_bytes(m, 4096, 2, true, 1),
                   32.0 * 4096 * 4096 * 2);
  // Tensor + sequence parallelism splits every tensor.
  EXPECT_DOUBLE_EQ(decoder_layer_activation_bytes(m, 4096, 2, true, 8) * 8, decoder_layer_activation_bytes(m, 4096, 2, true, 1));
}

TEST(HfConfig, GptShapedAttentionKeepsKorthikantisFourteenSbh) {
  // Attention + the two norms of a GPT block (A = Akv = h) keep 11 sbh - sbh (no dropout
  // mask) + 4 sbh = 14 sbh bytes in Korthikanti et al.'s table; our MLP part is SwiGLU's
  // h + 3f. So the layer keeps (14 h + 2 (h + 3 f)) s bytes per sequence.
  HfModel m = from_text(R"({"model_type": "llama", "hidden_size": 1024, "intermediate_size": 2816,
                            "num_hidden_layers": 2, "num_attention_heads": 16, "vocab_size": 1000})");
  EXPECT_DOUBLE_EQ(decoder_layer_activation_bytes(m, 512, 2, true, 1), (14.0 * 1024 + 2 * (1024 + 3 * 2816)) * 512);
}

TEST(HfConfig, UnknownFamilyAndMissingFieldsAreNamed) {
  EXPECT_NE(error_of(R"({"model_type": "gpt2", "hidden_size": 8})").find("unknown family \"gpt2\""), std::string::npos);
  EXPECT_NE(error_of(R"({"hidden_size": 8})").find("model_type"), std::string::npos);
  const std::string no_ffn = error_of(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
                                          "num_attention_heads": 4, "vocab_size": 100})");
  EXPECT_NE(no_ffn.find("config.json"), std::string::npos) << no_ffn;
  EXPECT_NE(no_ffn.find("intermediate_size"), std::string::npos) << no_ffn;
  // MixtralConfig defaults to 8 experts, 2 per token (transformers 5.x), as pipescope does.
  HfModel mixtral = from_text(R"({"model_type": "mixtral", "hidden_size": 64, "intermediate_size": 128,
      "num_hidden_layers": 2, "num_attention_heads": 8, "vocab_size": 100})");
  EXPECT_EQ(mixtral.experts, 8);
  EXPECT_EQ(mixtral.top_k, 2);
  EXPECT_EQ(mixtral.kv_heads, 8);  // MixtralConfig's default
  // An absent num_key_value_heads whose family default exceeds the heads is refused, named.
  const std::string kv_default = error_of(R"({"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128,
      "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100})");
  EXPECT_NE(kv_default.find("num_key_value_heads is absent"), std::string::npos) << kv_default;
  const std::string bad_kv = error_of(R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
      "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 3, "vocab_size": 100})");
  EXPECT_NE(bad_kv.find("num_key_value_heads"), std::string::npos) << bad_kv;
  EXPECT_NE(error_of(R"({"model_type": "llama", "hidden_size": -1})").find("hidden_size"), std::string::npos);
  // 10^5 layers of h = 2^20: ~10^17 parameters, refused before int64 counts overflow.
  const std::string huge = error_of(R"({"model_type": "llama", "hidden_size": 1048576, "intermediate_size": 4194304,
      "num_hidden_layers": 100000, "num_attention_heads": 8, "vocab_size": 100})");
  EXPECT_NE(huge.find("beyond the limit"), std::string::npos) << huge;
}

TEST(HfConfig, FamilyDefaults) {
  // Absent fields take the config classes' defaults (transformers 5.23): GemmaConfig ties,
  // has 16 key/value heads and head_dim 256; Qwen2Config 32 key/value heads, q/k/v biases;
  // LlamaConfig as many key/value heads as heads.
  const char* base = R"("hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 32, "vocab_size": 100)";
  HfModel gemma = from_text(std::string("{\"model_type\": \"gemma\", ") + base + "}");
  EXPECT_TRUE(gemma.tied);
  EXPECT_EQ(gemma.kv_heads, 16);
  EXPECT_EQ(gemma.head_dim, 256);
  HfModel qwen = from_text(std::string("{\"model_type\": \"qwen2\", \"head_dim\": null, ") + base + "}");
  EXPECT_TRUE(qwen.qkv_bias);
  EXPECT_FALSE(qwen.tied);
  EXPECT_EQ(qwen.head_dim, 2);
  EXPECT_EQ(qwen.kv_heads, 32);
  // q, k, v biases: A + 2 Akv = 64 + 128 on top of the four 64 x 64 matrices.
  EXPECT_EQ(count_parameters(qwen).attention, 4 * 64 * 64 + 192);
  HfModel llama = from_text(std::string("{\"model_type\": \"llama\", \"mlp_bias\": true, ") + base + "}");
  EXPECT_EQ(llama.kv_heads, 32);
  EXPECT_EQ(count_parameters(llama).mlp, 3 * 64 * 128 + 2 * 128 + 64);  // gate/up biases f each, down's h
  // mistral ignores attention_bias (its projections have none).
  HfModel mistral = from_text(std::string("{\"model_type\": \"mistral\", \"attention_bias\": true, ") + base + "}");
  EXPECT_FALSE(mistral.qkv_bias);
  EXPECT_FALSE(mistral.output_bias);
}

TEST(HfProfile, ShippedGpuFilesLoadWithEveryDtype) {
  for (const char* name : {"h100-sxm", "h200", "a100-80gb", "b200", "mi300x"}) {
    GpuSpec g = load_gpu_spec(gpu(name));
    for (const char* dtype : {"fp32", "tf32", "bf16", "fp16"}) EXPECT_GT(g.peak_tflops.count(dtype), 0u) << name << " " << dtype;
    EXPECT_EQ(g.node.devices, 8) << name;
    EXPECT_GT(g.hbm_gb_per_s, 1000) << name;
  }
  EXPECT_EQ(find_gpu_file("h200", {"/nonexistent", std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpus"}), gpu("h200"));
  EXPECT_THROW(find_gpu_file("v100", {std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpus"}), InputError);
}

TEST(HfProfile, GpuFileRefusalsNameTheField) {
  auto error_of_gpu = [](const std::string& text) {
    try {
      gpu_spec_from_json(JsonReader::from_text(text, "gpu.json"));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const std::string node = R"("format": "pipescope.hardware", "version": 1, "name": "x", "devices": 8,
      "memory_bytes": 1000, "link": {"bandwidth_gb_per_s": 1, "latency_us": 1})";
  EXPECT_NE(error_of_gpu("{" + node + "}").find("gpu"), std::string::npos);
  EXPECT_NE(error_of_gpu("{" + node + R"(, "gpu": {"peak_dense_tflops": {}, "hbm_gb_per_s": 1}})").find("peak_dense_tflops"),
            std::string::npos);
  EXPECT_NE(error_of_gpu("{" + node + R"(, "gpu": {"peak_dense_tflops": {"bf16": -1}, "hbm_gb_per_s": 1}})").find("bf16"),
            std::string::npos);
  EXPECT_NE(error_of_gpu("{" + node + R"(, "gpu": {"peak_dense_tflops": {"bf16": 1}}})").find("hbm_gb_per_s"), std::string::npos);
  GpuSpec ok = gpu_spec_from_json(JsonReader::from_text("{" + node + R"(, "gpu": {"peak_dense_tflops": {"bf16": 1}, "hbm_gb_per_s": 2}})", "gpu.json"));
  EXPECT_DOUBLE_EQ(ok.collective_gb_per_s, 1.0);  // defaults to the node's link
}

TEST(HfProfile, LayerTimesAreFlopsOverAchievedPeak) {
  HfModel m = load_hf_model(hf("llama-3-8b.json"));
  GpuSpec g = load_gpu_spec(gpu("h100-sxm"));
  HfProfileOptions o;
  o.sequence = 4096;
  o.efficiency = 0.5;
  Profile p = make_hf_profile(m, g, o);
  ASSERT_EQ(p.num_layers(), 34);
  EXPECT_EQ(p.device_name.rfind("NVIDIA H100 SXM5 80GB", 0), 0u) << p.device_name;  // one GPU, not the node
  EXPECT_EQ(p.layers[0].name, "model.embed_tokens");
  EXPECT_EQ(p.layers[1].name, "model.layers.0");
  EXPECT_EQ(p.layers[33].name, "lm_head");
  const LayerFlops f = decoder_layer_flops(m, 4096);
  const double flops_per_ms = 989.4e12 * 0.5 / 1e3;
  EXPECT_NEAR(p.forward_ms(1, 2.0), 2 * f.forward() / flops_per_ms, 1e-9);
  EXPECT_NEAR(p.backward_weight_ms(5, 1.0), f.backward_weight() / flops_per_ms, 1e-9);
  // Tensor parallelism 2: half the compute plus two all-reduces of s h x 2 bytes, each
  // 2 (t-1)/t x bytes / 450 GB/s + 2 (t-1) x 5 us.
  o.tensor_parallel = 2;
  Profile tp = make_hf_profile(m, g, o);
  const double allreduce = 4096.0 * 4096 * 2 / 450e6 + 2 * 5e-3;
  EXPECT_NEAR(tp.forward_ms(1, 1.0), f.forward() / 2 / flops_per_ms + 2 * allreduce, 1e-9);
  EXPECT_EQ(tp.layers[1].parameter_bytes, (count_parameters(m).attention + count_parameters(m).mlp) / 2 * 2 + 2 * 4096 * 2);
}

// weight_grad_bytes, tensor by tensor: per token the two RMSNorm inputs 2h, the QKV
// input h, o_proj's input A and the MLP's input h, down_proj's input f: 2*4096 + 4096 +
// 4096 + 4096 + 14336 = 34,816 elements of the 69,632 kept (x s = 4096 x 2 bytes).
TEST(HfProfile, WeightGradBytesAreTheWeightedLayersInputs) {
  HfModel m = load_hf_model(hf("llama-3-8b.json"));
  EXPECT_DOUBLE_EQ(decoder_layer_weight_grad_bytes(m, 4096, 2, 1), 34816.0 * 4096 * 2);
  HfProfileOptions o;
  o.sequence = 4096;
  const Profile p = make_hf_profile(m, load_gpu_spec(gpu("h100-sxm")), o);
  EXPECT_EQ(p.weight_grad_bytes(1, 2.0), int64_t{2} * 34816 * 4096 * 2);
  EXPECT_EQ(p.activation_bytes(1, 1.0), int64_t{69632} * 4096 * 2);
  // The head's W reads the final norm's and its own input, not the fp32 logits.
  EXPECT_EQ(p.weight_grad_bytes(33, 1.0), int64_t{2} * 4096 * 4096 * 2);
}

// optimizer_ms: Adam in place moves (3 + 2 x 2) x parameter bytes (reads weights,
// gradients, two moments; writes weights and moments) at the GPU file's HBM bandwidth.
// A Llama-3-8B decoder layer: 2 x 4096^2 + 2 x 4096 x 1024 + 3 x 4096 x 14336 + 2 x 4096
// = 218,112,000 parameters, 436,224,000 bytes in bf16; 7 x that = 3,053,568,000 bytes
// over 3,350 GB/s (H100 SXM) = 0.911512836 ms.
TEST(HfProfile, OptimizerTimeIsAdamsBytesOverTheHbmBandwidth) {
  HfModel m = load_hf_model(hf("llama-3-8b.json"));
  HfProfileOptions o;
  o.sequence = 4096;
  const Profile p = make_hf_profile(m, load_gpu_spec(gpu("h100-sxm")), o);
  ASSERT_TRUE(p.has_optimizer_time());
  EXPECT_EQ(p.layers[1].parameter_bytes, 436224000);
  EXPECT_NEAR(p.layers[1].optimizer_ms, 0.9115128358, 1e-9);
  // profile synth gpt (h = 2048): a block's 12 h^2 + 13 h = 50,358,272 parameters, 100,716,544
  // bytes; 7 x that over the H200's 4,800 GB/s = 0.146878293 ms.
  GptSpec g;
  g.layers = 1;
  const Profile gpt = make_gpt_profile(g);
  EXPECT_EQ(gpt.layers[1].parameter_bytes, 100716544);
  EXPECT_NEAR(gpt.layers[1].optimizer_ms, 0.1468782933, 1e-9);
  EXPECT_NEAR(adam_step_ms(1000000, 1.0), 7.0, 1e-12);  // 7 MB at 1 GB/s
}

TEST(HfProfile, RandomConfigsProfileParametersSumToTheCount) {
  // Property: at t = 1 the profile's parameter bytes are 2 x the count, plus one V x h
  // copy for a tied head (the last stage holds its own copy of the embedding).
  const uint64_t seed = 20261130;
  std::mt19937_64 rng(seed);
  GpuSpec g = load_gpu_spec(gpu("a100-80gb"));
  for (int trial = 0; trial < 40; ++trial) {
    std::uniform_int_distribution<int> small(1, 8);
    const int kv = small(rng), group = small(rng), head_dim = 16 * small(rng);
    const bool moe = trial % 3 == 0;
    Json c = {{"model_type", moe ? "mixtral" : (trial % 3 == 1 ? "qwen2" : "gemma")},
              {"hidden_size", 64 * small(rng)}, {"intermediate_size", 96 * small(rng)},
              {"num_hidden_layers", small(rng)}, {"num_attention_heads", kv * group},
              {"num_key_value_heads", kv}, {"head_dim", head_dim}, {"vocab_size", 1000 * small(rng)}};
    if (moe) {
      c["num_local_experts"] = 8;
      c["num_experts_per_tok"] = 1 + trial % 2;
    }
    HfModel m = from_text(c.dump());
    HfProfileOptions o;
    o.sequence = 256;
    Profile p = make_hf_profile(m, g, o);
    int64_t bytes = 0;
    for (const LayerProfile& l : p.layers) bytes += l.parameter_bytes;
    const int64_t expected = 2 * (count_parameters(m).total() + (m.tied ? m.vocabulary * m.hidden : 0));
    EXPECT_EQ(bytes, expected) << "seed " << seed << " trial " << trial << " " << c.dump();
  }
}

TEST(HfProfile, RefusesWhatItCannotSplit) {
  HfModel m = load_hf_model(hf("llama-3-8b.json"));
  GpuSpec g = load_gpu_spec(gpu("h100-sxm"));
  HfProfileOptions o;
  o.tensor_parallel = 3;  // does not divide 32 heads
  EXPECT_THROW(make_hf_profile(m, g, o), InputError);
  o.tensor_parallel = 1;
  o.dtype = Dtype::Fp16;
  g.peak_tflops.erase("fp16");  // a GPU file without a dense fp16 peak
  EXPECT_THROW(make_hf_profile(m, g, o), InputError);
  EXPECT_FALSE(dtype_from_name("fp8"));  // the CLI refuses it naming --dtype
  o.dtype = Dtype::Bf16;
  o.efficiency = 1.5;
  EXPECT_THROW(make_hf_profile(m, g, o), InputError);
}

TEST(HfProfile, TensorParallelHardwareCountsGroups) {
  GpuSpec g = load_gpu_spec(gpu("h100-sxm"));
  Hardware hw = tensor_parallel_hardware(g, 64, 8);
  EXPECT_EQ(hw.devices, 8);
  EXPECT_EQ(hw.devices_per_node, 1);  // one group per node: groups talk over InfiniBand
  EXPECT_EQ(hw.name.rfind("64x NVIDIA H100 SXM5 80GB", 0), 0u) << hw.name;
  EXPECT_DOUBLE_EQ(hw.link_between(0, 1).bandwidth_gb_per_s, 50.0);
  Hardware tp2 = tensor_parallel_hardware(g, 64, 2);
  EXPECT_EQ(tp2.devices, 32);
  EXPECT_EQ(tp2.devices_per_node, 4);
  EXPECT_DOUBLE_EQ(tp2.link_between(0, 1).bandwidth_gb_per_s, 450.0);
  EXPECT_THROW(tensor_parallel_hardware(g, 60, 8), InputError);
}
