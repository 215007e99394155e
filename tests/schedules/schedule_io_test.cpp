// Schedule files (core/schedule_io.h): every built-in schedule survives a JSON and a
// CSV round trip op for op; PyTorch's own test artifacts read and validate with the
// shapes their names state; each kind of bad input is refused with a message that
// names the file and the rank/step/cell or the JSON path.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "core/error.h"
#include "core/schedule_io.h"
#include "tests/support/cli_run.h"
#include "tests/support/source_paths.h"

using namespace pipescope;

namespace {

const std::string kData = std::string(PIPESCOPE_SOURCE_DIR) + "/tests/data/schedules/";

void expect_same_ops(const Schedule& a, const Schedule& b) {
  EXPECT_EQ(a.num_microbatches, b.num_microbatches);
  EXPECT_EQ(a.stage_position, b.stage_position);
  ASSERT_EQ(a.positions(), b.positions());
  for (int d = 0; d < a.positions(); ++d) EXPECT_EQ(a.position_ops[d], b.position_ops[d]) << "device " << d;
}

// A random built-in schedule: K 1..8, M 1..24 (a multiple of K for interleaved and
// interleaved-zb; 1..4 chunks for those and looped-bfs), re-materialisation when `recompute` allows it.
ScheduleSpec random_spec(std::mt19937_64& rng, bool allow_recompute) {
  ScheduleSpec spec;
  const auto& kinds = schedule_kinds();
  spec.kind = kinds[rng() % kinds.size()];
  spec.positions = 1 + static_cast<int>(rng() % 8);
  spec.microbatches = 1 + static_cast<int>(rng() % 24);
  if (required_chunks(spec.kind) == 0) spec.chunks = 1 + static_cast<int>(rng() % 4);  // interleaved, looped-bfs, interleaved-zb
  if (spec.kind == ScheduleKind::Interleaved || spec.kind == ScheduleKind::InterleavedZeroBubble) {
    spec.microbatches = spec.positions * (1 + static_cast<int>(rng() % std::max(1, 24 / spec.positions)));  // both take M = rK
  }
  if (required_chunks(spec.kind) == 2) spec.chunks = 2;  // V-shapes
  if (spec.kind == ScheduleKind::DualPipeV) spec.microbatches = std::max(spec.microbatches, 2 * spec.positions);
  if (spec.kind == ScheduleKind::PipeDream2BW) spec.microbatches = std::max(spec.microbatches, spec.positions);
  if (is_asynchronous(spec.kind)) spec.steps = 1 + static_cast<int>(rng() % 3);
  spec.r_ops = allow_recompute && rng() % 2 == 1;
  return spec;
}

std::string describe(const ScheduleSpec& s) {
  return to_string(s.kind) + " K=" + std::to_string(s.positions) + " M=" + std::to_string(s.microbatches) +
         " v=" + std::to_string(s.chunks) + (s.r_ops ? " recompute" : "");
}

// The message of the InputError `read` throws ("" and a test failure when none).
template <typename Read>
std::string error_of(Read read) {
  try {
    read();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an InputError";
  return "";
}

std::string csv_error(const std::string& text) {
  return error_of([&] { schedule_from_csv(text, "bad.csv"); });
}
std::string json_error(const std::string& text) {
  return error_of([&] { schedule_from_json(JsonReader::from_text(text, "v.json")); });
}

// The hand-written V: rank 0 holds stages 0 and 3, rank 1 stages 1 and 2; GPipe order.
const std::string kVShape = "0F0,0F1,3F0,3B0,3F1,3B1,0B0,0B1\n1F0,2F0,1F1,2F1,2B0,1B0,2B1,1B1\n";

}  // namespace

TEST(ScheduleJson, EveryBuiltInScheduleRoundTripsOpForOp) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    for (int trial = 0; trial < 100; ++trial) {
      ScheduleSpec spec = random_spec(rng, true);
      SCOPED_TRACE(describe(spec));
      Schedule s = make_schedule(spec);
      Schedule back = schedule_from_json(JsonReader::from_text(schedule_to_json(s).dump(), "rt.json"));
      expect_same_ops(s, back);
      EXPECT_EQ(back.r_ops, s.r_ops);
      EXPECT_EQ(back.weight_update, s.weight_update);
      EXPECT_EQ(back.steps, s.steps);
      EXPECT_EQ(back.name, s.name);
    }
  }
}

TEST(ScheduleCsv, EveryBuiltInScheduleRoundTripsOpForOp) {
  for (uint64_t seed : {4u, 5u, 6u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    for (int trial = 0; trial < 100; ++trial) {
      ScheduleSpec spec = random_spec(rng, false);
      SCOPED_TRACE(describe(spec));
      Schedule s = make_schedule(spec);
      if (s.asynchronous()) {  // PyTorch's schedules all flush
        EXPECT_THROW(schedule_to_csv(s), InputError);
        continue;
      }
      Schedule back = schedule_from_csv(schedule_to_csv(s), "runs/rt.csv");
      expect_same_ops(s, back);
      EXPECT_FALSE(back.r_ops);
      EXPECT_EQ(back.name, "rt");
    }
  }
}

TEST(ScheduleCsv, WriterWritesPyTorchsComputeOnlyRows) {
  // Megatron's 1F1B for K=2, M=2: device 0 warms up with one extra F, device 1 alternates.
  EXPECT_EQ(schedule_to_csv(make_1f1b(2, 2)), "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n");
  // Interleaved K=2, v=2: device d holds stages d and d+2, so its row names both.
  std::string rows = schedule_to_csv(make_interleaved(2, 2, 2));
  EXPECT_NE(rows.find("2F0"), std::string::npos);
  EXPECT_NE(rows.find("3F0"), std::string::npos);
}

TEST(ScheduleCsv, WriterRefusesRecompute) {
  std::string msg = error_of([] { schedule_to_csv(make_1f1b(2, 2, true)); });
  EXPECT_NE(msg.find("re-materialisation"), std::string::npos) << msg;
  Schedule s = make_1f1b(2, 2);
  s.position_ops[1].insert(s.position_ops[1].begin() + 1, Op{OpKind::Recompute, 1, 0});
  msg = error_of([&] { schedule_to_csv(s); });
  EXPECT_NE(msg.find("device 1, op 1: R (recompute) cannot be expressed"), std::string::npos) << msg;
}

TEST(ScheduleCsv, PyTorchZeroBubbleComputeArtifactReads) {
  // 2 ranks, stages looped (rank r holds r and r + 2), 8 micro-batches, F + I + W each:
  // 4 x 8 x 3 = 96 ops, 48 per rank.
  Schedule s = load_schedule_file(kData + "zb1p_2rank_2stagep_compute.csv");
  EXPECT_EQ(s.name, "zb1p_2rank_2stagep_compute");
  EXPECT_EQ(s.stage_position, (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(s.microbatches(), 8);
  EXPECT_EQ(s.position_ops[0].size(), 48u);
  EXPECT_EQ(s.position_ops[1].size(), 48u);
  EXPECT_TRUE(s.has_split_backward());
  // Written back, the rows are PyTorch's less its idle (empty) cells.
  std::ifstream in(kData + "zb1p_2rank_2stagep_compute.csv");
  std::string original((std::istreambuf_iterator<char>(in)), {}), expected;
  for (std::size_t i = 0; i < original.size(); ++i) {
    bool empty_cell = original[i] == ',' && (i == 0 || original[i - 1] == '\n' || original[i - 1] == ',');
    if (!empty_cell) expected += original[i];
  }
  EXPECT_EQ(schedule_to_csv(s), expected);
}

TEST(ScheduleCsv, PyTorchComputeCommsArtifactReadsIgnoringCommunication) {
  // Stages 0 and 2 (rank 0) use B, stages 1 and 3 (rank 1) I + W: 2x8x2 + 2x8x3 = 80 ops.
  Schedule s = load_schedule_file(kData + "zb1p_2rank_2stagep_comms.csv");
  EXPECT_EQ(s.stage_position, (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(s.microbatches(), 8);
  EXPECT_EQ(s.num_ops(), 80u);
  EXPECT_EQ(s.position_ops[0][0], (Op{OpKind::Forward, 0, 0}));
  EXPECT_EQ(s.position_ops[0][1], (Op{OpKind::Forward, 0, 1}));  // after 0SEND_F0 and 2RECV_F0
}

TEST(ScheduleCsv, PyTorchDualPipeVArtifactReadsWithOverlapsBackToBack) {
  // 4 ranks, 8 stages in a V (rank d holds d and 7 - d), 10 micro-batches: 182 compute ops.
  Schedule s = load_schedule_file(kData + "dualpipev_4rank_10mb.csv");
  EXPECT_EQ(s.stage_position, (std::vector<int>{0, 1, 2, 3, 3, 2, 1, 0}));
  EXPECT_EQ(s.microbatches(), 10);
  EXPECT_EQ(s.num_ops(), 182u);
  // Cell 17 of rank 0 is (0F7;7B3)OVERLAP_F_B: after 17 single cells, F then B.
  EXPECT_EQ(s.position_ops[0][17], (Op{OpKind::Forward, 0, 7}));
  EXPECT_EQ(s.position_ops[0][18], (Op{OpKind::Backward, 7, 3}));
  Schedule back = schedule_from_csv(schedule_to_csv(s), "dualpipev.csv");
  expect_same_ops(s, back);
}

TEST(ScheduleCsv, HandWrittenVShapeMapsStagesByRow) {
  Schedule s = load_schedule_file(kData + "vshape.csv");
  EXPECT_EQ(s.name, "vshape");
  EXPECT_EQ(s.stage_position, (std::vector<int>{0, 1, 1, 0}));
  EXPECT_EQ(s.microbatches(), 2);
  EXPECT_EQ(s.stages_of(0), (std::vector<int>{0, 3}));
}

TEST(ScheduleCsv, AcceptsWhatPythonsCsvModuleAccepts) {
  // CRLF (csv.writer's line end), a byte order mark, blanks around cells, empty
  // (idle) cells, a quoted cell, ignored communication/FSDP actions, blank last lines.
  std::string text =
      "\xEF\xBB\xBF 0F0 ,,0UNSHARD,0F1,3RECV_F0,3F0,3B0,3SEND_B0,3F1,\"3B1\",0B0,0B1,0REDUCE_GRAD,0RESHARD\r\n"
      "1F0,1SEND_F0,2F0,1F1,2F1,2B0,1B0,2B1,1B1,,\r\n\r\n  \n";
  expect_same_ops(schedule_from_csv(text, "quirks.csv"), schedule_from_csv(kVShape, "v.csv"));
}

TEST(ScheduleCsv, RefusesUnknownAction) {
  std::string msg = csv_error("0F0,0X0,0B0\n");
  EXPECT_NE(msg.find("bad.csv: rank 0 (row, 0-based), step 1 (cell, 0-based) \"0X0\": unknown action \"X\""),
            std::string::npos) << msg;
  msg = csv_error("0F0,0B0\n1F0,1BW0\n");  // PyTorch's old spelling of a full backward
  EXPECT_NE(msg.find("rank 1 (row, 0-based), step 1 (cell, 0-based) \"1BW0\": unknown action \"BW\""),
            std::string::npos) << msg;
  msg = csv_error("0F0,0R0,0B0\n");
  EXPECT_NE(msg.find("step 1 (cell, 0-based) \"0R0\": R (recompute) cannot be expressed"), std::string::npos) << msg;
}

TEST(ScheduleCsv, RefusesMalformedCells) {
  struct Case {
    std::string cell, says;
  };
  for (const Case& c : {Case{"0F", "needs a micro-batch number"}, Case{"F0", "expected <stage><action><micro-batch>"},
                        Case{"0F0x", "expected <stage><action><micro-batch>"},
                        Case{"0f0", "expected <stage><action><micro-batch>"},
                        Case{"0F\"0", "expected <stage><action><micro-batch>"},  // a '"' inside a cell is text
                        Case{"(0F0;(1F0)OVERLAP_F_B", "cannot nest"},
                        Case{"(0F0;0B0", "never closed"}, Case{"(0F0)F", "expected OVERLAP_F_B"},
                        Case{"()OVERLAP_F_B", "no actions"}, Case{"0F99999999999", "implausibly large"}}) {
    std::string msg = csv_error("0F0," + c.cell + ",0B0\n");
    EXPECT_NE(msg.find("bad.csv: rank 0 (row, 0-based), step 1 (cell, 0-based) \"" + c.cell + "\": "),
              std::string::npos) << msg;
    EXPECT_NE(msg.find(c.says), std::string::npos) << msg;
  }
  EXPECT_NE(csv_error("\"0F0\n").find("bad.csv: rank 0 (row, 0-based): a quote is never closed"), std::string::npos);
}

TEST(ScheduleCsv, RefusesMissingOp) {
  std::string msg = csv_error("0F0,0F1,3F0,3B0,3F1,3B1,0B0\n1F0,2F0,1F1,2F1,2B0,1B0,2B1,1B1\n");
  EXPECT_NE(msg.find("bad.csv: schedule: B(stage 0, micro-batch 1) is missing"), std::string::npos) << msg;
  // A micro-batch index far beyond the ops listed names the first gap, at once.
  msg = csv_error("0F0,0F9999999,0B0\n");
  EXPECT_NE(msg.find("bad.csv: schedule: F(stage 0, micro-batch 1) is missing"), std::string::npos) << msg;
  msg = csv_error("0F0,0B0\n2F0,2B0\n");
  EXPECT_NE(msg.find("bad.csv: stage 1 has no compute action in any row"), std::string::npos) << msg;
}

TEST(ScheduleCsv, RefusesDuplicatedOp) {
  std::string msg = csv_error("0F0,0F1,0B0,0F1,0B1\n");
  EXPECT_NE(msg.find("bad.csv: rank 0 (row, 0-based), step 3 (cell, 0-based) \"0F1\": F(stage 0, micro-batch 1) "
                     "appears twice (first at step 1)"),
            std::string::npos) << msg;
}

TEST(ScheduleCsv, RefusesStageOnTwoRanks) {
  std::string msg = csv_error("0F0,1F0,1B0,0B0\n0F1,0B1,1F1,1B1\n");
  EXPECT_NE(msg.find("bad.csv: rank 1 (row, 0-based), step 0 (cell, 0-based) \"0F1\": stage 0 is on rank 1 here "
                     "and on rank 0 (row 0, step 0)"),
            std::string::npos) << msg;
}

TEST(ScheduleCsv, RefusesWBeforeItsI) {
  std::string msg = csv_error("0F0,0W0,0I0\n");
  EXPECT_NE(msg.find("bad.csv: rank 0 (row, 0-based), step 1 (cell, 0-based) \"0W0\": W(stage 0, micro-batch 0) "
                     "comes before its I"),
            std::string::npos) << msg;
  msg = csv_error("0B0,0F0\n");
  EXPECT_NE(msg.find("step 0 (cell, 0-based) \"0B0\": B(stage 0, micro-batch 0) comes before its F"),
            std::string::npos) << msg;
}

TEST(ScheduleCsv, RefusesACycleBetweenRanks) {
  // Rank 0 wants B(0,0), which needs rank 1's B(1,0); rank 1 first wants F(1,1),
  // which needs rank 0's F(0,1), queued behind B(0,0).
  std::string msg = csv_error("0F0,0B0,0F1,0B1\n1F1,1B1,1F0,1B0\n");
  EXPECT_NE(msg.find("bad.csv: schedule cannot make progress"), std::string::npos) << msg;
  EXPECT_NE(msg.find("device 0 at B(stage 0, micro-batch 0)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("device 1 at F(stage 1, micro-batch 1)"), std::string::npos) << msg;
}

TEST(ScheduleCsv, RefusesEmptyFiles) {
  for (std::string text : {"", "\n\n", " , \r\n"}) {
    EXPECT_NE(csv_error(text).find("bad.csv: empty file"), std::string::npos);
  }
  EXPECT_NE(csv_error("0SEND_F0\n").find("bad.csv: no compute action"), std::string::npos);
}

TEST(ScheduleJson, RefusesWrongFormatAndVersion) {
  std::string good = schedule_to_json(make_1f1b(2, 2)).dump();
  Json j = Json::parse(good);
  j["format"] = "pipescope.plan";
  EXPECT_NE(json_error(j.dump()).find("v.json: format: expected \"pipescope.schedule\", got \"pipescope.plan\""),
            std::string::npos);
  j = Json::parse(good);
  j["version"] = 3;  // versions 1 and 2 are read
  EXPECT_NE(json_error(j.dump()).find("v.json: version: expected an integer <= 2, got 3"), std::string::npos);
}

TEST(ScheduleJson, RefusesKindNotAnOpLetter) {
  Json j = schedule_to_json(make_zb_h1(2, 4));
  j["position_ops"][1][3]["kind"] = "X";
  EXPECT_EQ(json_error(j.dump()), "v.json: position_ops[1][3].kind: expected one of F, B, I, W, R, got \"X\"");
  j["position_ops"][1][3]["kind"] = 3;
  EXPECT_EQ(json_error(j.dump()), "v.json: position_ops[1][3].kind: expected a string, got number");
}

TEST(ScheduleJson, RefusesFieldsOutOfRange) {
  Json good = schedule_to_json(make_1f1b(2, 2));
  Json j = good;
  j["position_ops"][0][1]["stage"] = 2;
  EXPECT_EQ(json_error(j.dump()), "v.json: position_ops[0][1].stage: expected an integer <= 1, got 2");
  j = good;
  j["stage_position"][1] = 5;
  EXPECT_EQ(json_error(j.dump()), "v.json: stage_position[1]: expected an integer <= 1, got 5");
  j = good;
  j["positions"] = 3;
  EXPECT_EQ(json_error(j.dump()),
            "v.json: position_ops: expected 3 op lists (one per position, as \"positions\" says), got 2");
  j = good;
  j["microbatches"] = 40000000;  // 2 stages x 4e7 micro-batches, 8 ops listed: refused at once
  EXPECT_NE(json_error(j.dump()).find("v.json: schedule: F(stage 0, micro-batch 2) is missing"), std::string::npos);
}

TEST(ScheduleJson, ValidatorErrorsNameTheFile) {
  Json good = schedule_to_json(make_zb_h1(2, 2));
  Json j = good;
  j["position_ops"][0].erase(j["position_ops"][0].size() - 1);  // drop position 0's last op
  std::string msg = json_error(j.dump());
  EXPECT_EQ(msg.rfind("v.json: schedule: ", 0), 0u) << msg;
  EXPECT_NE(msg.find("is missing"), std::string::npos) << msg;
  // A W moved before its I on the same device cannot make progress.
  j = Json::parse(R"({"format": "pipescope.schedule", "version": 1, "devices": 1, "microbatches": 1,
      "recompute": false, "stage_device": [0], "device_ops": [[{"kind": "F", "stage": 0, "microbatch": 0},
      {"kind": "W", "stage": 0, "microbatch": 0}, {"kind": "I", "stage": 0, "microbatch": 0}]]})");
  msg = json_error(j.dump());
  EXPECT_NE(msg.find("v.json: schedule cannot make progress"), std::string::npos) << msg;
  EXPECT_EQ(schedule_from_json(JsonReader::from_text(good.dump(), "v.json")).name, "zb-h1");
}

// Version 1's keys for a file schedule_to_json wrote (version 2).
Json as_version_1(Json j) {
  j["version"] = 1;
  for (auto [v2, v1] : {std::pair{"positions", "devices"}, std::pair{"stage_position", "stage_device"},
                        std::pair{"position_ops", "device_ops"}}) {
    j[v1] = j[v2];
    j.erase(v2);
  }
  return j;
}

TEST(ScheduleJson, WritesVersion2WhoseKeysSayPositions) {
  // 1F1B on K = 2, M = 2: two positions, stage s on position s, 4 ops each.
  Json j = schedule_to_json(make_1f1b(2, 2));
  EXPECT_EQ(j["version"], 2);
  EXPECT_EQ(j["positions"], 2);
  EXPECT_EQ(j["stage_position"], Json::array({0, 1}));
  ASSERT_EQ(j["position_ops"].size(), 2u);
  EXPECT_EQ(j["position_ops"][1].size(), 4u);
  for (const char* v1 : {"devices", "stage_device", "device_ops"}) EXPECT_FALSE(j.contains(v1)) << v1;
}

TEST(ScheduleJson, Version1FilesReadToTheSameSchedule) {
  // Every built-in, written as version 2 and renamed to version 1's keys, reads back
  // op for op: the two versions differ only in three key names.
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 100; ++trial) {
    ScheduleSpec spec = random_spec(rng, true);
    SCOPED_TRACE("seed 7, " + describe(spec));
    Schedule s = make_schedule(spec);
    Schedule v1 = schedule_from_json(JsonReader::from_text(as_version_1(schedule_to_json(s)).dump(), "v1.json"));
    expect_same_ops(v1, s);
    EXPECT_EQ(v1.r_ops, s.r_ops);
    EXPECT_EQ(v1.weight_update, s.weight_update);
    EXPECT_EQ(v1.steps, s.steps);
  }
}

TEST(ScheduleJson, RefusesVersion1KeysInVersion2) {
  const Json good = schedule_to_json(make_1f1b(2, 2));
  for (auto [v2, v1] : {std::pair{"positions", "devices"}, std::pair{"stage_position", "stage_device"},
                        std::pair{"position_ops", "device_ops"}}) {
    Json j = good;
    j[v1] = j[v2];  // a half-converted file: both names
    std::string expected = std::string("v.json: ") + v1;
    expected += ": version 2 calls this \"";
    expected += v2;
    expected += "\" (\"";
    expected += v1;
    expected += "\" is version 1's name)";
    EXPECT_EQ(json_error(j.dump()), expected);
  }
  Json j = good;  // a version 1 file with version 2's keys lacks its own
  j["version"] = 1;
  EXPECT_NE(json_error(j.dump()).find("v.json: devices"), std::string::npos) << json_error(j.dump());
}

TEST(ScheduleFile, BadVersionsExitTwoNamingTheField) {
  // Through the command: an InputError is exit code 2, its message names file and key.
  const std::string dir = ::testing::TempDir();
  Json j = schedule_to_json(make_1f1b(2, 2));
  j["devices"] = 2;
  std::ofstream(dir + "/half.json") << j.dump();
  j = schedule_to_json(make_1f1b(2, 2));
  j["version"] = 9;
  std::ofstream(dir + "/v9.json") << j.dump();
  std::ofstream(dir + "/v1.json") << as_version_1(schedule_to_json(make_1f1b(2, 2))).dump();
  pipescope::testing::CliResult r = pipescope::testing::run_cli("schedule --schedule-file " + dir + "/half.json");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("half.json: devices: version 2 calls this \"positions\""), std::string::npos) << r.out;
  r = pipescope::testing::run_cli("schedule --schedule-file " + dir + "/v9.json");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("v9.json: version: expected an integer <= 2, got 9"), std::string::npos) << r.out;
  r = pipescope::testing::run_cli("schedule --schedule-file " + dir + "/v1.json --format json");  // converts to version 2
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("\"position_ops\""), std::string::npos) << r.out;
}

TEST(ScheduleFile, DetectsTheFormatAndRefusesBadFiles) {
  std::string dir = ::testing::TempDir();
  Schedule s = make_interleaved(2, 4, 2, true);
  {
    std::ofstream(dir + "/io.json") << "\n  " << schedule_to_json(s).dump(1);
  }
  expect_same_ops(load_schedule_file(dir + "/io.json"), s);
  {
    std::ofstream(dir + "/io_empty.csv") << " \n";
  }
  EXPECT_NE(error_of([&] { load_schedule_file(dir + "/io_empty.csv"); }).find("io_empty.csv: empty file"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load_schedule_file(dir + "/no_such.csv"); }).find("no_such.csv: cannot open file"),
            std::string::npos);
  // A sparse file one byte over the 256 MiB limit.
  std::filesystem::path big = dir + "/io_big.csv";
  { std::ofstream(big) << "0F0"; }
  std::filesystem::resize_file(big, (std::uintmax_t{256} << 20) + 1);
  EXPECT_NE(error_of([&] { load_schedule_file(big.string()); }).find("larger than 268435456 bytes"), std::string::npos);
  std::filesystem::remove(big);
}

TEST(ScheduleCsv, DualPipeVPairsRoundTripAsOverlapCells) {
  // PyTorch 2.13's ScheduleDualPipeV writes each overlapped F&B pair as one
  // "(F;B)OVERLAP_F_B" cell (K = 2, M = 4, rank 0: "(0F3;3B1)OVERLAP_F_B" is its 8th);
  // pipescope writes the same cells and reads the pairs back as overlapped backwards.
  Schedule s = make_dualpipev(2, 4);
  const std::string text = schedule_to_csv(s);
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "0F0,0F1,0F2,3F0,3I0,3W0,3F1,(0F3;3B1)OVERLAP_F_B,(3F2;0B0)OVERLAP_F_B,3B2,(3F3;0B1)OVERLAP_F_B,3B3,"
            "0I2,0W2,0I3,0W3");
  Schedule back = schedule_from_csv(text, "dv.csv");
  expect_same_ops(s, back);
  EXPECT_EQ(back.overlapped_backwards, s.overlapped_backwards);
  EXPECT_FALSE(back.overlapped_backwards.empty());
}
