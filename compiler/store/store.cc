#include "compiler/store/store.h"

#include "base/sha256.h"
#include "base/version.h"

namespace ktune {

std::string codeObjectKey(const CompileRequest& req, const std::string& compiler_name,
                          const std::string& compiler_version) {
  Sha256 h;
  h.field("ktune-code-object").field(std::to_string(KTUNE_SCHEMA_VERSION));
  h.field(req.source).field(req.entry);
  h.field(std::to_string(req.defines.size()));
  for (const auto& [k, v] : req.defines) h.field(k).field(v);
  h.field(std::to_string(req.options.size()));
  for (const auto& o : req.options) h.field(o);
  h.field(std::to_string(req.dumps)).field(req.arch).field(compiler_name).field(compiler_version);
  return h.hexDigest();
}

bool isValidCodeObjectKey(const std::string& key) {
  if (key.size() != 64) return false;
  for (char c : key) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

CodeObjectStore::CodeObjectStore(std::string dir) : dir_(std::move(dir)) {}
Expected<std::shared_ptr<CodeObjectStore>> CodeObjectStore::open(const std::string&) {
  return Status::Internal("not implemented");
}
const std::string& CodeObjectStore::dir() const { return dir_; }
Expected<CodeObject> CodeObjectStore::get(const std::string&) const {
  return Status::Internal("not implemented");
}
Status CodeObjectStore::put(const std::string&, const CodeObject&) {
  return Status::Internal("not implemented");
}
Expected<CodeObject> CodeObjectStore::getOrCompile(Compiler& compiler, const CompileRequest& req,
                                                   bool* hit, std::string* note) {
  if (hit) *hit = false;
  return compiler.compile(req);
}
Expected<std::vector<StoreEntryInfo>> CodeObjectStore::list() const {
  return Status::Internal("not implemented");
}
Expected<std::string> CodeObjectStore::metadataJson(const std::string&) const {
  return Status::Internal("not implemented");
}
Expected<std::string> CodeObjectStore::resolve(const std::string&) const {
  return Status::Internal("not implemented");
}
Status CodeObjectStore::remove(const std::string&) { return Status::Internal("not implemented"); }
Status CodeObjectStore::clear() { return Status::Internal("not implemented"); }
VerifyReport CodeObjectStore::verify() const { return {}; }
uint64_t CodeObjectStore::sizeBytes() const { return 0; }
std::string CodeObjectStore::objectsDir() const { return dir_ + "/objects"; }
std::string CodeObjectStore::entryPath(const std::string& key, const std::string& suffix) const {
  return objectsDir() + "/" + key.substr(0, 2) + "/" + key + suffix;
}

}  // namespace ktune
