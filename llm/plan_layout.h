// The "layout" object of a v2 plan file (schemas/plan.schema.json): the parallel layout
// of an LLM-scale job, in Megatron-LM's words. core/plan.h keeps it as raw JSON
// (core never includes llm/); this reader gives it meaning. Invariant: layout_from_json
// reads what layout_to_json writes, field for field; a bad field throws InputError
// naming the file and its JSON path ("plan.json: layout.t: expected ..."). "schedule" is
// always written (the resolved kind); a file without it (written before it) reads as
// Megatron's default, 1f1b or interleaved by v. plan_layout also holds the layout to
// the plan beside it (p, v, schedule, d, microbatches, micro_batch, recompute), so every
// command that reads a plan refuses the same disagreements, naming "layout.<field>".
//   std::optional<ParallelLayout> l = plan_layout(load_plan("plan.json"));
#pragma once

#include <optional>

#include "core/json_reader.h"
#include "core/plan.h"
#include "core/profile.h"
#include "llm/layout.h"

namespace pipescope {

Json layout_to_json(const ParallelLayout& layout);
ParallelLayout layout_from_json(const JsonReader& reader);
// The plan's layout (nullopt for a plan without one, every v1 plan), read and checked
// against the plan (check_layout_against_plan). Throws InputError naming the plan file.
std::optional<ParallelLayout> plan_layout(const Plan& plan);
// What the plan says itself, its layout must say too: p = its positions, v = its chunks,
// the schedule its kind (a schedule file is not compared), d = its replicas per stage
// (unless the plan holds one of d pipelines: one replica per stage, as llm-plan writes it),
// microbatches = its M, micro_batch x M x replicas = its batch_size, recompute "full"
// when the plan re-materialises, and overlap_p2p true exactly when the plan's p2p (when it
// states one) is "overlapped". Throws InputError(plan.source, "layout.<field>", ...).
// The checks that need the profile (t, layers_per_chunk) are interop/export_plan.cpp's.
void check_layout_against_plan(const ParallelLayout& layout, const Plan& plan);
// The layout against the model the plan's profile states (a version 2 plan has no job):
// check_model_against_layout (llm/layout_check.h), what every framework checks at launch
// (t dividing the heads, KV groups and FFN; ep the experts, and no ep on a dense model; cp
// the sequence), on transformer_shape_of(profile, t) (the vocabulary padded for t, as
// Megatron pads it); the cut is the plan's stages. A profile that states no shape (measured layers) is not checked. `validate`,
// `simulate --plan` and `run --plan` call it; an export adds its framework's own checks.
// Throws InputError naming the plan file, the layout's field and the Megatron flag.
void check_layout_against_profile(const ParallelLayout& layout, const Plan& plan, const Profile& profile);

// The field of a plan file that a check of validate_layout / validate_job speaks of, from
// the Megatron-LM flag its message opens with: "--tensor-model-parallel-size: ..." ->
// "layout.t", "--num-attention-heads: ..." -> "job.model.shape.heads" (`model` is the JSON
// path of the model's shape: "job.model.shape" in a version 3 plan, "" where the plan has
// no job; with it "--memory-headroom: ..." -> "job.cluster.memory_headroom_bytes"). "" when
// the message opens with no flag the table knows.
std::string plan_field_of_check(const std::string& message, const std::string& model);
// The check's message as the plan file's error: "<source>: <field>[ <where>]: <message>",
// the message's head left out where it is the field's own name (layers_per_chunk).
InputError plan_check_error(const std::string& source, const std::string& message, const std::string& model,
                            const std::string& where = "");

}  // namespace pipescope
