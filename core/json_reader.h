// Reads JSON with errors that name the file and the JSON path of the offending value.
// Every accessor checks type and range before converting; none silently defaults a
// required field. The text is parsed by core/json_parse.h's parse_json: at most
// kMaxJsonDepth levels, no key twice in an object, finite numbers, or InputError naming
// the file and the JSON path. Usage:
//   JsonReader r = JsonReader::from_file("profile.json");
//   int v = r["version"].as_int(1, 1);
//   for (JsonReader layer : r["layers"].items()) layer["name"].as_string();
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pipescope {

using Json = nlohmann::json;

class JsonReader {
 public:
  // Input files larger than this are refused before parsing (a 10^6-layer profile
  // is about 330 MiB; parsing takes about 8 bytes of memory per byte of text).
  static constexpr std::size_t kMaxFileBytes = std::size_t{1} << 30;

  // Parses a file; a missing file, a syntax error, a key given twice or nesting past
  // kMaxJsonDepth throws InputError naming the file (and the JSON path).
  static JsonReader from_file(const std::string& path, std::size_t max_bytes = kMaxFileBytes);
  static JsonReader from_text(const std::string& text, const std::string& source);
  JsonReader(std::shared_ptr<const Json> root, const Json* node, std::string source,
             std::string path);

  bool has(const std::string& key) const;
  JsonReader operator[](const std::string& key) const;  // required key of an object
  std::vector<JsonReader> items() const;                 // elements of an array
  std::size_t size() const;                              // array length (array required)

  std::string as_string() const;
  bool as_bool() const;
  double as_double(double min = -std::numeric_limits<double>::max(),
                   double max = std::numeric_limits<double>::max()) const;  // finite only
  int64_t as_int(int64_t min = std::numeric_limits<int64_t>::min(),
                 int64_t max = std::numeric_limits<int64_t>::max()) const;
  std::vector<double> as_doubles(double min = -std::numeric_limits<double>::max()) const;
  std::vector<int64_t> as_ints(int64_t min = std::numeric_limits<int64_t>::min()) const;
  // The format header: "format" must equal `format`, "version" must be 1..max_version;
  // returns the version.
  int expect_format(const std::string& format, int max_version = 1) const;

  const Json& json() const { return *node_; }
  const std::string& source() const { return source_; }
  const std::string& path() const { return path_; }
  [[noreturn]] void fail(const std::string& what) const;

 private:
  std::string type_name() const;
  std::shared_ptr<const Json> root_;
  const Json* node_;
  std::string source_;
  std::string path_;
};

// Numbers for output: integral values are written as integers (1048576, not 1048576.0).
Json json_number(double v);
Json json_numbers(const std::vector<double>& values);

}  // namespace pipescope
