#include "runtime/backend.h"

#include <algorithm>
#include <cstring>

namespace ktune {

const char* vendorName(Vendor v) {
  switch (v) {
    case Vendor::kNvidia: return "nvidia";
    case Vendor::kAmd: return "amd";
    case Vendor::kSimulated: return "sim";
  }
  return "unknown";
}

void KernelArgs::addBytes(const void* p, size_t size, size_t align) {
  size_t off = (storage_used_ + align - 1) / align * align;
  if (storage_.size() < off + size) storage_.resize(std::max<size_t>(off + size, 256) * 2);
  std::memcpy(storage_.data() + off, p, size);
  offsets_.push_back(off);
  storage_used_ = off + size;
  ptrs_.clear();
}

void** KernelArgs::data() {
  if (ptrs_.size() != offsets_.size()) {
    ptrs_.resize(offsets_.size());
    for (size_t i = 0; i < offsets_.size(); ++i) ptrs_[i] = storage_.data() + offsets_[i];
  }
  return ptrs_.data();
}

}  // namespace ktune
