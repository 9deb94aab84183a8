#include "autotune/partial_record.h"

#include "autotune/engine.h"

namespace ktune {
namespace detail {

void writeFailed(TunerEngine& e, const std::string& family, const std::string& key,
                 const char* what, const Status& st, std::atomic<bool>* reported) {
  if (reported && reported->exchange(true)) return;
  e.log() << "ktune: " << family << " [" << key << "]: could not write " << what << ": "
          << st.toString() << " (said once per key)\n";
}

void recordPartial(TunerEngine& e, FamilyState& fs, const std::string& key,
                   const CandidateResult& r, std::atomic<bool>* write_reported) {
  Status st = fs.journal->append(key, r);
  if (!st.ok()) writeFailed(e, fs.f.name, key, "a partial result", st, write_reported);
}

}  // namespace detail
}  // namespace ktune
