// Builds Korthikanti et al.'s Tables 4 and 5 with llm/'s time model (see
// korthikanti_table5.h): the paper's shapes and layouts, nothing fitted per row.
#include "experiments/korthikanti_table5.h"

#include <iomanip>
#include <sstream>

namespace pipescope {

TransformerShape korthikanti_shape(const KorthikantiModel& m) {
  TransformerShape s;
  s.name = std::string("gpt-") + m.name;
  s.layers = m.layers, s.hidden = m.hidden, s.heads = m.heads;
  s.vocabulary = kKorthikantiVocabulary, s.sequence = kKorthikantiSequence;
  return s;
}

ParallelLayout korthikanti_layout(const KorthikantiModel& m, bool present_work) {
  ParallelLayout l;
  l.t = m.t, l.p = m.p, l.v = m.v, l.d = 1;
  l.micro_batch = m.micro_batch;
  l.microbatches = m.global_batch / m.micro_batch;
  l.sequence_parallel = present_work;
  l.recompute = present_work ? Recompute::Selective : Recompute::Full;
  l.attention = AttentionKernel::Unfused;  // the paper's Megatron-LM of 2022: the scores as GEMMs, kept
  return l;
}

std::vector<KorthikantiRow> korthikanti_table5(const GpuModel& gpu) {
  std::vector<KorthikantiRow> rows;
  for (const KorthikantiModel& m : kKorthikantiModels) {
    const TransformerShape shape = korthikanti_shape(m);
    rows.push_back({m, step_time(shape, korthikanti_layout(m, false), gpu),
                    step_time(shape, korthikanti_layout(m, true), gpu)});
  }
  return rows;
}

std::vector<KorthikantiLayer> korthikanti_table4(const GpuModel& gpu) {
  const KorthikantiModel& m = kKorthikantiModels[0];
  std::vector<KorthikantiLayer> out;
  for (const KorthikantiLayerRow& row : kKorthikantiTable4) {
    ParallelLayout l = korthikanti_layout(m, false);
    l.sequence_parallel = row.sequence_parallel;
    l.recompute = static_cast<Recompute>(row.recompute);
    out.push_back({row, transformer_layer_time(korthikanti_shape(m), l, gpu)});
  }
  return out;
}

namespace {

std::string percent(double x) {
  std::ostringstream o;
  o << std::showpos << std::fixed << std::setprecision(1) << 100.0 * x << "%";
  return o.str();
}

}  // namespace

std::string korthikanti_markdown(const std::vector<KorthikantiRow>& rows, const std::vector<KorthikantiLayer>& layers) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(2);
  out << "| model | t | p | v | M | full recompute s: paper / ours (error) | SP + selective s: paper / ours (error) |"
         " speed-up paper / ours | MFU paper / ours |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const KorthikantiRow& r : rows) {
    const KorthikantiModel& m = r.paper;
    out << "| " << m.name << " | " << m.t << " | " << m.p << " | " << m.v << " | " << m.global_batch / m.micro_batch
        << " | " << m.full_recompute_s << " / " << r.full_s() << " (" << percent(r.full_error()) << ") | "
        << m.present_work_s << " / " << r.present_s() << " (" << percent(r.present_error()) << ") | "
        << percent(r.paper_speedup()) << " / " << percent(r.speedup()) << " | " << std::setprecision(1)
        << 100.0 * m.present_mfu << "% / " << 100.0 * r.present.mfu << "% |\n"
        << std::setprecision(2);
  }
  out << "\n| model, run | layer F / I / W ms | of F: GEMM / elementwise / TP comm ms | embedding F+B ms | head F+B ms |"
         " optimizer ms | bubble |\n|---|---:|---:|---:|---:|---:|---:|\n";
  for (const KorthikantiRow& r : rows) {
    for (const StepTime* st : {&r.full, &r.present}) {
      const LayerTime& x = st->layer;
      out << "| " << r.paper.name << (st == &r.full ? ", full" : ", SP + selective") << " | " << x.forward_ns / 1e6
          << " / " << x.input_grad_ns / 1e6 << " / " << x.weight_grad_ns / 1e6 << " | " << x.forward_gemm_ns / 1e6
          << " / " << x.forward_memory_ns / 1e6 << " / " << x.forward_comm_ns / 1e6 << " | "
          << st->embedding.total_ns() / 1e6 << " | " << st->head.total_ns() / 1e6 << " | " << st->optimizer_ns / 1e6
          << " | " << st->bubble << " |\n";
    }
  }
  out << "\n| 22B layer (Table 4) | forward ms: paper / ours (error) | backward ms: paper / ours (error) |\n"
         "|---|---:|---:|\n";
  for (const KorthikantiLayer& l : layers) {
    out << "| " << l.paper.experiment << " | " << l.paper.forward_ms << " / " << l.forward_ms() << " ("
        << percent(l.forward_ms() / l.paper.forward_ms - 1.0) << ") | " << l.paper.backward_ms << " / "
        << l.backward_ms() << " (" << percent(l.backward_ms() / l.paper.backward_ms - 1.0) << ") |\n";
  }
  return out.str();
}

}  // namespace pipescope
