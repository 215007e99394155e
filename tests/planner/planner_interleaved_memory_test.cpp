// The memory-aware cut under interleaving: when the time-only cut of an interleaved
// candidate does not fit, cuts with each stage's own peak capped at a share of the device
// memory (at most limit / v is safe: a device's peak is at most its chunks' peaks summed)
// get their chance beside the least-memory cut. Across a search on tight memory, no
// candidate may be slower or fit less often than without it, some interleaved candidate
// must gain, and each plan must simulate to its reported step (on a 24-layer GPT, 8
// devices of 16 GiB: interleaved v=2 K=4 r=2 M=32 takes 371.758 ms against 580.579 ms with
// the least-memory cut).
#include <gtest/gtest.h>

#include "core/cost_model.h"
#include "interop/synth_profile.h"
#include "planner/search.h"
#include "sim/simulator.h"

namespace pipescope {
namespace {

SearchRequest tight(bool aware, int64_t memory) {
  SearchRequest q;
  GptSpec g;
  g.layers = 22;
  q.profile = make_gpt_profile(g);
  q.profile_path = "gpt.json";
  q.hardware.name = "8 devices";
  q.hardware.devices = 8;
  q.hardware.memory_bytes = memory;
  q.hardware.link = {100.0, 5.0};
  q.devices = 8;
  q.batch = 64;
  q.threads = 1;
  q.schedules = {ScheduleKind::Interleaved};
  q.memory_aware_interleaving = aware;
  return q;
}

TEST(InterleavedMemory, NeverWorseAndSometimesFitsOrGains) {
  int gains = 0, checked = 0;
  for (int64_t mib : {3072, 8192, 16384, 24576}) {
    SCOPED_TRACE(std::to_string(mib) + " MiB");
    const SearchRequest q = tight(true, mib << 20);
    const SearchResult on = search_plans(q);
    const SearchResult off = search_plans(tight(false, mib << 20));
    std::printf("%lld MiB: fitting on %zu off %zu of %zu\n", (long long)mib, on.ranking.size(), off.ranking.size(), on.candidates.size());
    ASSERT_EQ(on.candidates.size(), off.candidates.size());
    for (std::size_t i = 0; i < on.candidates.size(); ++i) {
      const Candidate& a = on.candidates[i];
      const Candidate& b = off.candidates[i];
      if (b.fits) {
        EXPECT_TRUE(a.fits) << a.label();
        EXPECT_LE(a.step_ns, b.step_ns) << a.label();
      }
      if (a.fits && (!b.fits || a.step_ns < b.step_ns)) {
        ++gains;
        std::printf("  %s: %.3f ms (without: %s)\n", a.label().c_str(), static_cast<double>(a.step_ns) / 1e6,
                    b.fits ? std::to_string(static_cast<double>(b.step_ns) / 1e6).c_str() : "does not fit");
        const StepReport again = simulate(make_schedule(a.plan.schedule_spec()), build_cost_model(q.profile, a.plan, q.hardware),
                                          q.hardware, {.record_timeline = false, .model = ""});
        EXPECT_EQ(again.step_ns, a.step_ns) << a.label();
        EXPECT_TRUE(again.fits()) << a.label();
        ++checked;
      }
    }
  }
  std::printf("interleaved candidates that fit or got faster: %d\n", gains);
  EXPECT_GT(gains, 0);
  EXPECT_EQ(checked, gains);
}

}  // namespace
}  // namespace pipescope
