#include "compiler/hip/comgr.h"

#include <cstdint>
#include <mutex>

#include "base/dylib.h"

namespace ktune {
namespace {

// The stable comgr C ABI (amd_comgr.h, v2), declared here so no ROCm header is needed to build.
using cg_status = int;
struct cg_data {
  uint64_t handle;
};
struct cg_data_set {
  uint64_t handle;
};
struct cg_action_info {
  uint64_t handle;
};
struct cg_meta {
  uint64_t handle;
};
constexpr cg_status kOk = 0;
constexpr int kDataKindExecutable = 0x8;
constexpr int kDataKindSource = 0x1;
constexpr int kActionDisassembleExecutableToSource = 0xC;
constexpr int kMetaString = 0x1;

std::mutex& comgrMutex() { return amdToolchainMutex(); }

}  // namespace

std::mutex& amdToolchainMutex() {
  static std::mutex m;
  return m;
}

// The comgr entry points ktune uses (amd_comgr_<name>).
#define KTUNE_COMGR_ENTRY_POINTS(X)                                                       \
  X(cg_status, status_string, (cg_status, const char**))                                  \
  X(void, get_version, (size_t*, size_t*))                                                \
  X(cg_status, get_isa_count, (size_t*))                                                  \
  X(cg_status, get_isa_name, (size_t, const char**))                                      \
  X(cg_status, create_data, (int, cg_data*))                                              \
  X(cg_status, release_data, (cg_data))                                                   \
  X(cg_status, set_data, (cg_data, size_t, const char*))                                  \
  X(cg_status, set_data_name, (cg_data, const char*))                                     \
  X(cg_status, get_data, (cg_data, size_t*, char*))                                       \
  X(cg_status, get_data_isa_name, (cg_data, size_t*, char*))                              \
  X(cg_status, create_data_set, (cg_data_set*))                                           \
  X(cg_status, destroy_data_set, (cg_data_set))                                           \
  X(cg_status, data_set_add, (cg_data_set, cg_data))                                      \
  X(cg_status, action_data_get_data, (cg_data_set, int, size_t, cg_data*))                \
  X(cg_status, create_action_info, (cg_action_info*))                                     \
  X(cg_status, destroy_action_info, (cg_action_info))                                     \
  X(cg_status, action_info_set_isa_name, (cg_action_info, const char*))                   \
  X(cg_status, do_action, (int, cg_action_info, cg_data_set, cg_data_set))                \
  X(cg_status, get_data_metadata, (cg_data, cg_meta*))                                    \
  X(cg_status, destroy_metadata, (cg_meta))                                               \
  X(cg_status, get_metadata_kind, (cg_meta, int*))                                        \
  X(cg_status, get_metadata_string, (cg_meta, size_t*, char*))                            \
  X(cg_status, metadata_lookup, (cg_meta, const char*, cg_meta*))                         \
  X(cg_status, get_metadata_list_size, (cg_meta, size_t*))                                \
  X(cg_status, index_list_metadata, (cg_meta, size_t, cg_meta*))                          \
  X(cg_status, iterate_map_metadata, (cg_meta, cg_status (*)(cg_meta, cg_meta, void*), void*))

struct Comgr::Api {
  DynLib lib;
  KTUNE_DYLIB_ENTRY_POINTS(KTUNE_COMGR_ENTRY_POINTS)

  Status check(cg_status s, const char* what) const {
    if (s == kOk) return Status::Ok();
    const char* msg = "unknown";
    if (status_string) status_string(s, &msg);
    return Status::Internal(std::string("comgr ") + what + " failed: " + msg);
  }
  std::string metaString(cg_meta m) const {
    size_t n = 0;
    if (get_metadata_string(m, &n, nullptr) != kOk || n == 0) return "";
    std::string s(n, '\0');
    if (get_metadata_string(m, &n, s.data()) != kOk) return "";
    while (!s.empty() && s.back() == '\0') s.pop_back();
    return s;
  }
  // A code-object data handle, released on scope exit.
  struct Data {
    const Api* api;
    cg_data d{0};
    ~Data() {
      if (d.handle) api->release_data(d);
    }
  };
  Status makeExecutable(const std::string& hsaco, Data* out) const {
    KTUNE_RETURN_IF_ERROR(check(create_data(kDataKindExecutable, &out->d), "create_data"));
    KTUNE_RETURN_IF_ERROR(check(set_data(out->d, hsaco.size(), hsaco.data()), "set_data"));
    return check(set_data_name(out->d, "kernel.hsaco"), "set_data_name");
  }
};

Expected<std::shared_ptr<Comgr>> Comgr::open() {
  auto api = std::make_unique<Api>();
  KTUNE_ASSIGN_OR_RETURN(api->lib,
                         DynLib::open({"libamd_comgr.so.2", "libamd_comgr.so.3", "libamd_comgr.so"},
                                      "AMD code-object manager (comgr)"));
  KTUNE_RETURN_IF_ERROR(api->bindEntryPoints(api->lib, "amd_comgr_"));
  std::shared_ptr<Comgr> c(new Comgr());
  c->api_ = std::move(api);
  return c;
}

Comgr::~Comgr() = default;

std::string Comgr::version() const {
  size_t major = 0, minor = 0;
  api_->get_version(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

std::vector<std::string> Comgr::isaNames() const {
  std::lock_guard<std::mutex> lock(comgrMutex());
  std::vector<std::string> out;
  size_t n = 0;
  if (api_->get_isa_count(&n) != kOk) return out;
  for (size_t i = 0; i < n; ++i) {
    const char* name = nullptr;
    if (api_->get_isa_name(i, &name) != kOk || !name) continue;
    std::string s = name;
    const auto dash = s.rfind("--");
    if (dash != std::string::npos) s = s.substr(dash + 2);
    s = s.substr(0, s.find(':'));
    out.push_back(s);
  }
  return out;
}

Expected<std::string> Comgr::isaName(const std::string& hsaco) const {
  std::lock_guard<std::mutex> lock(comgrMutex());
  Api::Data data{api_.get()};
  KTUNE_RETURN_IF_ERROR(api_->makeExecutable(hsaco, &data));
  size_t n = 0;
  KTUNE_RETURN_IF_ERROR(
      api_->check(api_->get_data_isa_name(data.d, &n, nullptr), "get_data_isa_name"));
  std::string s(n, '\0');
  KTUNE_RETURN_IF_ERROR(
      api_->check(api_->get_data_isa_name(data.d, &n, s.data()), "get_data_isa_name"));
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

Expected<std::string> Comgr::disassemble(const std::string& hsaco) const {
  KTUNE_ASSIGN_OR_RETURN(std::string isa, isaName(hsaco));
  std::lock_guard<std::mutex> lock(comgrMutex());
  const Api& a = *api_;
  Api::Data data{&a};
  KTUNE_RETURN_IF_ERROR(a.makeExecutable(hsaco, &data));
  cg_data_set in{0}, out{0};
  cg_action_info info{0};
  Status st = a.check(a.create_data_set(&in), "create_data_set");
  if (st.ok()) st = a.check(a.create_data_set(&out), "create_data_set");
  if (st.ok()) st = a.check(a.data_set_add(in, data.d), "data_set_add");
  if (st.ok()) st = a.check(a.create_action_info(&info), "create_action_info");
  if (st.ok()) st = a.check(a.action_info_set_isa_name(info, isa.c_str()), "set_isa_name");
  if (st.ok())
    st = a.check(a.do_action(kActionDisassembleExecutableToSource, info, in, out), "disassemble");
  std::string text;
  if (st.ok()) {
    Api::Data src{&a};
    st = a.check(a.action_data_get_data(out, kDataKindSource, 0, &src.d), "action_data_get_data");
    size_t n = 0;
    if (st.ok()) st = a.check(a.get_data(src.d, &n, nullptr), "get_data");
    if (st.ok()) {
      text.resize(n);
      st = a.check(a.get_data(src.d, &n, text.data()), "get_data");
    }
  }
  if (info.handle) a.destroy_action_info(info);
  if (in.handle) a.destroy_data_set(in);
  if (out.handle) a.destroy_data_set(out);
  if (!st.ok()) return st.withContext("disassembling a " + isa + " code object");
  return text;
}

Expected<std::vector<AmdKernelMeta>> Comgr::kernels(const std::string& hsaco) const {
  std::lock_guard<std::mutex> lock(comgrMutex());
  const Api& a = *api_;
  Api::Data data{&a};
  KTUNE_RETURN_IF_ERROR(a.makeExecutable(hsaco, &data));
  cg_meta root{0}, list{0};
  KTUNE_RETURN_IF_ERROR(a.check(a.get_data_metadata(data.d, &root), "get_data_metadata"));
  std::vector<AmdKernelMeta> out;
  Status st =
      a.check(a.metadata_lookup(root, "amdhsa.kernels", &list), "metadata_lookup(amdhsa.kernels)");
  size_t n = 0;
  if (st.ok()) st = a.check(a.get_metadata_list_size(list, &n), "get_metadata_list_size");
  struct Ctx {
    const Api* a;
    AmdKernelMeta* k;
  };
  for (size_t i = 0; st.ok() && i < n; ++i) {
    cg_meta km{0};
    st = a.check(a.index_list_metadata(list, i, &km), "index_list_metadata");
    if (!st.ok()) break;
    out.emplace_back();
    Ctx ctx{&a, &out.back()};
    auto cb = [](cg_meta key, cg_meta value, void* user) -> cg_status {
      auto* c = static_cast<Ctx*>(user);
      int kind = 0;
      if (c->a->get_metadata_kind(value, &kind) == kOk && kind == kMetaString)
        c->k->fields[c->a->metaString(key)] = c->a->metaString(value);
      return kOk;
    };
    st = a.check(a.iterate_map_metadata(km, cb, &ctx), "iterate_map_metadata");
    a.destroy_metadata(km);
    auto& k = out.back();
    k.name = k.fields.count(".name") ? k.fields[".name"] : "";
    k.symbol = k.fields.count(".symbol") ? k.fields[".symbol"] : "";
  }
  if (list.handle) a.destroy_metadata(list);
  a.destroy_metadata(root);
  if (!st.ok()) return st;
  return out;
}

}  // namespace ktune
