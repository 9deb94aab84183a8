// Fuzzes how the code-object store reads an entry from disk (compiler/store/store.h): the fuzzed
// bytes become one entry's metadata JSON, binary and dump file. get() must return kOk or kCorrupt
// (never crash, never hand out bytes whose hash does not match), and list()/verify()/resolve()
// must agree with it.
//
// Input: byte 0 = flags, then the metadata text up to the first NUL byte, then the binary.
//   flag 1: "fix up" a JSON-object metadata (key, binary_sha256, binary_bytes, format_version and
//           the sha256 of each listed dump), so the fuzzer also reaches the fields past the hash.
//   flag 2: no binary file.   flag 4: the dump file is written with the binary's bytes.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "base/fs.h"
#include "base/sha256.h"
#include "compiler/store/store.h"
#include "fuzz_util.h"

namespace {
constexpr const char* kTarget = "store_meta_fuzz";
const std::string kKey = "ab" + std::string(62, '3');
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using ktune::fuzz::die;
  if (size == 0) return 0;
  const unsigned flags = data[0];
  std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  size_t nul = rest.find('\0');
  std::string meta = rest.substr(0, nul);
  std::string bin = nul == std::string::npos ? std::string() : rest.substr(nul + 1);

  const std::string dir = ktune::joinPath(ktune::fuzz::scratchDir("storefuzz"), "store");
  static std::shared_ptr<ktune::CodeObjectStore> store = [&] {
    auto s = ktune::CodeObjectStore::open(dir);
    if (!s.ok()) die(kTarget, "cannot open the scratch store: " + s.status().toString());
    return *s;
  }();
  const std::string shard = dir + "/objects/" + kKey.substr(0, 2);
  (void)ktune::removeTree(dir + "/objects");
  if (!ktune::makeDirs(shard).ok()) die(kTarget, "cannot create " + shard);
  const std::string base = shard + "/" + kKey;

  if (flags & 1) {
    nlohmann::json j = nlohmann::json::parse(meta, nullptr, false);
    if (j.is_object()) {
      j["format_version"] = 1;
      j["key"] = kKey;
      j["binary_sha256"] = ktune::sha256Hex(bin);
      j["binary_bytes"] = bin.size();
      auto dumps = j.find("dumps");
      if (dumps != j.end() && dumps->is_object()) {
        for (auto& [name, d] : dumps->items()) {
          if (d.is_object()) d["sha256"] = ktune::sha256Hex((flags & 4) ? bin : name);
        }
      }
      meta = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
  }
  ktune::fuzz::writeRaw(base + ".json", meta);
  if (!(flags & 2)) ktune::fuzz::writeRaw(base + ".bin", bin);
  ktune::fuzz::writeRaw(base + ".isa.txt", (flags & 4) ? bin : std::string("isa"));

  auto obj = store->get(kKey);
  if (obj.ok()) {
    if (ktune::sha256Hex(obj->binary) != ktune::sha256Hex(bin) || (flags & 2))
      die(kTarget, "get() returned bytes that are not the stored binary");
  } else if (obj.status().code() != ktune::Code::kCorrupt) {
    die(kTarget, "get() of a present entry returned " + obj.status().toString());
  } else if (obj.status().message().empty()) {
    die(kTarget, "kCorrupt without a reason");
  }
  auto listed = store->list();
  if (!listed.ok() || listed->size() != 1 || (*listed)[0].key != kKey)
    die(kTarget, "list() does not show exactly the one entry");
  ktune::VerifyReport rep = store->verify();
  if (rep.checked != 1 || rep.corrupt.empty() == !obj.ok())
    die(kTarget, "verify() disagrees with get()");
  auto resolved = store->resolve(kKey.substr(0, 5));
  if (!resolved.ok() || *resolved != kKey) die(kTarget, "resolve() of a unique prefix failed");
  auto text = store->metadataJson(kKey);
  if (!text.ok() || *text != meta) die(kTarget, "metadataJson() is not the file's text");
  return 0;
}
