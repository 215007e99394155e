// Schedule files: pipescope.schedule JSON (v2 written, v1 read) and torch.distributed.pipelining's CSV
// (docs/schedules-as-data.md, Schedule files). Invariant: a reader either returns a schedule that
// validate_schedule accepts or throws InputError naming the file and where in it (a
// JSON path, or a CSV rank, step and cell); no table sized by a number read from the
// file is allocated before the ops listed prove that number plausible.
#include "core/schedule_io.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace pipescope {

namespace {

constexpr std::size_t kMaxScheduleFileBytes = std::size_t{256} << 20;
constexpr int64_t kMaxCsvIndex = 1'000'000'000;  // stage and micro-batch numbers in a CSV cell

std::string op_text(OpKind kind, int stage, int microbatch) {
  return std::string(1, op_letter(kind)) + "(stage " + std::to_string(stage) + ", micro-batch " +
         std::to_string(microbatch) + ")";
}

// The file's base name without extension ("runs/v.csv" -> "v"); Schedule::name.
std::string base_name(const std::string& source) {
  std::string stem = std::filesystem::path(source).stem().string();
  return stem.empty() ? "custom" : stem;
}

// Each (stage, micro-batch) needs an F and a B or I. When the ops listed are too few
// for S x M, names the first missing one (the validator's order: stage, then
// micro-batch) before the validator would size its tables by S x M.
void check_enough_ops(const Schedule& s, const std::string& source) {
  const int64_t S = s.stages(), M = s.microbatches();
  if (S < 1 || M < 1 || 2 * S * M <= static_cast<int64_t>(s.num_ops())) return;
  std::vector<int64_t> forwards, backwards;  // keys stage * M + micro-batch
  for (const auto& ops : s.position_ops) {
    for (const Op& op : ops) {
      if (op.stage < 0 || op.stage >= S || op.microbatch < 0 || op.microbatch >= M) continue;
      int64_t key = op.stage * M + op.microbatch;
      if (op.kind == OpKind::Forward) forwards.push_back(key);
      if (op.kind == OpKind::Backward || op.kind == OpKind::BackwardInput) backwards.push_back(key);
    }
  }
  const std::string where = (source.empty() ? "" : source + ": ") + "schedule: ";
  auto first_gap = [](std::vector<int64_t>& keys) {
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    int64_t k = 0;
    while (k < static_cast<int64_t>(keys.size()) && keys[k] == k) ++k;
    return k;
  };
  int64_t f = first_gap(forwards), b = first_gap(backwards);
  if (f < S * M && f <= b) {
    throw InputError(where + op_text(OpKind::Forward, static_cast<int>(f / M), static_cast<int>(f % M)) +
                     " is missing");
  }
  throw InputError(where + op_text(OpKind::Backward, static_cast<int>(b / M), static_cast<int>(b % M)) +
                   " is missing (give B, or I and W)");
}

// ---------------------------------------------------------------- JSON

// The keys that hold a schedule's positions, by file version: version 2 says what they
// are; version 1 (still read) called a position a device.
struct ScheduleKeys {
  const char* positions;
  const char* stage_position;
  const char* position_ops;
};
constexpr ScheduleKeys kScheduleKeys[] = {{}, {"devices", "stage_device", "device_ops"},
                                          {"positions", "stage_position", "position_ops"}};

Op read_json_op(const JsonReader& item, int stages, int microbatches) {
  JsonReader kind = item["kind"];
  std::string letter = kind.as_string();
  Op op{OpKind::Forward, 0, 0};
  if (letter.size() != 1 || !parse_op_letter(letter[0], op.kind)) {
    kind.fail("expected one of F, B, I, W, R, got \"" + letter + "\"");
  }
  op.stage = static_cast<int>(item["stage"].as_int(0, stages - 1));
  op.microbatch = static_cast<int>(item["microbatch"].as_int(0, microbatches - 1));
  return op;
}

}  // namespace

Json schedule_to_json(const Schedule& schedule) {
  Json ops = Json::array();
  for (const auto& list : schedule.position_ops) {
    Json row = Json::array();
    for (const Op& op : list) {
      row.push_back({{"kind", std::string(1, op_letter(op.kind))}, {"stage", op.stage}, {"microbatch", op.microbatch}});
    }
    ops.push_back(std::move(row));
  }
  const ScheduleKeys& keys = kScheduleKeys[kScheduleFileVersion];
  Json out = {{"format", "pipescope.schedule"}, {"version", kScheduleFileVersion},
              {"name", schedule.name},          {keys.positions, schedule.positions()},
              {"microbatches", schedule.num_microbatches}, {"recompute", schedule.r_ops},
              {keys.stage_position, schedule.stage_position},     {keys.position_ops, std::move(ops)}};
  if (schedule.asynchronous()) {  // flushed schedules keep the keys out: files stay as they were
    out["weight_update"] = to_string(schedule.weight_update);
    out["steps"] = schedule.steps;
  }
  return out;
}

WeightUpdate weight_update_from_json(const JsonReader& field) {
  const std::string w = field.as_string();
  for (WeightUpdate u : {WeightUpdate::Flush, WeightUpdate::Stash, WeightUpdate::DoubleBuffer}) {
    if (w == to_string(u)) return u;
  }
  field.fail("expected \"flush\", \"stash\" (pipedream) or \"double-buffer\" (2bw), got \"" + w + "\"");
}

namespace {

// The file's version (1 or 2); a version 2 file that still names a key as version 1
// did fails naming that key, so a half-converted file is never read as something else.
int schedule_file_version(const JsonReader& r) {
  const int version = r.expect_format("pipescope.schedule", kScheduleFileVersion);
  const ScheduleKeys &now = kScheduleKeys[version], &v1 = kScheduleKeys[1];
  const std::pair<const char*, const char*> renamed[] = {
      {v1.positions, now.positions}, {v1.stage_position, now.stage_position}, {v1.position_ops, now.position_ops}};
  for (const auto& [old_key, key] : renamed) {
    if (version == 1 || !r.has(old_key)) continue;
    std::string what = "version " + std::to_string(version);
    what += " calls this \"";
    what += key;
    what += "\" (\"";
    what += old_key;
    what += "\" is version 1's name)";
    r[old_key].fail(what);
  }
  return version;
}

}  // namespace

Schedule schedule_from_json(const JsonReader& r) {
  const ScheduleKeys& keys = kScheduleKeys[schedule_file_version(r)];
  Schedule s;
  s.name = r.has("name") ? r["name"].as_string() : base_name(r.source());
  const int K = static_cast<int>(r[keys.positions].as_int(1, kMaxDevices));
  s.num_microbatches = static_cast<int>(r["microbatches"].as_int(1, kMaxScheduleOps));
  s.r_ops = r["recompute"].as_bool();
  if (r.has("weight_update")) s.weight_update = weight_update_from_json(r["weight_update"]);
  if (r.has("steps")) s.steps = static_cast<int>(r["steps"].as_int(1, s.num_microbatches));
  JsonReader map = r[keys.stage_position];
  if (map.size() == 0) map.fail("expected at least one stage");
  if (map.size() > static_cast<std::size_t>(kMaxScheduleOps)) map.fail("too many stages");
  for (const JsonReader& item : map.items()) s.stage_position.push_back(static_cast<int>(item.as_int(0, K - 1)));
  JsonReader lists = r[keys.position_ops];
  if (lists.size() != static_cast<std::size_t>(K)) {
    lists.fail("expected " + std::to_string(K) + " op lists (one per position, as \"" + keys.positions + "\" says), got " +
               std::to_string(lists.size()));
  }
  for (const JsonReader& list : lists.items()) {
    std::vector<Op>& ops = s.position_ops.emplace_back();
    ops.reserve(list.size());
    for (const JsonReader& item : list.items()) ops.push_back(read_json_op(item, s.stages(), s.num_microbatches));
  }
  check_enough_ops(s, r.source());
  validate_schedule(s, r.source());
  return s;
}

// ---------------------------------------------------------------- CSV

namespace {

std::string_view strip(std::string_view s) {
  const char* blanks = " \t\r\n\f\v";
  std::size_t a = s.find_first_not_of(blanks);
  if (a == std::string_view::npos) return {};
  return s.substr(a, s.find_last_not_of(blanks) - a + 1);
}

// Python's csv.reader (excel dialect) as far as PyTorch's files need it: ',' separates
// cells, a '"' opening a cell quotes it ("" inside is one quote; elsewhere a '"' is a
// plain character), "\n", "\r\n" or "\r" ends a row.
// Blank rows at the end of the file are dropped; a blank row before a row of
// actions is a rank with no actions, as it is for PyTorch.
std::vector<std::vector<std::string>> split_csv(std::string_view text, const std::string& source) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // UTF-8 byte order mark
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string cell;
  bool quoted = false, row_started = false, cell_start = true;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c != '"') cell += c;
      else if (i + 1 < text.size() && text[i + 1] == '"') cell += text[++i];
      else quoted = false;
    } else if (c == '"' && cell_start) {
      quoted = row_started = true;
      cell_start = false;
    } else if (c == ',') {
      row.push_back(std::move(cell));
      cell.clear();
      row_started = cell_start = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (row_started || !cell.empty()) row.push_back(std::move(cell));
      rows.push_back(std::move(row));
      row.clear();
      cell.clear();
      row_started = false;
      cell_start = true;
    } else {
      cell += c;
      row_started = true;
      cell_start = false;
    }
  }
  if (quoted) {
    throw InputError(source, "", "rank " + std::to_string(rows.size()) + " (row, 0-based): a quote is never closed");
  }
  if (row_started || !cell.empty()) {
    row.push_back(std::move(cell));
    rows.push_back(std::move(row));
  }
  auto blank = [](const std::vector<std::string>& r) {
    return std::all_of(r.begin(), r.end(), [](const std::string& c) { return strip(c).empty(); });
  };
  while (!rows.empty() && blank(rows.back())) rows.pop_back();
  return rows;
}

// One parsed action: a compute op, or an action this reader ignores.
struct Action {
  bool compute = false;
  Op op{OpKind::Forward, 0, 0};
};

const char* const kIgnoredActions[] = {"SEND_F", "RECV_F", "SEND_B", "RECV_B", "UNSHARD", "RESHARD", "REDUCE_GRAD"};
const char* const kExpected =
    "expected <stage><action><micro-batch> with action F, I, B or W (e.g. 0F3), one of SEND_F RECV_F "
    "SEND_B RECV_B UNSHARD RESHARD REDUCE_GRAD (ignored), or (a;b)OVERLAP_F_B";

// Reads the digits at `pos`; false when there are none or the number is implausible.
bool read_index(std::string_view text, std::size_t& pos, int& value) {
  std::size_t start = pos;
  int64_t v = 0;
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
    v = v * 10 + (text[pos++] - '0');
    if (v > kMaxCsvIndex) return false;
  }
  value = static_cast<int>(v);
  return pos > start;
}

// Parses one action `[stage][type][micro-batch]` ("2F0", "1UNSHARD", "3SEND_F1"); the
// error says what is wrong, the caller says where.
Action parse_action(std::string_view text) {
  std::size_t pos = 0;
  int stage = 0, microbatch = -1;
  if (!read_index(text, pos, stage)) {
    throw InputError(pos < text.size() && text[pos] >= '0' && text[pos] <= '9' ? "stage number is implausibly large"
                                                                               : kExpected);
  }
  std::size_t type_start = pos;
  while (pos < text.size() && ((text[pos] >= 'A' && text[pos] <= 'Z') || text[pos] == '_')) ++pos;
  std::string type(text.substr(type_start, pos - type_start));
  const bool has_microbatch = pos < text.size();
  if (has_microbatch && (!read_index(text, pos, microbatch) || pos != text.size())) {
    throw InputError(pos < text.size() && text[pos] >= '0' && text[pos] <= '9'
                         ? "micro-batch number is implausibly large"
                         : std::string(kExpected));
  }
  Action a;
  if (type.size() == 1 && type != "R" && parse_op_letter(type[0], a.op.kind)) {
    if (!has_microbatch) {
      throw InputError("a compute action needs a micro-batch number (e.g. " + std::string(text) + "0)");
    }
    a.compute = true;
    a.op.stage = stage;
    a.op.microbatch = microbatch;
    return a;
  }
  for (const char* ignored : kIgnoredActions) {
    if (type == ignored) return a;
  }
  if (type == "R") {
    throw InputError("R (recompute) cannot be expressed in PyTorch's CSV; use a pipescope.schedule JSON file");
  }
  if (type.empty()) throw InputError(kExpected);
  throw InputError("unknown action \"" + type + "\"; " + kExpected);
}

// The actions of one cell, in order: "" none, "0F3" one, "(0F7;7B3)OVERLAP_F_B" two.
std::vector<Action> parse_cell(std::string_view cell) {
  cell = strip(cell);
  if (cell.empty()) return {};  // an idle slot: PyTorch writes None as an empty cell
  if (cell.front() != '(') return {parse_action(cell)};
  std::size_t close = cell.find(')');
  if (close == std::string_view::npos) throw InputError("a '(' is never closed; " + std::string(kExpected));
  if (cell.substr(close + 1) != "OVERLAP_F_B") {
    throw InputError("expected OVERLAP_F_B after the parenthesised actions, got \"" +
                     std::string(cell.substr(close + 1)) + "\"");
  }
  std::vector<Action> out;
  std::string_view inside = cell.substr(1, close - 1);
  while (true) {
    std::size_t semi = inside.find(';');
    std::string_view part = strip(inside.substr(0, semi));
    if (part.find('(') != std::string_view::npos) throw InputError("overlapped actions cannot nest");
    if (!part.empty()) out.push_back(parse_action(part));
    if (semi == std::string_view::npos) break;
    inside.remove_prefix(semi + 1);
  }
  if (out.empty()) throw InputError("OVERLAP_F_B with no actions inside its parentheses");
  return out;
}

// Schedule::overlapped_backwards's order: (stage, micro-batch).
bool overlap_order(const Op& a, const Op& b) {
  return a.stage != b.stage ? a.stage < b.stage : a.microbatch < b.microbatch;
}

std::string at_cell(const std::string& source, int rank, int step, const std::string& cell) {
  return source + ": rank " + std::to_string(rank) + " (row, 0-based), step " + std::to_string(step) +
         " (cell, 0-based) \"" + cell + "\"";
}

// PyTorch's own order rules (its _validate_schedule), checked per cell so the message
// can point at it: an op appears once, B or I after the F, W after the I.
void check_csv_order(const Schedule& s, const std::vector<std::vector<int>>& refs,
                     const std::vector<std::vector<std::string>>& rows, const std::string& source) {
  const int64_t S = s.stages(), M = s.microbatches();
  std::vector<int> first(static_cast<std::size_t>(4 * S * M), -1);  // kind x stage x mb -> step
  for (int d = 0; d < s.positions(); ++d) {
    for (std::size_t i = 0; i < s.position_ops[d].size(); ++i) {
      const Op& op = s.position_ops[d][i];
      const int step = refs[d][i];
      auto slot = [&](OpKind k) -> int& {
        return first[(static_cast<std::size_t>(k) * S + op.stage) * M + op.microbatch];
      };
      const std::string where = at_cell(source, d, step, rows[d][step]);
      const std::string name = op_text(op.kind, op.stage, op.microbatch);
      if (slot(op.kind) >= 0) {
        throw InputError(where + ": " + name + " appears twice (first at step " + std::to_string(slot(op.kind)) + ")");
      }
      bool backward = op.kind == OpKind::Backward || op.kind == OpKind::BackwardInput;
      if (backward && slot(OpKind::Forward) < 0) throw InputError(where + ": " + name + " comes before its F");
      if (op.kind == OpKind::BackwardWeight && slot(OpKind::BackwardInput) < 0) {
        throw InputError(where + ": " + name + " comes before its I");
      }
      slot(op.kind) = step;
    }
  }
}

}  // namespace

Schedule schedule_from_csv(const std::string& text, const std::string& source) {
  std::vector<std::vector<std::string>> rows = split_csv(text, source);
  if (rows.empty()) {
    throw InputError(source, "", "empty file: expected one row of actions per rank (PyTorch's pipelining CSV)");
  }
  if (rows.size() > static_cast<std::size_t>(kMaxDevices)) {
    throw InputError(source, "", "more than " + std::to_string(kMaxDevices) + " rows (ranks)");
  }
  Schedule s;
  s.name = base_name(source);
  s.position_ops.resize(rows.size());
  std::vector<std::vector<int>> refs(rows.size());
  std::map<int, std::pair<int, int>> stage_rank;  // stage -> (rank, step) where first seen
  int max_microbatch = -1;
  for (int rank = 0; rank < static_cast<int>(rows.size()); ++rank) {
    for (int step = 0; step < static_cast<int>(rows[rank].size()); ++step) {
      std::vector<Action> actions;
      try {
        actions = parse_cell(rows[rank][step]);
      } catch (const InputError& e) {
        throw InputError(at_cell(source, rank, step, rows[rank][step]) + ": " + e.what());
      }
      // DualPipe's F&B pair, "(aFm;bBn)OVERLAP_F_B": the B runs overlapped with the F before it.
      const bool pair = strip(rows[rank][step]).substr(0, 1) == "(" && actions.size() == 2 && actions[0].compute &&
                        actions[1].compute && actions[0].op.kind == OpKind::Forward &&
                        actions[1].op.kind == OpKind::Backward;
      if (pair) s.overlapped_backwards.push_back(actions[1].op);
      for (const Action& a : actions) {
        if (!a.compute) continue;
        auto [it, added] = stage_rank.try_emplace(a.op.stage, rank, step);
        if (!added && it->second.first != rank) {
          throw InputError(at_cell(source, rank, step, rows[rank][step]) + ": stage " + std::to_string(a.op.stage) +
                           " is on rank " + std::to_string(rank) + " here and on rank " +
                           std::to_string(it->second.first) + " (row " + std::to_string(it->second.first) +
                           ", step " + std::to_string(it->second.second) + "); a stage runs on one rank");
        }
        max_microbatch = std::max(max_microbatch, a.op.microbatch);
        s.position_ops[rank].push_back(a.op);
        refs[rank].push_back(step);
      }
    }
  }
  if (stage_rank.empty()) throw InputError(source, "", "no compute action (F, B, I or W) in any row");
  int expected = 0;
  for (const auto& [stage, where] : stage_rank) {
    if (stage != expected) {
      throw InputError(source, "", "stage " + std::to_string(expected) +
                                       " has no compute action in any row (stages up to " +
                                       std::to_string(stage_rank.rbegin()->first) + " appear)");
    }
    s.stage_position.push_back(where.first);
    ++expected;
  }
  s.num_microbatches = max_microbatch + 1;
  std::sort(s.overlapped_backwards.begin(), s.overlapped_backwards.end(), overlap_order);
  check_enough_ops(s, source);
  check_csv_order(s, refs, rows, source);
  validate_schedule(s, source);
  return s;
}

std::string schedule_to_csv(const Schedule& schedule) {
  const std::string where = "schedule \"" + schedule.name + "\": ";
  if (schedule.r_ops) {
    throw InputError(where + "re-materialisation (R ops) cannot be expressed in PyTorch's CSV; write JSON instead");
  }
  if (schedule.asynchronous()) {
    throw InputError(where + "an asynchronous schedule (weight_update " + to_string(schedule.weight_update) +
                     ") cannot be expressed in PyTorch's CSV, whose schedules all flush; write JSON instead");
  }
  std::string out;
  for (int d = 0; d < schedule.positions(); ++d) {
    const auto& ops = schedule.position_ops[d];
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].kind == OpKind::Recompute) {
        throw InputError(where + "device " + std::to_string(d) + ", op " + std::to_string(i) +
                         ": R (recompute) cannot be expressed in PyTorch's CSV; write JSON instead");
      }
      auto cell = [](const Op& op) { return std::to_string(op.stage) + op_letter(op.kind) + std::to_string(op.microbatch); };
      const bool pair = i + 1 < ops.size() && ops[i].kind == OpKind::Forward && ops[i + 1].kind == OpKind::Backward &&
                        std::binary_search(schedule.overlapped_backwards.begin(), schedule.overlapped_backwards.end(),
                                           ops[i + 1], overlap_order);
      if (i > 0) out += ',';
      if (pair) {  // PyTorch's ScheduleDualPipeV writes its F&B pairs so
        // Appended piece by piece: "(" + ... concatenation trips GCC 12's -Wrestrict false positive.
        out += '(';
        out += cell(ops[i]);
        out += ';';
        out += cell(ops[i + 1]);
        out += ")OVERLAP_F_B";
        ++i;
      } else {
        out += cell(ops[i]);
      }
    }
    out += '\n';
  }
  return out;
}

Schedule load_schedule_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(path, "", "is a folder, expected a schedule file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open file");
  auto too_large = [&] {
    return InputError(path, "", "file is larger than " + std::to_string(kMaxScheduleFileBytes) +
                                    " bytes, the limit for schedule files");
  };
  if (std::filesystem::is_regular_file(path, ec)) {
    std::uintmax_t bytes = std::filesystem::file_size(path, ec);
    if (!ec && bytes > kMaxScheduleFileBytes) throw too_large();
  }
  // Read in chunks up to the limit as well: a pipe or /dev/zero has no size.
  std::string text;
  std::vector<char> chunk(1 << 20);
  while (in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in.gcount() > 0) {
    text.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxScheduleFileBytes) throw too_large();
  }
  if (in.bad()) throw InputError(path, "", "read error");
  std::size_t first = text.find_first_not_of(" \t\r\n\f\v");
  if (first == std::string::npos) {
    throw InputError(path, "", "empty file: expected a pipescope.schedule JSON object or PyTorch's pipelining CSV");
  }
  if (text[first] == '{') return schedule_from_json(JsonReader::from_text(text, path));
  return schedule_from_csv(text, path);
}

}  // namespace pipescope
