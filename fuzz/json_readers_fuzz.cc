// Fuzzes the JSON readers that database_fuzz and store_meta_fuzz do not reach, all through the
// bounded reader (base/json_bounded.h): the fuzzed bytes (after a selector byte) are the tuning
// journal, untuned-keys / queue lines (parseBuiltinTuneItem: field types, ranges, strides,
// memory), a C API / Python space_json (api::parseKernelSpec), a shared database entry and validator
// (entryFromJsonText / validatorFromJsonText, as remote/ reads them), the isolation worker's
// candidate result, and the bounded reader itself. Properties: no crash (deep nesting, wrong types,
// huge numbers); every refusal carries a message; what the bounded reader accepts is no deeper
// than its limit and survives a copy and a dump.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "api/data_family.h"
#include "autotune/database.h"
#include "autotune/isolation.h"
#include "autotune/journal.h"
#include "ops/tune_args.h"
#include "base/fs.h"
#include "base/json_bounded.h"
#include "fuzz_util.h"

namespace {

constexpr const char* kTarget = "json_readers_fuzz";

void expectMessage(const ktune::Status& s, const char* what) {
  if (!s.ok() && s.message().empty()) ktune::fuzz::die(kTarget, std::string(what) + ": error without a message");
}

// Depth of a parsed document, iteratively (the property must not recurse itself).
size_t depthOf(const nlohmann::json& j) {
  size_t deepest = 0;
  std::vector<std::pair<const nlohmann::json*, size_t>> todo = {{&j, 1}};
  while (!todo.empty()) {
    auto [v, d] = todo.back();
    todo.pop_back();
    if (!v->is_structured()) continue;
    deepest = std::max(deepest, d);
    for (const auto& c : *v) todo.push_back({&c, d + 1});
  }
  return deepest;
}

void journal(const std::string& text) {
  const std::string dir = ktune::fuzz::scratchDir("jsonfuzz");
  const std::string db = ktune::joinPath(dir, "f.json");
  ktune::fuzz::writeRaw(db + ".journal", text);
  ktune::TuningJournal j(db, "f", "v");
  for (const auto& c : j.candidatesFor("k")) {
    if (c.config.empty() && c.source.empty()) continue;  // what a line named, nothing more
  }
  expectMessage(j.compact("k"), "journal compact");
}

void tuneItems(const std::string& text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    auto item = ktune::parseBuiltinTuneItem(line);
    expectMessage(item.status(), "tune item");
    if (item.ok() && (item->family.empty() || !item->args.is_object()))
      ktune::fuzz::die(kTarget, "an accepted item without a family or args object");
  }
}

void spaceJson(const std::string& text) {
  ktune::KernelSpec spec;
  spec.name = "fuzz";
  spec.source = "KTUNE_KERNEL void fuzz(long long n) {}";
  spec.entry = "fuzz";
  spec.space_json = text;
  spec.args = {{"n", ktune::ArgType::kI64}};
  spec.key = {"n"};
  spec.grid = {"1"};
  spec.block = {"1"};
  expectMessage(ktune::api::parseKernelSpec(spec).status(), "space_json");
}

void sharedEntry(const std::string& text) {
  expectMessage(ktune::entryFromJsonText("k", text).status(), "entry");
  expectMessage(ktune::validatorFromJsonText(text).status(), "validator");
  expectMessage(ktune::candidateResultFromJson(text).status(), "candidate result");
}

void bounded(const std::string& text) {
  auto j = ktune::parseJsonBounded(text);
  expectMessage(j.status(), "parseJsonBounded");
  if (!j.ok()) return;
  if (depthOf(*j) > ktune::JsonLimits{}.max_depth)
    ktune::fuzz::die(kTarget, "parseJsonBounded accepted a document deeper than its limit");
  nlohmann::json copy = *j;  // the recursive copy that overflowed the stack on deep input
  (void)copy.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 5) {
    case 0: journal(text); break;
    case 1: tuneItems(text); break;
    case 2: spaceJson(text); break;
    case 3: sharedEntry(text); break;
    default: bounded(text); break;
  }
  return 0;
}
