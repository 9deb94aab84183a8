// The vendor library's answers kept beside the code objects: its heuristic's candidate list for
// one GEMM problem (ids in its order, the default, the wide-tile pick), in
// <cache dir>/vendor/<sha256 of the key>.json. A process whose answers are kept asks the library
// nothing for that problem: on an H200 a process's first heuristic query costs 70-110 ms of
// one-time set-up inside cuBLASLt, on the critical path of a warm `ktune tune` in both the tuning
// process (its candidate list) and its worker (the trusted reference) (bench/NOTES.md, issue 34).
// The key holds the library and its version, the device (name, arch, SMs, driver), the problem
// (its aligned shape key) and the list's length, so another library, driver or GPU asks again.
// Options::vendor_answers (KTUNE_VENDOR_ANSWERS=0) turns it off.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/device.h"
#include "ops/gemm_vendor.h"

namespace ktune::vendor_answers {

// The key of `s`'s list from library `source` at `version` on `dev`, `max_algos` long.
std::string key(const std::string& source, const std::string& version, const DeviceInfo& dev,
                const gemm::GemmShape& s, int max_algos);
// The list kept for `key` under `cache_dir`, or nullopt (none, unreadable, or not this key's: a
// malformed file is a miss, and the next write replaces it).
std::optional<std::vector<VendorCandidate>> read(const std::string& cache_dir, const std::string& key);
// Keeps `list` for `key` (best effort: a write that fails only means the next process asks).
void write(const std::string& cache_dir, const std::string& key,
           const std::vector<VendorCandidate>& list);

// `s`'s candidates from `v`: the kept list where `cache_dir` holds one, else the library's
// (v.candidates), kept for the next process when it is not empty. An empty cache_dir: the
// library's, nothing kept.
std::vector<VendorCandidate> candidates(const GemmVendor& v, const std::string& cache_dir,
                                        const DeviceInfo& dev, const gemm::GemmShape& s,
                                        int max_algos);
// The kept list's default id for `s` (the library's own choice, what an empty id runs), or "" when
// none is kept: the library is then asked.
std::string keptDefault(const GemmVendor& v, const std::string& cache_dir, const DeviceInfo& dev,
                        const gemm::GemmShape& s, int max_algos);

}  // namespace ktune::vendor_answers
