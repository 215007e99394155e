// The zero-bubble paper's Table 5 on its own settings (experiments/zero_bubble_paper_data.h):
// each setting is p uniform stages with the paper's T_F, T_B (I), T_W and a link
// latency T_comm per hop; a stage's stash per micro-batch is layers/p transformer
// layers of M_F = 34 h s b + 5 a s^2 b bytes, of which W still needs M_W = 32 h s b
// after I (the paper's section 3). zb-auto is searched under a byte budget of p M_F
// (the paper's ZB-1p) and 2 p M_F (ZB-2p) per device and simulated for several steps
// with optimizer post-validation; its bubble is the paper's, from the steady-state step:
// (step - m (T_F + T_B + T_W)) / step.
//   std::vector<PaperRow> rows = zero_bubble_paper_table();
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cost_model.h"
#include "core/hardware.h"
#include "experiments/zero_bubble_paper_data.h"

namespace pipescope {

// One transformer layer's stash per micro-batch (M_F) and what W keeps of it (M_W).
int64_t paper_layer_stash_bytes(const PaperModel& model);
int64_t paper_layer_weight_grad_bytes(const PaperModel& model);

// The setting's cost model (one stage per device, layers/p layers each) and hardware.
CostModel paper_costs(const PaperSetting& setting);
Hardware paper_hardware(const PaperSetting& setting);

struct PaperRow {
  PaperSetting paper;
  double zb_1p = 0, zb_2p = 0;             // zb-auto at p M_F and 2 p M_F, post-validation
  double zb_1p_span = 0, zb_2p_span = 0;   // the same from one step's longest device span
  double bound_2p = 0;                     // the cap bound's bubble at 2 p M_F (no order is below it)
  double ours_1f1b = 0, ours_zb_h1 = 0, ours_zb_h2 = 0;  // the handcrafted orders, post-validation
  std::string start_1p, start_2p;          // the candidate each search started from
};

// `steps` (>= 3) steps are simulated; the steady state is the median step-to-step time.
PaperRow zero_bubble_paper_row(const PaperSetting& setting, int steps = 4);
std::vector<PaperRow> zero_bubble_paper_table(int steps = 4);
std::string paper_markdown(const std::vector<PaperRow>& rows);

// The paper's measured comparison (its Tables 4, 6 and 10) predicted from its Table 6
// times alone, no constant fitted to what it measured. Every schedule runs as the
// paper's runtime runs it: Megatron-LM with the zero-bubble runtime
// (examples/pretrain_zero_bubble.sh passes --enable-zb-runtime to every schedule), whose
// sends and receives of one step are posted together and waited before the op that
// consumes them (P2p::Batched); 1F1B-I with one transformer layer per chunk
// (--num-layers-per-virtual-pipeline-stage 1, the embedding and head counted as layers:
// (layers + 2) / p chunks per device); ZB-1p, ZB-2p and ZB-V with optimizer
// post-validation (the script's default under fp16), 1F1B and 1F1B-I with a synchronized
// step. Throughput is m b / (steady-state step x p), samples per GPU per second.
struct PaperThroughput {
  PaperSetting paper;
  int interleaved_chunks = 0;
  double f1b1 = 0, f1b1_i = 0, zb_1p = 0, zb_2p = 0, zb_v = 0;
  double zb_2p_synchronized = 0;  // Table 10's baseline: the same order, a synchronized step
};

PaperThroughput zero_bubble_paper_throughput(const PaperSetting& setting, int steps = 4);
std::vector<PaperThroughput> zero_bubble_paper_throughputs(int steps = 4);

// What the paper measured, as statements (shared/reference/zero-bubble-measured.md), each
// checked on the prediction: how many settings agree out of how many.
struct PaperClaim {
  std::string claim;
  int agree = 0, of = 0;
  bool holds = false;  // "every": all agree; "most": more than half
  std::string detail;  // the settings that disagree, or the figures compared
};
std::vector<PaperClaim> paper_claims(const std::vector<PaperThroughput>& rows);
std::string throughput_markdown(const std::vector<PaperThroughput>& rows);

}  // namespace pipescope
