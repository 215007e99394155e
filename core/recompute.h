// Recompute: what a job's backward re-runs of its forward, one enum for the profile world
// (plans, the search, reports, exports, the GUI) and the LLM world (llm/layout.h), with its
// one name table. Megatron's --recompute-granularity: none keeps every activation; selective
// re-runs a transformer layer's attention core (its scores are not kept); full keeps a
// layer's (a stage's) input only and re-runs its whole forward before its backward.
// Invariant: the profile world runs None and Full only. There Full is a schedule's R ops
// (core/schedule.h's Schedule::r_ops: F keeps only the stage input, R(s,m) re-runs it
// before the first backward): r_ops == (recompute == Recompute::Full). Selective is a
// property of a profile's own layers (profile synth --recompute-granularity), never of a plan.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace pipescope {

enum class Recompute : uint8_t { None, Selective, Full };
std::string to_string(Recompute recompute);  // "none", "selective", "full"
std::optional<Recompute> recompute_from_name(const std::string& name);

// The profile world's op-level form: whether the schedule holds R ops (Full). Selective
// throws InputError naming `where` (a flag or a file's field): a profile's stages re-run
// whole or not at all.
bool has_r_ops(Recompute recompute, const std::string& where = "recompute");
inline Recompute recompute_from_r_ops(bool r_ops) { return r_ops ? Recompute::Full : Recompute::None; }

}  // namespace pipescope
