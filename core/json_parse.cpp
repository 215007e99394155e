// parse_json: nlohmann's SAX parser drives a builder of our own (nlohmann's DOM builder, with
// the three checks it lacks made where the value arrives): the depth before a container opens,
// a key against the keys its object already holds, and the parser's own errors (a syntax error,
// NaN or Infinity, a number beyond a double) with the path the builder stands at.
#include "core/json_parse.h"

#include <vector>

#include "core/error.h"

namespace pipescope {

namespace {

using Json = nlohmann::json;

class GuardedBuilder {
 public:
  GuardedBuilder(Json& root, const std::string& source) : root_(root), source_(source) {}

  bool null() { return put(nullptr); }
  bool boolean(bool v) { return put(v); }
  bool number_integer(Json::number_integer_t v) { return put(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return put(v); }
  bool number_float(Json::number_float_t v, const Json::string_t&) { return put(v); }  // the lexer refused overflow
  bool string(Json::string_t& v) { return put(std::move(v)); }
  bool binary(Json::binary_t& v) { return put(Json::binary(std::move(v))); }  // never in JSON text

  bool start_object(std::size_t) { return open(Json::object()); }
  bool start_array(std::size_t) { return open(Json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(Json::string_t& k) {
    Frame& f = frames_.back();
    f.key = k;
    f.keyed = true;
    if (f.node->contains(k)) fail("key given twice in one object (each key may appear once)");
    f.slot = &(*f.node)[k];
    return true;
  }

  bool parse_error(std::size_t, const std::string& token, const Json::exception& e) {
    std::string what = e.what();
    const std::size_t cut = what.find("] ");  // drop "[json.exception.parse_error.101] "
    if (cut != std::string::npos) what.erase(0, cut + 2);
    if (e.id == 406) what += " (beyond the range of a double)";  // out_of_range: 1e400
    // the lexer stops at the literal's first letter: NaN at 'N', Infinity and -Infinity at 'I'
    const bool non_finite = !token.empty() && (token.back() == 'N' || token.back() == 'I');
    if (non_finite) what += " (NaN and Infinity are not JSON numbers)";
    fail("invalid JSON: " + what);
  }

 private:
  struct Frame {
    Json* node = nullptr;
    Json* slot = nullptr;  // an object's value for the key just read
    std::string key;
    bool keyed = false;     // an object has read a key
    std::size_t index = 0;  // an array's next element
  };

  // Where the next value goes.
  Json* target() {
    if (frames_.empty()) return &root_;
    Frame& f = frames_.back();
    if (f.node->is_array()) {
      f.node->push_back(nullptr);
      return &f.node->back();
    }
    return f.slot;
  }

  // A value is complete: an array moves on to its next element.
  void done() {
    if (!frames_.empty() && frames_.back().node->is_array()) ++frames_.back().index;
  }

  template <typename V>
  bool put(V&& value) {
    *target() = Json(std::forward<V>(value));
    done();
    return true;
  }

  bool open(Json container) {
    if (frames_.size() >= kMaxJsonDepth) {
      fail("JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
           " levels of arrays and objects (the limit for pipescope input files)");
    }
    Json* at = target();
    *at = std::move(container);
    Frame frame;
    frame.node = at;
    frames_.push_back(std::move(frame));
    return true;
  }

  bool close() {
    frames_.pop_back();
    done();
    return true;
  }

  // The JSON path of the value being read: "layers[3].forward_ms[1]".
  std::string path() const {
    std::string out;
    for (const Frame& f : frames_) {
      if (f.node->is_array()) {
        out += "[" + std::to_string(f.index) + "]";
      } else if (f.keyed) {
        out += (out.empty() ? "" : ".") + f.key;
      }
    }
    return out;
  }

  [[noreturn]] void fail(const std::string& what) const { throw InputError(source_, path(), what); }

  Json& root_;
  const std::string& source_;
  std::vector<Frame> frames_;
};

}  // namespace

Json parse_json(const std::string& text, const std::string& source) {
  Json root;
  GuardedBuilder builder(root, source);
  Json::sax_parse(text, &builder);
  return root;
}

}  // namespace pipescope
