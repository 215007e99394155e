#include "core/json_reader.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/json_parse.h"

namespace pipescope {

JsonReader JsonReader::from_file(const std::string& path, std::size_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(path, "", "is a folder, expected a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open file");
  // Read in chunks up to the limit, so that a huge file (or /dev/zero) is refused
  // after reading max_bytes instead of exhausting memory.
  std::string text;
  std::vector<char> chunk(1 << 20);
  while (in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in.gcount() > 0) {
    text.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
    if (text.size() > max_bytes) {
      throw InputError(path, "", "file is larger than " + std::to_string(max_bytes) +
                                     " bytes, the limit for pipescope input files");
    }
  }
  if (in.bad()) throw InputError(path, "", "read error");
  return from_text(text, path);
}

JsonReader JsonReader::from_text(const std::string& text, const std::string& source) {
  auto root = std::make_shared<const Json>(parse_json(text, source));
  const Json* node = root.get();
  return JsonReader(std::move(root), node, source, "");
}

JsonReader::JsonReader(std::shared_ptr<const Json> root, const Json* node, std::string source,
                       std::string path)
    : root_(std::move(root)), node_(node), source_(std::move(source)), path_(std::move(path)) {}

void JsonReader::fail(const std::string& what) const {
  throw InputError(source_, path_.empty() ? "(top level)" : path_, what);
}

std::string JsonReader::type_name() const { return node_->type_name(); }

bool JsonReader::has(const std::string& key) const {
  return node_->is_object() && node_->contains(key);
}

JsonReader JsonReader::operator[](const std::string& key) const {
  if (!node_->is_object()) fail("expected an object, got " + type_name());
  auto it = node_->find(key);
  std::string child = path_.empty() ? key : path_ + "." + key;
  if (it == node_->end()) {
    throw InputError(source_, child, "missing required field");
  }
  return JsonReader(root_, &*it, source_, child);
}

std::vector<JsonReader> JsonReader::items() const {
  if (!node_->is_array()) fail("expected an array, got " + type_name());
  std::vector<JsonReader> out;
  out.reserve(node_->size());
  for (std::size_t i = 0; i < node_->size(); ++i) {
    out.emplace_back(root_, &(*node_)[i], source_, path_ + "[" + std::to_string(i) + "]");
  }
  return out;
}

std::size_t JsonReader::size() const {
  if (!node_->is_array()) fail("expected an array, got " + type_name());
  return node_->size();
}

std::string JsonReader::as_string() const {
  if (!node_->is_string()) fail("expected a string, got " + type_name());
  return node_->get<std::string>();
}

bool JsonReader::as_bool() const {
  if (!node_->is_boolean()) fail("expected true or false, got " + type_name());
  return node_->get<bool>();
}

static std::string number_text(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

double JsonReader::as_double(double min, double max) const {
  if (!node_->is_number()) fail("expected a number, got " + type_name());
  double v = node_->get<double>();
  if (!std::isfinite(v)) fail("expected a finite number");
  if (v < min) fail("expected a number >= " + number_text(min) + ", got " + number_text(v));
  if (v > max) fail("expected a number <= " + number_text(max) + ", got " + number_text(v));
  return v;
}

int64_t JsonReader::as_int(int64_t min, int64_t max) const {
  int64_t v = 0;
  if (node_->is_number_integer()) {
    if (node_->is_number_unsigned() &&
        node_->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      fail("integer too large");
    }
    v = node_->get<int64_t>();
  } else if (node_->is_number_float()) {
    double d = node_->get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.0e18) {
      fail("expected an integer, got " + number_text(d));
    }
    v = static_cast<int64_t>(d);
  } else {
    fail("expected an integer, got " + type_name());
  }
  if (v < min) fail("expected an integer >= " + std::to_string(min) + ", got " + std::to_string(v));
  if (v > max) fail("expected an integer <= " + std::to_string(max) + ", got " + std::to_string(v));
  return v;
}

std::vector<double> JsonReader::as_doubles(double min) const {
  std::vector<double> out;
  for (const JsonReader& item : items()) out.push_back(item.as_double(min));
  return out;
}

std::vector<int64_t> JsonReader::as_ints(int64_t min) const {
  std::vector<int64_t> out;
  for (const JsonReader& item : items()) out.push_back(item.as_int(min));
  return out;
}

int JsonReader::expect_format(const std::string& format, int max_version) const {
  std::string got = (*this)["format"].as_string();
  if (got != format) {
    (*this)["format"].fail("expected \"" + format + "\", got \"" + got + "\"");
  }
  return static_cast<int>((*this)["version"].as_int(1, max_version));
}

Json json_number(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9.0e15) {
    return Json(static_cast<int64_t>(v));
  }
  return Json(v);
}

Json json_numbers(const std::vector<double>& values) {
  Json out = Json::array();
  for (double v : values) out.push_back(json_number(v));
  return out;
}

}  // namespace pipescope
