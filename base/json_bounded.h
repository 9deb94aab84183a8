// One bounded JSON reader for every JSON text that comes from outside the process (the tuning
// database, the journal, store metadata, imports, remote entries, queue items, C API specs).
//
// nlohmann/json parses, copies and dumps recursively: a document nested a few hundred thousand
// levels deep (a few hundred KB of '[') overflows the stack while being built or copied. The
// reader checks size and nesting depth on the raw text, before any object exists, so such a text
// is a clear error instead of a crash. Include only where nlohmann/json is linked.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

#include "base/status.h"

namespace ktune {

struct JsonLimits {
  // Deeper than anything ktune writes (the database nests about 8 levels), far below what the
  // recursive copy and dump of nlohmann/json survive on a default stack.
  size_t max_depth = 64;
  // The whole text; readers of files also bound the file size before reading it (readFile).
  size_t max_bytes = size_t(64) << 20;
  // Error code for a text that is not valid JSON or breaks a limit: kCorrupt suits files on disk,
  // kInvalidArgument input handed over by a caller.
  Code code = Code::kCorrupt;
};

// Parses `text` as one JSON document within `limits`. Errors (with the byte offset where they
// are found): larger than max_bytes, nested deeper than max_depth, not valid JSON.
Expected<nlohmann::json> parseJsonBounded(std::string_view text, const JsonLimits& limits = {});

// For line protocols that skip what they cannot read (the journal, the worker's wire): the
// document, or a discarded value (is_discarded()) when parseJsonBounded would fail.
nlohmann::json parseJsonOrDiscarded(std::string_view text, const JsonLimits& limits = {});

// The nesting check alone: OK, or the Status parseJsonBounded would return for too deep a text.
Status checkJsonDepth(std::string_view text, const JsonLimits& limits = {});

}  // namespace ktune
