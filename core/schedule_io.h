// Schedule files: pipescope.schedule JSON (version 2 written, 1 read) and PyTorch's
// pipelining CSV, read and written. A file describes one step: the stage -> position map
// and each pipeline position's op order; what the ops mean is core/op_rules.h's. Every
// reader returns a Schedule that validate_schedule accepts, or throws InputError naming
// the file, the rank (row or position_ops index) and the action.
//
// JSON: {"format": "pipescope.schedule", "version": 2, "name": "1f1b", "positions": K,
//        "microbatches": M, "recompute": false, "stage_position": [0, 1, ...],
//        "position_ops": [[{"kind": "F", "stage": 0, "microbatch": 0}, ...], ...]}
//   version 1 named the same keys "devices", "stage_device" and "device_ops".
//   kind is one of F B I W R (core/schedule.h's op_letter).
// CSV (torch.distributed.pipelining's compute-only format, one row per rank, one action
//   per cell, e.g. `0F3,1I2,1W2`): stage index, computation letter, micro-batch index.
//   The stage -> rank map is the row each stage's actions appear in.
//   Schedule s = load_schedule_file("vshape.csv");
#pragma once

#include <string>

#include "core/json_reader.h"
#include "core/schedule.h"

namespace pipescope {

inline constexpr int kScheduleFileVersion = 2;  // what schedule_to_json writes

Json schedule_to_json(const Schedule& schedule);
Schedule schedule_from_json(const JsonReader& reader);
// A "weight_update" value ("flush", "stash", "double-buffer"), in a schedule file or a
// report; fails naming the field otherwise.
WeightUpdate weight_update_from_json(const JsonReader& field);

std::string schedule_to_csv(const Schedule& schedule);
// `source` names the file in errors; `name` becomes Schedule::name.
Schedule schedule_from_csv(const std::string& text, const std::string& source);

// Reads either format (JSON when the first non-blank character is '{') and validates it.
Schedule load_schedule_file(const std::string& path);

}  // namespace pipescope
