#include "autotune/tune_item.h"

#include <string>

#include "base/json_bounded.h"

namespace ktune {
namespace {

using Json = nlohmann::json;

Status bad(const std::string& field, const std::string& why) {
  return Status::InvalidArgument("field \"" + field + "\" " + why);
}

}  // namespace

Expected<TuneItem> validateTuneItem(const Json& item, const TuneArgsCheck& check) {
  if (!item.is_object()) return Status::InvalidArgument("not a JSON object");
  TuneItem out;
  auto fam = item.find("family");
  if (fam == item.end() || !fam->is_string())
    return bad("family", "must be a string (the kernel family), got " +
                             (fam == item.end() ? std::string("nothing") : fam->dump()));
  out.family = fam->get<std::string>();
  if (out.family.empty() || out.family.size() > 128)
    return bad("family", "must be 1 to 128 characters");
  if (auto k = item.find("key"); k != item.end()) {
    if (!k->is_string()) return bad("key", "must be a string, got " + k->dump().substr(0, 80));
    out.key = k->get<std::string>();
    if (out.key.size() > 4096) return bad("key", "is longer than 4096 characters");
  }
  if (auto d = item.find("date"); d != item.end() && !d->is_string())
    return bad("date", "must be a string");
  out.args = item;
  out.args.erase("family");
  out.args.erase("key");
  out.args.erase("date");
  if (!out.args.is_object()) return Status::InvalidArgument("args must be a JSON object");
  if (check) KTUNE_RETURN_IF_ERROR(check(out.family, out.args));
  return out;
}

Expected<TuneItem> parseTuneItem(std::string_view line, const TuneArgsCheck& check) {
  JsonLimits limits;
  limits.max_bytes = size_t(1) << 20;
  limits.code = Code::kInvalidArgument;
  KTUNE_ASSIGN_OR_RETURN(Json j, parseJsonBounded(line, limits));
  return validateTuneItem(j, check);
}

}  // namespace ktune
