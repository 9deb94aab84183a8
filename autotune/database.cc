#include "autotune/database.h"

namespace ktune {

std::string Validator::id() const {
  return backend + "/" + arch + "/" + device_name + "/" + driver_version + "/" + compiler + "-" +
         compiler_version + "/" + ktune_version;
}
bool Validator::operator==(const Validator& o) const {
  return ktune_version == o.ktune_version && backend == o.backend &&
         driver_version == o.driver_version && compiler == o.compiler &&
         compiler_version == o.compiler_version && device_name == o.device_name && arch == o.arch;
}
std::string isoUtcNow() { return ""; }

struct TuningDatabase::Impl {};
TuningDatabase::TuningDatabase(std::string path, Validator v, std::string family)
    : impl_(std::make_unique<Impl>()),
      path_(std::move(path)),
      validator_(std::move(v)),
      family_(std::move(family)) {}
TuningDatabase::~TuningDatabase() = default;
Expected<std::shared_ptr<TuningDatabase>> TuningDatabase::open(const std::string&, Validator,
                                                               std::string) {
  return Status::Internal("not implemented");
}
std::optional<DbEntry> TuningDatabase::lookup(const std::string&) const { return std::nullopt; }
Status TuningDatabase::record(const DbEntry&) { return Status::Internal("not implemented"); }
Status TuningDatabase::remove(const std::string&) { return Status::Internal("not implemented"); }
Status TuningDatabase::recordCandidate(const std::string&, const CandidateResult&) {
  return Status::Internal("not implemented");
}
std::vector<CandidateResult> TuningDatabase::candidatesFor(const std::string&) const { return {}; }
std::vector<DbEntry> TuningDatabase::entries() const { return {}; }
std::vector<std::pair<Validator, int>> TuningDatabase::validators() const { return {}; }
const std::vector<std::string>& TuningDatabase::warnings() const { return warnings_; }
const std::string& TuningDatabase::path() const { return path_; }
Status TuningDatabase::reload() { return Status::Internal("not implemented"); }
Expected<std::string> TuningDatabase::exportJson() const {
  return Status::Internal("not implemented");
}
Status TuningDatabase::importJson(const std::string&) {
  return Status::Internal("not implemented");
}
Status appendUntunedKey(const std::string&, const std::string&, const std::string&,
                        const std::string&) {
  return Status::Internal("not implemented");
}

}  // namespace ktune
