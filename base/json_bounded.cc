#include "base/json_bounded.h"

#include <string>

namespace ktune {

Status checkJsonDepth(std::string_view text, const JsonLimits& limits) {
  // Brackets count only outside strings; inside a string a backslash escapes the next byte. An
  // unbalanced or otherwise invalid text passes here and is refused by the parser afterwards.
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limits.max_depth) {
        return Status(limits.code, "JSON nested deeper than " + std::to_string(limits.max_depth) +
                                       " levels (at byte " + std::to_string(i) + ")");
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return Status::Ok();
}

Expected<nlohmann::json> parseJsonBounded(std::string_view text, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return Status(limits.code, "JSON text of " + std::to_string(text.size()) +
                                   " bytes is larger than the limit of " +
                                   std::to_string(limits.max_bytes) + " bytes");
  }
  KTUNE_RETURN_IF_ERROR(checkJsonDepth(text, limits));
  // nlohmann's parse error names the line and column where the text breaks.
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = e.what();
    return Status(limits.code, "not valid JSON (" + std::to_string(text.size()) + " bytes): " +
                                   what.substr(0, 200));
  } catch (const std::exception& e) {
    return Status(limits.code, std::string("not valid JSON: ") + e.what());
  }
}

nlohmann::json parseJsonOrDiscarded(std::string_view text, const JsonLimits& limits) {
  auto j = parseJsonBounded(text, limits);
  return j.ok() ? std::move(*j) : nlohmann::json(nlohmann::json::value_t::discarded);
}

}  // namespace ktune
