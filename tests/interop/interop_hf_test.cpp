// Hugging Face configs in: llm/'s parameter count against the published model sizes,
// its training FLOPs per token against 6N + the attention term, the profile's activation
// bytes against Korthikanti et al. 2022 Table 2, the profile against llm_pipeline layer by
// layer (one cost model), the GPU-file reader's refusals, and the config refusals
// (unknown family, missing field) that exit 2.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <random>

#include "core/error.h"
#include "interop/hf_config.h"
#include "interop/hf_profile.h"
#include "interop/synth_profile.h"
#include "llm/layer_time.h"
#include "llm/memory.h"
#include "llm/profile_layers.h"
#include "llm/step_time.h"
#include "tests/support/input_error.h"
#include "tests/support/source_paths.h"

using namespace pipescope;
using pipescope::testing::input_error_of;

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
    const double counted = model_parameters(m.shape).total();
    EXPECT_NEAR(counted / p.total, 1.0, 0.005) << p.file << ": counted " << counted << ", published " << p.total << " (" << p.source << ")";
  }
}

TEST(HfConfig, ExactCountsOfTheDenseLlamaShapes) {
  // Sum of the tensor shapes of Meta-Llama-3-8B's and -70B's safetensors.
  EXPECT_EQ(model_parameters(load_hf_model(hf("llama-3-8b.json")).shape).total(), 8030261248.0);
  EXPECT_EQ(model_parameters(load_hf_model(hf("llama-3-70b.json")).shape).total(), 70553706496.0);
}

TEST(HfConfig, MixtralActiveParametersAreTheTopTwoExperts) {
  const double active = model_parameters(load_hf_model(hf("mixtral-8x7b.json")).shape).active();
  EXPECT_NEAR(active / 12.9e9, 1.0, 0.005) << active;
}

// llm/'s FLOPs (llm/layer_time.h's GEMM shapes) of one training step per token.
static double training_flops_per_token(const TransformerShape& shape) {
  ParallelLayout one;  // t = 1, b = 1, no recompute
  double flops = head_flops(shape, one).total();
  for (int i = 0; i < shape.layers; ++i) flops += transformer_layer_flops(shape, one, is_moe_layer(shape, i)).total();
  return flops / shape.sequence;
}

TEST(HfConfig, TrainingFlopsPerTokenAre6NPlusTheAttentionTerm) {
  // 6 N + 12 L s (heads x head_dim), N the published parameters that multiply: all but
  // the embedding lookup (a tied embedding is the head's matrix, so it stays), top-k
  // experts under MoE. Within 2% (norms, biases and the router are what differs).
  for (int seq : {2048, 4096, 8192}) {
    for (const Published& p : kPublished) {
      TransformerShape s = load_hf_model(hf(p.file)).shape;
      s.sequence = seq;
      const double lookup = s.tied_embeddings ? 0.0 : static_cast<double>(s.vocabulary) * s.hidden;
      const double n = (p.active > 0 ? p.active : p.total) - lookup;
      const double width = static_cast<double>(s.heads) * (s.kv_channels > 0 ? s.kv_channels : s.hidden / s.heads);
      const double expected = 6 * n + 12.0 * s.layers * seq * width;
      EXPECT_NEAR(training_flops_per_token(s) / expected, 1.0, 0.02) << p.file << " seq " << seq;
    }
  }
}

// Llama-3-8B's decoder forward per sample at s = 4096 (h = A = 4096, A_kv = 1024,
// f = 14336), Megatron-LM's convention (Narayanan et al. 2021): QKV 2 s h (A + 2 A_kv) +
// scores and context 4 s^2 A + o_proj 2 s A h + SwiGLU 6 s h f = 2,061,584,302,080.
TEST(HfProfile, DecoderFlopsAreTheClosedForm) {
  HfProfileOptions o;
  o.sequence = 4096;
  const Profile p = make_hf_profile(load_hf_model(hf("llama-3-8b.json")), load_gpu_model(gpu("h100-sxm")), o);
  EXPECT_EQ(p.layers[1].spec["forward_flops_per_sample"].get<double>(), 2061584302080.0);
  // No GEMM runs faster than the bf16 peak: the forward takes at least FLOPs / 989.4 TFLOP/s.
  EXPECT_GT(p.forward_ms(1, 1.0), 2061584302080.0 / 989.4e12 * 1e3);
}

// Table 2 of Korthikanti et al. (2022) with Megatron's 18 + 4 f / h for the 34
// (llm/memory.h), per layer and sample at s = 4096, h = 4096, f = 14336: selective
// recompute keeps s b h (18 + 14) = 536,870,912 bytes; without it unfused attention's scores
// add 5 a s^2 b = 2,684,354,560 (a fused kernel keeps its log-sum-exp only); t = 8 with sequence parallelism splits all of it 8 ways.
// Full (whole stages re-run) is a plan's recompute, not a profile's layers: refused.
TEST(HfProfile, ActivationBytesAreKorthikantisTable2) {
  const HfModel m = load_hf_model(hf("llama-3-8b.json"));
  const GpuModel g = load_gpu_model(gpu("h100-sxm"));
  HfProfileOptions o;
  o.sequence = 4096;
  o.batch_sizes = {1};
  EXPECT_EQ(make_hf_profile(m, g, o).activation_bytes(1, 1.0), 536870912);
  o.recompute = Recompute::None;  // flash attention: only the log-sum-exp, 4 a s b = 524,288 bytes
  EXPECT_EQ(make_hf_profile(m, g, o).activation_bytes(1, 1.0), 536870912 + 524288);
  o.attention = AttentionKernel::Unfused;
  EXPECT_EQ(make_hf_profile(m, g, o).activation_bytes(1, 1.0), 536870912 + 2684354560);
  o.attention = AttentionKernel::Flash;
  o.recompute = Recompute::Selective;
  o.tensor_parallel = 8;
  EXPECT_EQ(make_hf_profile(m, g, o).activation_bytes(1, 1.0), 536870912 / 8);
  o.recompute = Recompute::Full;  // whole stages re-run: a plan's recompute, not a profile's layers
  EXPECT_THROW(make_hf_profile(m, g, o), InputError);
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
  EXPECT_EQ(mixtral.shape.experts, 8);
  EXPECT_EQ(mixtral.shape.moe_topk, 2);
  EXPECT_EQ(mixtral.shape.kv_heads, 8);  // MixtralConfig's default
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

// The numerics an export sets (HfNumerics): as the config states them, absent ones unset,
// and a field of the wrong type named.
TEST(HfConfig, NumericsAreTheConfigsAndBadOnesAreNamed) {
  const HfModel llama = load_hf_model(std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/hf/llama-3-70b.json");
  EXPECT_EQ(llama.numerics.rope_theta, std::optional<double>(500000.0));
  EXPECT_EQ(llama.numerics.norm_epsilon, std::optional<double>(1e-5));
  EXPECT_FALSE(llama.numerics.initializer_range);
  EXPECT_FALSE(llama.numerics.rope_scaling);
  EXPECT_EQ(llama.numerics.hidden_act, "silu");
  EXPECT_EQ(llama.numerics.max_position_embeddings, 8192);
  const std::string base = R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
      "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100, )";
  const HfModel scaled = from_text(base + R"("rope_scaling": {"rope_type": "llama3", "factor": 8.0}})");
  EXPECT_TRUE(scaled.numerics.rope_scaling);
  EXPECT_EQ(scaled.numerics.rope_scaling_type, "llama3");
  EXPECT_EQ(scaled.numerics.rope_scaling_factor, std::optional<double>(8.0));
  const std::string bad = error_of(base + R"("rope_theta": "big"})");
  EXPECT_NE(bad.find("config.json: rope_theta"), std::string::npos) << bad;
}

TEST(HfConfig, FamilyDefaults) {
  // Absent fields take the config classes' defaults (transformers 5.23): GemmaConfig ties,
  // has 16 key/value heads and head_dim 256; Qwen2Config 32 key/value heads, q/k/v biases;
  // LlamaConfig as many key/value heads as heads.
  const char* base = R"("hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 32, "vocab_size": 100)";
  HfModel gemma = from_text(std::string("{\"model_type\": \"gemma\", ") + base + "}");
  EXPECT_TRUE(gemma.shape.tied_embeddings);
  EXPECT_EQ(gemma.shape.kv_heads, 16);
  EXPECT_EQ(gemma.shape.kv_channels, 256);
  HfModel qwen = from_text(std::string("{\"model_type\": \"qwen2\", \"head_dim\": null, ") + base + "}");
  EXPECT_TRUE(qwen.shape.qkv_bias);
  EXPECT_FALSE(qwen.shape.tied_embeddings);
  EXPECT_EQ(qwen.shape.kv_channels, 0);  // hidden / heads = 2, the default
  EXPECT_EQ(qwen.shape.kv_heads, 32);
  // A layer: q, k, v, o 4 x 64 x 64, q/k/v biases A + 2 Akv = 64 + 128, SwiGLU 3 x 64 x 128,
  // two RMSNorms 2 x 64.
  EXPECT_EQ(layer_parameters(qwen.shape, false).total(), 4 * 64 * 64 + 192 + 3 * 64 * 128 + 128);
  HfModel llama = from_text(std::string("{\"model_type\": \"llama\", \"mlp_bias\": true, ") + base + "}");
  EXPECT_EQ(llama.shape.kv_heads, 32);
  // + gate/up biases f each, down's h; no attention biases.
  EXPECT_EQ(layer_parameters(llama.shape, false).total(), 4 * 64 * 64 + 3 * 64 * 128 + 2 * 128 + 64 + 128);
  HfModel attention = from_text(std::string("{\"model_type\": \"llama\", \"attention_bias\": true, ") + base + "}");
  EXPECT_EQ(layer_parameters(attention.shape, false).total(), 4 * 64 * 64 + 192 + 64 + 3 * 64 * 128 + 128);  // q, k, v, o biases
  // mistral ignores attention_bias (its projections have none).
  HfModel mistral = from_text(std::string("{\"model_type\": \"mistral\", \"attention_bias\": true, ") + base + "}");
  EXPECT_FALSE(mistral.shape.qkv_bias);
  EXPECT_FALSE(mistral.shape.output_bias);
}

TEST(HfProfile, ShippedGpuFilesLoadWithEveryDtype) {
  for (const char* name : {"h100-sxm", "h200", "a100-80gb", "b200", "mi300x"}) {
    GpuModel g = load_gpu_model(gpu(name));
    for (const char* dtype : {"fp32", "tf32", "bf16", "fp16"}) EXPECT_GT(g.peak_dense_tflops.count(dtype), 0u) << name << " " << dtype;
    EXPECT_EQ(g.peak_tflops, g.peak_dense_tflops.at("bf16")) << name;
    EXPECT_EQ(g.node.devices, 8) << name;
    EXPECT_GT(g.hbm_gb_per_s, 1000) << name;
  }
  EXPECT_EQ(find_gpu_file("h200", {"/nonexistent", std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpus"}), gpu("h200"));
  EXPECT_THROW(find_gpu_file("v100", {std::string(PIPESCOPE_SOURCE_DIR) + "/profiles/gpus"}), InputError);
}

TEST(HfProfile, GpuFileRefusalsNameTheField) {
  auto error_of_gpu = [](const std::string& text) {
    try {
      gpu_model_from_json(JsonReader::from_text(text, "gpu.json"));
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
  const std::string no_bf16 = error_of_gpu("{" + node + R"(, "gpu": {"peak_dense_tflops": {"fp32": 1}, "hbm_gb_per_s": 1}})");
  EXPECT_NE(no_bf16.find("gpu.json: gpu.peak_dense_tflops.bf16"), std::string::npos) << no_bf16;
  EXPECT_NE(error_of_gpu("{" + node + R"(, "gpu": {"peak_dense_tflops": {"bf16": 1}}})").find("hbm_gb_per_s"), std::string::npos);
  GpuModel ok = gpu_model_from_json(JsonReader::from_text("{" + node + R"(, "gpu": {"peak_dense_tflops": {"bf16": 1}, "hbm_gb_per_s": 2}})", "gpu.json"));
  EXPECT_DOUBLE_EQ(ok.collective_gb_per_s, 1.0);  // defaults to the node's link
}

// The one cost model: `profile synth --hf-config` and llm_pipeline (what llm-time
// simulates) state the same layer, ns for ns and byte for byte, for the same shape,
// layout (t, sequence parallel, selective recompute, micro-batch b) and GPU file. A second
// formula for a time, a stash, a parameter or the optimizer step in either fails here.
// The three configs are untied, so the heads' parameters agree too (a tied head counts
// its copy of the embedding in the profile, for the pipelines the planner cuts).
TEST(HfProfile, EqualsLlmPipelineLayerByLayer) {
  const GpuModel g = load_gpu_model(gpu("h100-sxm"));
  for (const char* file : {"llama-3-8b.json", "llama-3-70b.json", "mixtral-8x7b.json"}) {
    for (int t : {1, 8}) {
      const HfModel m = load_hf_model(hf(file));
      HfProfileOptions o;
      o.sequence = 4096;
      o.tensor_parallel = t;
      o.batch_sizes = {1, 2};
      const Profile p = make_hf_profile(m, g, o);
      TransformerShape shape = m.shape;
      shape.sequence = 4096;
      ASSERT_FALSE(shape.tied_embeddings) << file;
      for (std::size_t bi = 0; bi < o.batch_sizes.size(); ++bi) {
        const double b = o.batch_sizes[bi];
        const LlmPipeline pipe = llm_pipeline(shape, hf_profile_layout(o, static_cast<int>(b)), g);
        ASSERT_EQ(pipe.profile.num_layers(), p.num_layers()) << file;
        for (int i = 0; i < p.num_layers(); ++i) {
          const LayerProfile& want = pipe.profile.layers[static_cast<std::size_t>(i)];
          const LayerProfile& got = p.layers[static_cast<std::size_t>(i)];
          const std::string where = std::string(file) + " t " + std::to_string(t) + " b " + std::to_string(b) + " layer " + got.name;
          EXPECT_EQ(got.forward_ms[bi], want.forward_ms[0]) << where;
          EXPECT_EQ(got.backward_input_ms[bi], want.backward_input_ms[0]) << where;
          EXPECT_EQ(got.backward_weight_ms[bi], want.backward_weight_ms[0]) << where;
          EXPECT_EQ(got.backward_ms[bi], want.backward_ms[0]) << where;
          EXPECT_EQ(got.activation_bytes[bi], want.activation_bytes[0]) << where;
          EXPECT_EQ(got.weight_grad_bytes[bi], want.weight_grad_bytes[0]) << where;
          if (i + 1 < p.num_layers()) {  // the head sends the loss
            EXPECT_EQ(got.output_bytes[bi], want.output_bytes[0]) << where;
          }
          EXPECT_EQ(got.parameter_bytes, want.parameter_bytes) << where;
          EXPECT_EQ(got.optimizer_ms, want.optimizer_ms) << where;
        }
      }
    }
  }
}

// llm/profile_layers.h: every analytic profile writes its decoder layers' shape through
// decoder_layer_spec and transformer_shape_of reads it back. Over 300 random shapes
// (dense and MoE, GQA or not, any head dimension, SwiGLU / RMSNorm / each bias on or off,
// tied or not), both writers -- llm_pipeline (llm-plan --out's profile, "transformer_block")
// and make_hf_profile (profile synth --hf-config, "hf_decoder_layer") -- give back the very
// shape: every field the decoder and head specs carry. Before the one writer, the
// transformer_block spec dropped the attention-output and MLP biases and the MoE FFN
// widths, and a GPT-style shape read from an HF profile came back as SwiGLU + RMSNorm.
// (The name is the profile's model; the embedding's position table and dropout mask are
// not decoder facts, so the shapes here keep their defaults.)
static void expect_same_shape(const TransformerShape& got, const TransformerShape& want, const std::string& where) {
  EXPECT_EQ(got.layers, want.layers) << where;
  EXPECT_EQ(got.hidden, want.hidden) << where;
  EXPECT_EQ(got.heads, want.heads) << where;
  EXPECT_EQ(got.kv_heads, want.kv_heads) << where;
  EXPECT_EQ(got.ffn_hidden, want.ffn_hidden) << where;
  EXPECT_EQ(got.swiglu, want.swiglu) << where;
  EXPECT_EQ(got.bias_linear, want.bias_linear) << where;
  EXPECT_EQ(got.vocabulary, want.vocabulary) << where;
  EXPECT_EQ(got.sequence, want.sequence) << where;
  EXPECT_EQ(got.tied_embeddings, want.tied_embeddings) << where;
  EXPECT_EQ(got.rms_norm, want.rms_norm) << where;
  EXPECT_EQ(got.qkv_bias, want.qkv_bias) << where;
  EXPECT_EQ(got.output_bias, want.output_bias) << where;
  EXPECT_EQ(got.mlp_bias, want.mlp_bias) << where;
  EXPECT_EQ(got.kv_channels, want.kv_channels) << where;
  EXPECT_EQ(got.experts, want.experts) << where;
  EXPECT_EQ(got.moe_topk, want.moe_topk) << where;
  EXPECT_EQ(got.moe_ffn_hidden, want.moe_ffn_hidden) << where;
  EXPECT_EQ(got.moe_layer_frequency, want.moe_layer_frequency) << where;
  EXPECT_EQ(got.shared_expert_ffn_hidden, want.shared_expert_ffn_hidden) << where;
}

TEST(ProfileLayers, ShapeReadBackIsTheShapeWritten) {
  const GpuModel g = load_gpu_model(gpu("h100-sxm"));
  std::mt19937 rng(37);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 300; ++trial) {
    TransformerShape s;
    s.name = "random";
    s.layers = pick(1, 6);
    s.heads = 1 << pick(0, 5);
    const int head_dim = 16 * pick(1, 8);
    s.hidden = s.heads * head_dim;
    if (pick(0, 2) == 0) s.kv_channels = head_dim + 16 * pick(1, 4);  // a head dimension other than h / a
    if (pick(0, 1) == 1) s.kv_heads = s.heads >> pick(0, 3);
    s.swiglu = pick(0, 1) == 1, s.rms_norm = pick(0, 1) == 1, s.bias_linear = pick(0, 1) == 1;
    s.qkv_bias = pick(0, 1) == 1, s.output_bias = pick(0, 1) == 1, s.mlp_bias = pick(0, 1) == 1;
    s.tied_embeddings = pick(0, 1) == 1;
    if (pick(0, 1) == 1) s.ffn_hidden = 64 * pick(1, 64);
    s.vocabulary = 128 * pick(1, 400);  // a multiple of 128: Megatron's padding leaves it as it is at t = 1
    s.sequence = 64 * pick(1, 32);
    if (pick(0, 2) == 0) {
      s.experts = 1 << pick(1, 4);
      s.moe_topk = pick(1, s.experts);
      if (pick(0, 1) == 1) s.moe_ffn_hidden = 64 * pick(1, 32);
      s.moe_layer_frequency = pick(1, 2);
      if (pick(0, 1) == 1) s.shared_expert_ffn_hidden = 64 * pick(1, 32);
    }
    const std::string where = "trial " + std::to_string(trial);
    const Profile planned = llm_pipeline(s, ParallelLayout{}, g).profile;
    std::string why;
    const std::optional<TransformerShape> from_pipeline = transformer_shape_of(planned, 1, &why);
    ASSERT_TRUE(from_pipeline.has_value()) << where << ": " << why;
    expect_same_shape(*from_pipeline, s, where + " (llm_pipeline)");
    HfProfileOptions o;
    o.sequence = s.sequence;
    o.batch_sizes = {1};
    const Profile synthesised = make_hf_profile(HfModel{"llama", "random.json", s, {}}, g, o);
    const std::optional<TransformerShape> from_hf = transformer_shape_of(synthesised, 1, &why);
    ASSERT_TRUE(from_hf.has_value()) << where << ": " << why;
    expect_same_shape(*from_hf, s, where + " (make_hf_profile)");
  }
}

// weight_grad_bytes: llm/memory.h's layer_weight_grad_bytes, the inputs of the layers with
// weights from Table 2's terms: two norm inputs 4 s b h, QKV's and the MLP's inputs 2 s b h
// each, o_proj's 2 s b h and down_proj's 2 s b f: (10 + 2 x 14336 / 4096) s b h = 17 x 4096^2
// = 285,212,672 of the 32 x 4096^2 kept. The head's W reads its input (4 s b h =
// 67,108,864), not the fp32 logits.
TEST(HfProfile, WeightGradBytesAreTheWeightedLayersInputs) {
  HfModel m = load_hf_model(hf("llama-3-8b.json"));
  HfProfileOptions o;
  o.sequence = 4096;
  const Profile p = make_hf_profile(m, load_gpu_model(gpu("h100-sxm")), o);
  EXPECT_EQ(p.weight_grad_bytes(1, 1.0), 285212672);
  EXPECT_EQ(p.weight_grad_bytes(1, 2.0), int64_t{2} * 285212672);
  EXPECT_EQ(p.activation_bytes(1, 1.0), 536870912);
  EXPECT_EQ(p.weight_grad_bytes(33, 1.0), 67108864);
}

// optimizer_ms: llm/step_time.h's optimizer step, Megatron's mixed-precision Adam moving
// 42 bytes per parameter at the HBM bandwidth x memory_efficiency. A Llama-3-8B decoder
// layer: 2 x 4096^2 + 2 x 4096 x 1024 + 3 x 4096 x 14336 + 2 x 4096 = 218,112,000
// parameters (436,224,000 bytes in bf16); 42 x that over 3,350 GB/s x 0.513 (H100 SXM's
// fitted memory_efficiency) = 5,330,484.5 ns, rounded up to 5.330485 ms.
TEST(HfProfile, OptimizerTimeIsAdamsBytesOverTheHbmBandwidth) {
  HfModel m = load_hf_model(hf("llama-3-8b.json"));
  HfProfileOptions o;
  o.sequence = 4096;
  const Profile p = make_hf_profile(m, load_gpu_model(gpu("h100-sxm")), o);
  ASSERT_TRUE(p.has_optimizer_time());
  EXPECT_EQ(p.layers[1].parameter_bytes, 436224000);
  EXPECT_NEAR(p.layers[1].optimizer_ms, 5.330485, 1e-12);
  // profile synth gpt (h = 2048): a block's 12 h^2 + 13 h = 50,358,272 parameters, 100,716,544
  // bytes; adam_step_ms moves 7 x that over the H200's 4,800 GB/s = 0.146878293 ms.
  GptSpec g;
  g.layers = 1;
  const Profile gpt = make_gpt_profile(g);
  EXPECT_EQ(gpt.layers[1].parameter_bytes, 100716544);
  EXPECT_NEAR(gpt.layers[1].optimizer_ms, 0.1468782933, 1e-9);
  EXPECT_NEAR(adam_step_ms(1000000, 1.0), 7.0, 1e-12);  // 7 MB at 1 GB/s
}

// profile synth gpt takes its FLOPs from llm/'s count too: at s = h = 2048 a block's
// forward is Narayanan et al.'s (SC 2021, eq. 3) 24 s h^2 + 4 s^2 h = 28 x 2^33 =
// 240,518,168,576 FLOPs per sample, its W the linears' 24 s h^2, its I the linears plus
// the attention core twice, 24 s h^2 + 8 s^2 h, and with selective recompute the core's
// forward once more (+ 4 s^2 h); each over 989 TFLOP/s x 0.45.
TEST(HfProfile, SynthGptFlopsAreNarayanansClosedForm) {
  GptSpec g;
  g.layers = 1;
  g.batch_sizes = {1, 2};
  const double s = 2048, h = 2048, rate = 989e12 * 0.45 / 1e3;  // FLOPs per ms
  const double dense = 24 * s * h * h, attn = 4 * s * s * h;
  EXPECT_EQ(dense + attn, 240518168576.0);
  const Profile p = make_gpt_profile(g);
  EXPECT_NEAR(p.forward_ms(1, 1.0) / ((dense + attn) / rate), 1.0, 1e-12);
  EXPECT_NEAR(p.forward_ms(1, 2.0) / (2 * (dense + attn) / rate), 1.0, 1e-12);
  EXPECT_NEAR(p.backward_weight_ms(1, 1.0) / (dense / rate), 1.0, 1e-12);
  EXPECT_NEAR(p.backward_input_ms(1, 1.0) / ((dense + 2 * attn) / rate), 1.0, 1e-12);
  g.recompute = Recompute::Selective;
  EXPECT_NEAR(make_gpt_profile(g).backward_input_ms(1, 1.0) / ((dense + 3 * attn) / rate), 1.0, 1e-12);
  // Its shape is llm/'s: Megatron's GPT (LayerNorm, GeLU 4 h, biases, learned positions).
  const TransformerShape shape = gpt_shape(GptSpec{});
  EXPECT_FALSE(shape.swiglu || shape.rms_norm);
  EXPECT_TRUE(shape.bias_linear && shape.learned_positions && shape.tied_embeddings);
  EXPECT_FALSE(shape.embedding_dropout);  // --embedding-dropout 0: no mask
}

TEST(HfProfile, RandomConfigsProfileParametersSumToTheCount) {
  // Property: at t = 1 the profile's parameter bytes are 2 x the count, plus one V x h
  // copy for a tied head (the last stage holds its own copy of the embedding).
  const uint64_t seed = 20261130;
  std::mt19937_64 rng(seed);
  GpuModel g = load_gpu_model(gpu("a100-80gb"));
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
    const TransformerShape& s = m.shape;
    const double expected = 2 * (model_parameters(s).total() + (s.tied_embeddings ? static_cast<double>(s.vocabulary) * s.hidden : 0));
    EXPECT_EQ(static_cast<double>(bytes), expected) << "seed " << seed << " trial " << trial << " " << c.dump();
  }
}

TEST(HfProfile, RefusesWhatItCannotSplit) {
  HfModel m = load_hf_model(hf("llama-3-8b.json"));
  GpuModel g = load_gpu_model(gpu("h100-sxm"));
  HfProfileOptions o;
  o.tensor_parallel = 3;  // does not divide 32 heads
  EXPECT_THROW(make_hf_profile(m, g, o), InputError);
  o.tensor_parallel = 1;
  o.dtype = Dtype::Fp16;
  g.peak_dense_tflops.erase("fp16");  // a GPU file without a dense fp16 peak
  EXPECT_NE(input_error_of([&] { make_hf_profile(m, g, o); }).find("gpu.peak_dense_tflops: no entry for \"fp16\""),
            std::string::npos);
  EXPECT_FALSE(dtype_from_name("fp8"));  // the CLI refuses it naming --dtype
  o.dtype = Dtype::Fp32;  // the cost model counts 2-byte activations and operands
  EXPECT_NE(input_error_of([&] { make_hf_profile(m, g, o); }).find("--dtype"), std::string::npos);
  o.dtype = Dtype::Bf16;
  o.batch_sizes = {1.5};  // a micro-batch is whole samples
  EXPECT_NE(input_error_of([&] { make_hf_profile(m, g, o); }).find("--batch-sizes"), std::string::npos);
}

TEST(HfProfile, TensorParallelHardwareCountsGroups) {
  GpuModel g = load_gpu_model(gpu("h100-sxm"));
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

// hf_profile_job inverts make_hf_profile: every shipped config on every shipped GPU file,
// at t 1, 2 and 8, selective recompute on and off, gives back the model (its vocabulary
// unpadded, its name without " tpN"), the GPU file's name and the options, and
// regenerating from them gives the very profile. One number changed (a measured or
// edited profile) is no GPU file's: nullopt, with the reason; a profile of another kind
// (`profile synth --kind gpt`) is nullopt with no reason.
TEST(HfProfile, JobOfAProfileIsTheModelGpuAndOptionsThatWroteIt) {
  int checked = 0;
  for (const char* config : {"llama-3-8b", "mistral-7b", "qwen2-7b", "gemma-7b", "mixtral-8x7b"}) {
    const HfModel model = load_hf_model(hf(std::string(config) + ".json"));
    for (const char* file : {"h100-sxm", "a100-80gb", "mi300x"}) {
      const GpuModel g = load_gpu_model(gpu(file));
      for (int t : {1, 2, 8}) {
        if (model.shape.kv_heads % t != 0 || model.shape.vocabulary % t != 0) continue;
        HfProfileOptions o;
        o.sequence = 2048, o.tensor_parallel = t, o.batch_sizes = {1, 4};
        o.recompute = t != 2 ? Recompute::Selective : Recompute::None;
        Profile p = make_hf_profile(model, g, o);
        p.source = "p.json";
        std::string why = "(unset)";
        const std::optional<HfProfileJob> job = hf_profile_job(p, &why);
        ASSERT_TRUE(job.has_value()) << config << " " << file << " t " << t << ": " << why;
        EXPECT_EQ(job->gpu, file);
        EXPECT_EQ(job->model.family, model.family);
        EXPECT_EQ(job->model.shape.name, model.shape.name);
        EXPECT_EQ(job->model.shape.vocabulary, model.shape.vocabulary);
        EXPECT_EQ(job->options.tensor_parallel, t);
        EXPECT_EQ(job->options.recompute, o.recompute);
        EXPECT_EQ(job->options.sequence, 2048);
        EXPECT_EQ(profile_to_json(make_hf_profile(job->model, job->gpu_model, job->options)), profile_to_json(p));
        ++checked;

        p.layers[2].backward_weight_ms[1] += 1e-6;
        EXPECT_FALSE(hf_profile_job(p, &why).has_value());
        EXPECT_EQ(why, "p.json: its costs are not those `profile synth --hf-config` writes for " + model.shape.name +
                           " on any GPU file (" + p.device_name + "): a measured or edited profile");
      }
    }
  }
  EXPECT_GE(checked, 30);
  const Profile gpt = make_gpt_profile({});
  std::string why;
  EXPECT_FALSE(hf_profile_job(gpt, &why).has_value());
  EXPECT_EQ(why, "");
}
