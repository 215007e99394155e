// Korthikanti, Casper, Lym, McAfee, Andersch, Shoeybi, Catanzaro, "Reducing Activation
// Recomputation in Large Transformer Models" (MLSys 2023, arXiv:2205.05198), transcribed:
//   - model shapes and layouts: Table 3 (heads, hidden, layers, t, p, GPUs, global and
//     micro-batch size) and section 6 (interleaved schedule with 3 chunks for 175B and
//     530B; s = 2048, vocabulary 51200; DGX A100 80GB nodes on Selene: NVLink/NVSwitch,
//     eight 200 Gb/s HDR InfiniBand HCAs per node; no data parallelism);
//   - iteration times: Table 5 ("Full Recompute" and "Present Work" = sequence parallel +
//     selective recompute, seconds), with its MFU column;
//   - per-layer times: Table 4 (one transformer layer of the 22B model, ms).
// Where each number was read: a Markdown copy of the paper's text in the search corpus
// (tables 3, 4 and 5 as HTML tables, sections 6-6.3); Table 5's eight times also in
// calculon-ai/calculon, calculon/megatron/validation.py (kProfile, "reported here:
// https://arxiv.org/pdf/2205.05198.pdf"); the 530B figures of the abstract (MFU 54.2% vs
// 42.1% at 2240 GPUs, "29% faster") are the 8-way data-parallel run of section 6.3
// (37.83 s -> 39.15 s), not Table 5's 280-GPU row. Checked against a second copy only
// for Table 5's times (calculon); Table 4's five rows and the MFU column come from the
// one Markdown copy, and the per-layer sentence of section 6.2 repeats 7.7 -> 7.2 ms and
// the 1.3 ms / 7.6 ms recompute overheads.
#pragma once

#include <array>

namespace pipescope {

struct KorthikantiModel {
  const char* name;
  int heads, hidden, layers, t, p, v, gpus, global_batch, micro_batch;
  double full_recompute_s, present_work_s;  // Table 5
  double present_mfu;                       // Table 5, present work
};

inline constexpr int kKorthikantiSequence = 2048;
inline constexpr int kKorthikantiVocabulary = 51200;

// clang-format off
inline constexpr std::array<KorthikantiModel, 4> kKorthikantiModels{{
  //  name     a    h      L    t  p   v  GPUs  GBS  b   full    present  MFU
  {"22B",     64,  6144,  48,  8,  1, 1,    8,   4, 4,  1.42,   1.10,   0.415},
  {"175B",    96, 12288,  96,  8,  8, 3,   64,  64, 1, 18.13,  13.75,   0.514},
  {"530B",   128, 20480, 105,  8, 35, 3,  280, 280, 1, 49.05,  37.83,   0.560},
  {"1T",     160, 25600, 128,  8, 64, 1,  512, 512, 1, 94.42,  71.49,   0.563},
}};
// clang-format on

// Table 4: one layer of the 22B model (b = 4, t = 8), forward and backward ms.
struct KorthikantiLayerRow {
  const char* experiment;
  bool sequence_parallel;
  int recompute;  // 0 none, 1 selective, 2 full (core/recompute.h's Recompute order)
  double forward_ms, backward_ms;
};

inline constexpr std::array<KorthikantiLayerRow, 5> kKorthikantiTable4{{
  {"baseline no recompute", false, 0, 7.7, 11.9},
  {"sequence parallelism", true, 0, 7.2, 11.8},
  {"baseline with recompute", false, 2, 7.7, 19.5},
  {"selective recompute", false, 1, 7.7, 13.2},
  {"selective + sequence", true, 1, 7.2, 13.1},
}};

}  // namespace pipescope
