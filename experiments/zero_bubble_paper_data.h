// The zero-bubble paper's own settings and numbers: Qi, Wan, Huang, Lin, "Zero Bubble
// Pipeline Parallelism", ICLR 2024 (arXiv:2401.10241), transcribed by hand:
//   - model shapes: Table 3 (layers, attention heads a, hidden size h, sequence length
//     s = 1024, pipeline devices p, micro-batch size b, micro-batch counts m);
//   - per-op times: Table 6, "profiled time of T_F, T_B, T_W and T_comm" (ms, one
//     transformer stage of the setting on A100 80G, T_B the input-gradient pass I);
//   - bubble rates: Table 5, computed by the paper from those times as
//     (cost - m (T_F + T_B + T_W)) / cost, cost the longest stage's execution time.
// The values were transcribed without the PDF at hand. Two checks: a secondary summary
// repeats the 1.5B, m = 24 row (1F1B 24.3%, 1F1B-I 10.6%, ZB-H1 15.9%, ZB-H2 10.8%), and
// the simulator, run with these times, gives Table 5's 1F1B, ZB-H1 and ZB-H2 bubbles to
// within 0.0001 on 11 of the 12 rows (tests/zero_bubble/zero_bubble_paper_test.cpp). On 1.5B at
// m = 64 all three come out 0.001-0.007 lower, so one of that row's times (T_comm, most
// likely) is off. As transcribed, ZB-1p has ZB-H1's bubble on every row. Check against
// the PDF before citing a single number from here.
#pragma once

#include <array>

namespace pipescope {

struct PaperModel {
  const char* name;
  int layers, heads, hidden, sequence, devices, microbatch_size;
};

struct PaperSetting {
  const PaperModel* model;
  int microbatches;
  double forward_ms, input_ms, weight_ms, comm_ms;      // Table 6
  double bubble_1f1b, bubble_zb_h1, bubble_zb_h2;       // Table 5
  double bubble_zb_1p, bubble_zb_2p;                    // Table 5
};

inline constexpr PaperModel kPaper1_5B{"1.5B", 22, 24, 2304, 1024, 8, 6};
inline constexpr PaperModel kPaper6_2B{"6.2B", 30, 64, 4096, 1024, 8, 3};
inline constexpr PaperModel kPaper14_6B{"14.6B", 46, 40, 5120, 1024, 16, 1};
inline constexpr PaperModel kPaper28_3B{"28.3B", 62, 48, 6144, 1024, 32, 1};

// clang-format off
inline constexpr std::array<PaperSetting, 12> kPaperSettings{{
  //             m    T_F     T_B     T_W     T_comm   1F1B    ZB-H1   ZB-H2   ZB-1p   ZB-2p
  {&kPaper1_5B,  24, 18.522, 18.086,  9.337, 0.601, 0.2431, 0.1585, 0.1083, 0.1585, 0.0433},
  {&kPaper1_5B,  32, 18.513, 18.043,  9.322, 0.626, 0.1985, 0.1242, 0.0837, 0.1242, 0.0039},
  {&kPaper1_5B,  64, 18.546, 18.097,  9.363, 0.552, 0.1240, 0.0674, 0.0444, 0.0674, 0.0026},
  {&kPaper6_2B,  24, 29.718, 29.444, 19.927, 0.527, 0.2347, 0.1323, 0.0698, 0.1323, 0.0029},
  {&kPaper6_2B,  32, 29.802, 29.428, 19.530, 0.577, 0.1898, 0.1045, 0.0559, 0.1045, 0.0022},
  {&kPaper6_2B,  64, 29.935, 29.621, 19.388, 0.535, 0.1091, 0.0554, 0.0294, 0.0554, 0.0010},
  {&kPaper14_6B, 48, 11.347, 11.248,  8.132, 0.377, 0.2552, 0.1397, 0.0672, 0.1397, 0.0066},
  {&kPaper14_6B, 64, 11.307, 11.254,  8.101, 0.379, 0.2082, 0.1088, 0.0516, 0.1088, 0.0054},
  {&kPaper14_6B,128, 11.325, 11.308,  8.109, 0.378, 0.1251, 0.0576, 0.0266, 0.0576, 0.0028},
  {&kPaper28_3B, 96, 10.419, 10.207,  7.715, 0.408, 0.2646, 0.1421, 0.0641, 0.1421, 0.0038},
  {&kPaper28_3B,128, 10.408, 10.204,  7.703, 0.408, 0.2168, 0.1106, 0.0490, 0.1106, 0.0029},
  {&kPaper28_3B,256, 10.402, 10.248,  7.698, 0.460, 0.1352, 0.0594, 0.0257, 0.0594, 0.0018},
}};
// clang-format on

// Table 10: ZB-2p's measured throughput (samples per GPU per second, A100 80G) with
// optimizer post-validation and with a synchronized optimizer step (an all-reduce before
// it), on each model's Table 3 setting. Also in shared/reference/zero-bubble-measured.md.
struct PaperPostValidation {
  const PaperModel* model;
  double post_validation, synchronized;
};
inline constexpr std::array<PaperPostValidation, 4> kPaperPostValidation{{
    {&kPaper1_5B, 14.5, 13.11},
    {&kPaper6_2B, 4.32, 4.00},
    {&kPaper14_6B, 1.81, 1.68},
    {&kPaper28_3B, 0.99, 0.91},
}};

}  // namespace pipescope
