// ktune code-object store — a content-addressed on-disk cache of compiled kernels.
//
// Layout (one directory per user, mode 0700, refused if owned by someone else or writable by
// group/others, because code loaded from it runs on the GPU):
//
//   <dir>/objects/<key[0:2]>/<key>.bin              the binary (cubin / hsaco / sim)
//   <dir>/objects/<key[0:2]>/<key>.json             metadata; its presence commits the entry
//   <dir>/objects/<key[0:2]>/<key>.<dump>.txt       dumps (source, ptx, sass, llvm, isa, mlir)
//
// Metadata JSON: {"format_version":1,"key","binary_sha256","binary_bytes","format","arch","entry",
// "lowered_entry","compiler","compiler_version","options":[...],"resources":{...},"compile_ms",
// "created","ktune_version","log","dumps":{"<name>":{"file","sha256","bytes"}}}. Dumps are
// hash-checked like the binary. Writers of a shard serialise on <dir>/objects/<key[0:2]>/lock.
//
// Writes go dumps → bin → json, each via writeFileAtomic (temp file + fsync + rename), so a
// concurrent reader or a crash mid-put sees either no entry or a complete one; two writers of the
// same key write identical content (the key is a hash of everything that determines it), so the
// last rename wins harmlessly. get() re-hashes the binary against the metadata on every load.
//
// Thread safety: every method is safe to call concurrently from many threads and processes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "compiler/compiler.h"

namespace ktune {

// Content key of a compile: sha256 hex (64 lowercase chars) over source, entry, defines (in
// order), options, arch, compiler name + version, KTUNE_SCHEMA_VERSION and, for modules other
// than C++, their language (the IR compiler's version lists its toolchain), each field
// length-prefixed. The requested dumps are not part of it (see getOrCompile). Pure function;
// thread-safe. source_name is NOT part of the key (diagnostics only).
std::string codeObjectKey(const CompileRequest& req, const std::string& compiler_name,
                          const std::string& compiler_version);

// The largest code-object metadata file (or portable metadata text) read; a larger one is refused
// before it is read (a store entry over it reads as corrupt). Metadata is a few KB; compiler logs
// are cut at 1 MiB when written.
constexpr uint64_t kStoreMetadataMaxBytes = uint64_t(4) << 20;

// True if `key` is 64 lowercase hex characters (the only form ever joined onto a path).
bool isValidCodeObjectKey(const std::string& key);

// Portable form of a code object, for sharing it between machines (remote/): the metadata JSON
// the store writes (without dumps) plus the binary. codeObjectFromPortable checks both as get()
// does (metadata format, key, size, sha256): kCorrupt with the reason, kInvalidArgument for a
// malformed key. Pure functions; thread-safe.
std::string portableMetadata(const std::string& key, const CodeObject& obj);
Expected<CodeObject> codeObjectFromPortable(const std::string& key, const std::string& metadata,
                                            const std::string& binary);

// One entry as listed by CodeObjectStore::list() (from its metadata; binary not read).
struct StoreEntryInfo {
  std::string key, entry, arch, compiler, compiler_version, created;
  int64_t binary_bytes = 0;
  double compile_ms = 0;
};

// Result of CodeObjectStore::verify(): entries checked, and (key, reason) for each bad one.
struct VerifyReport {
  int checked = 0;
  std::vector<std::pair<std::string, std::string>> corrupt;
};

class CodeObjectStore {
 public:
  // Creates `dir` 0700 if missing; refuses a dir not owned by the user or writable by others
  // (base/fs.h checkPrivateDir) with kInvalidArgument and advice. A read-only dir opens fine for
  // reading; put() then fails clearly (kIoError naming the path).
  static Expected<std::shared_ptr<CodeObjectStore>> open(const std::string& dir);

  // The directory passed to open().
  const std::string& dir() const;

  // The stored object. kInvalidArgument for a malformed key, kNotFound if absent, kCorrupt with
  // the reason (size/sha256 mismatch, truncated or unparsable metadata, missing binary).
  Expected<CodeObject> get(const std::string& key) const;

  // Stores `obj` under `key` (dumps, binary, then metadata last). kInvalidArgument for a malformed
  // key; kIoError (disk full, read-only) naming the path. Overwrites an existing entry.
  Status put(const std::string& key, const CodeObject& obj);

  // Hit -> stored object (*hit=true). Miss or corrupt -> compile, put, return (*hit=false); a
  // corrupt entry is reported in *note ("entry <key> corrupt (sha256 mismatch), recompiled") and
  // replaced. A failed put (disk full, read-only) still returns the compiled object, with the
  // reason in *note. A compile error is returned as is (nothing stored). An entry that lacks a
  // requested dump is compiled again with its dumps plus the new ones and replaced (not a hit).
  // A miss whose compile another thread of this process is running, through this store or another
  // one opened on the same directory, waits for that compile and returns its object (not a hit)
  // instead of compiling it again.
  Expected<CodeObject> getOrCompile(Compiler& compiler, const CompileRequest& req,
                                    bool* hit = nullptr, std::string* note = nullptr);

  // Every committed entry (metadata present and parsable), sorted by key. Entries whose metadata
  // cannot be parsed are listed with only `key` set (verify() says why). kIoError if unreadable.
  Expected<std::vector<StoreEntryInfo>> list() const;

  // The metadata JSON text of `key` (kNotFound / kInvalidArgument as get()).
  Expected<std::string> metadataJson(const std::string& key) const;

  // Unique key starting with `key_prefix` (>= 1 hex char). kNotFound if none, kInvalidArgument if
  // the prefix is not hex or matches several keys (the message lists a few).
  Expected<std::string> resolve(const std::string& key_prefix) const;

  // Removes the entry's files (metadata first, so it is uncommitted before the rest goes). OK if
  // absent; kInvalidArgument for a malformed key.
  Status remove(const std::string& key);

  // Removes every entry (the objects/ tree); the store stays usable.
  Status clear();

  // Re-hashes every entry; never fails (an unreadable store is reported as one corrupt item).
  VerifyReport verify() const;

  // Bytes of all files under objects/.
  uint64_t sizeBytes() const;

 private:
  explicit CodeObjectStore(std::string dir);
  std::string objectsDir() const;
  std::string entryPath(const std::string& key, const std::string& suffix) const;

  std::string dir_;
};

}  // namespace ktune
