#include "autotune/autotuner.h"

#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "autotune/engine.h"
#include "autotune/tune_item.h"
#include "base/fs.h"
#include "base/json_bounded.h"

namespace ktune {

using detail::FamilyState;

namespace {
// A registered family's make_problem may be user code: an exception it throws on a strange
// args field is that line's failure, not the whole file's.
Expected<std::shared_ptr<void>> makeProblemNoThrow(FamilyState& fs, const std::string& args) {
  try {
    return fs.f.make_problem(args);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("make_problem threw: ") + e.what());
  } catch (...) {
    return Status::InvalidArgument("make_problem threw a non-standard exception");
  }
}
}  // namespace

Expected<OfflineTuneReport> Engine::tuneFromFile(const std::string& path, StreamHandle s) {
  KTUNE_ASSIGN_OR_RETURN(std::string text, readFile(path));
  OfflineTuneReport out;
  std::istringstream in(text);
  std::string line;
  std::set<std::string> done;
  int lineno = 0;  // the file's line number (blank lines count), as an editor shows it
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    ++out.lines;
    auto skip = [&](const std::string& why) {
      ++out.skipped;
      out.messages.push_back("line " + std::to_string(lineno) + ": " + why);
    };
    // Field by field (types, ranges, strides, the memory the problem needs): a bad line is
    // reported with its number and reason, and the rest of the file goes on.
    auto item = parseTuneItem(line);
    if (!item.ok()) {
      skip(item.status().message());
      continue;
    }
    const std::string& fam = item->family;
    const std::string& key = item->key;
    if (!done.insert(fam + "|" + key).second) {
      ++out.already_tuned;
      continue;
    }
    FamilyState* fs = impl_->findFamily(fam);
    if (!fs) {
      skip("family '" + fam + "' is not registered on this tuner");
      continue;
    }
    if (!fs->f.make_problem) {
      skip("family '" + fam + "' has no make_problem, so recorded keys cannot be re-created");
      continue;
    }
    // appendUntunedKey writes the problem's args_json fields beside family/key/date.
    const std::string args = item->args.dump();
    auto prob = makeProblemNoThrow(*fs, args);
    if (!prob.ok()) {
      skip("make_problem failed: " + prob.status().toString());
      continue;
    }
    std::string k2 = keyString(fs, prob->get());
    if (!key.empty() && k2 != key) {
      out.messages.push_back("line " + std::to_string(lineno) + ": recorded key '" + key +
                             "' re-created as '" + k2 + "'");
    }
    if (auto e = fs->db->lookup(k2); e && !e->winner.empty()) {
      ++out.already_tuned;
      out.keys.push_back({fam, k2, "local", 0});
      continue;
    }
    if (impl_->engineOptions().shared && impl_->options().tuning) {
      // Shared results: resolve the key as a call does (shared cache, then one tuner per key), so
      // a key another server published or is tuning is not tuned again here.
      KeyBuilder kb;
      fs->f.key(prob->get(), kb);
      bool tuned = false;
      TuneReport rep;
      auto sel = impl_->resolve(*fs, prob->get(), kb, s, &tuned, &rep);
      if (!sel.ok()) {
        skip("tuning " + k2 + " failed: " + sel.status().toString());
        continue;
      }
      const std::string& origin = (*sel)->origin;
      std::string from = tuned ? "tuned" : origin == "remote" || origin == "waited" ? origin : "local";
      out.keys.push_back({fam, k2, from, tuned ? rep.compiled : 0});
      ++(tuned ? out.tuned : out.already_tuned);
      continue;
    }
    auto rep = tune(fs, prob->get(), s);
    if (!rep.ok()) {
      skip("tuning " + k2 + " failed: " + rep.status().toString());
    } else if (rep->winner.empty()) {
      // Name a few distinct reasons: "no candidate passed" alone cannot be acted on.
      std::set<std::string> reasons;
      for (const auto& c : rep->candidates)
        if (c.status != Code::kOk && reasons.size() < 3) reasons.insert(c.reason.substr(0, 160));
      std::string why;
      for (const auto& r : reasons) why += (why.empty() ? " (" : "; ") + r;
      skip("tuning " + k2 + ": no candidate passed" + (why.empty() ? "" : why + ")"));
    } else {
      ++out.tuned;
      out.keys.push_back({fam, k2, "tuned", rep->compiled});
    }
  }
  return out;
}

}  // namespace ktune
