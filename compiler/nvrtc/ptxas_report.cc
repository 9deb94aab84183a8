// The parts of the NVRTC compiler that other paths share (the IR front door's PTX and cubin
// inputs): the ptxas report parser, cubin resource extraction and the SASS view. Built even when
// NVRTC is not (KTUNE_WITH_CUDA=OFF): none of it needs a CUDA library.
#include <regex>
#include <sstream>

#include "base/fs.h"
#include "base/subprocess.h"
#include "compiler/compiler_util.h"
#include "compiler/nvrtc/nvrtc_compiler.h"

namespace ktune {

using compiler_detail::TempDir;

// Last resort when no ptxas report exists (NVRTC reused a program compiled by another process
// or earlier): read the cubin. The kernel's .text section's sh_info is its symbol index; the
// global .nv.info section holds EIATTR_REGCOUNT (0x2f) and EIATTR_FRAME_SIZE (0x11) records
// {u8 format, u8 attribute, u16 size, u32 symbol, u32 value}; static shared memory is the size of
// .nv.shared.<entry> less the driver's reservation (see below). Spill counts are not recoverable this way.
bool cubinResources(const std::string& elf, const std::string& entry, ResourceUsage* r) {
  auto rd = [&](uint64_t off, size_t n) -> uint64_t {
    uint64_t v = 0;
    if (off + n > elf.size()) return 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t(static_cast<unsigned char>(elf[off + i])) << (8 * i);
    return v;
  };
  if (elf.size() < 64 || elf.compare(0, 4, "\x7f" "ELF") != 0 || elf[4] != 2) return false;
  const uint64_t shoff = rd(0x28, 8), shentsize = rd(0x3a, 2), shnum = rd(0x3c, 2),
                 shstrndx = rd(0x3e, 2);
  if (shentsize < 64 || shstrndx >= shnum || shoff + shnum * shentsize > elf.size()) return false;
  const uint64_t strtab = rd(shoff + shstrndx * shentsize + 0x18, 8);
  int64_t sym = -1;
  uint64_t info_off = 0, info_size = 0;
  int64_t shared = 0;
  for (uint64_t i = 0; i < shnum; ++i) {
    const uint64_t h = shoff + i * shentsize;
    const uint64_t name_off = strtab + rd(h, 4);
    if (name_off >= elf.size()) continue;
    const std::string name(elf.c_str() + name_off);
    if (name == ".text." + entry) sym = static_cast<int64_t>(rd(h + 0x2c, 4));
    else if (name == ".nv.shared." + entry) shared = static_cast<int64_t>(rd(h + 0x20, 8));
    else if (name == ".nv.info") { info_off = rd(h + 0x18, 8); info_size = rd(h + 0x20, 8); }
  }
  if (sym < 0 || info_size == 0 || info_off + info_size > elf.size()) return false;
  bool found = false;
  for (uint64_t p = info_off; p + 4 <= info_off + info_size;) {
    const unsigned fmt = static_cast<unsigned char>(elf[p]);
    const unsigned attr = static_cast<unsigned char>(elf[p + 1]);
    if (fmt != 0x04) {  // no payload beyond the 4-byte header
      p += 4;
      continue;
    }
    const uint64_t size = rd(p + 2, 2);
    if (size == 8 && static_cast<int64_t>(rd(p + 4, 4)) == sym) {
      if (attr == 0x2f) {
        r->registers = static_cast<int>(rd(p + 8, 4));
        found = true;
      } else if (attr == 0x11) {
        r->stack_bytes = static_cast<int64_t>(rd(p + 8, 4));
      }
    }
    p += 4 + size;
  }
  // .nv.shared.<entry> also holds the 1 KiB per block the driver reserves on sm_80 and newer
  // (every NVIDIA arch ktune targets): 3072 B in the section for a kernel ptxas reports as "2048
  // bytes smem", 1088 for the driver's 64 (tests/gpu/analysis_gpu_test compares with the driver).
  constexpr int64_t kReservedSharedPerBlock = 1024;
  if (shared >= kReservedSharedPerBlock) shared -= kReservedSharedPerBlock;
  if (found && r->shared_bytes == 0) r->shared_bytes = shared;
  return found;
}

bool parsePtxasReport(const std::string& log, const std::string& function, ResourceUsage* out) {
  static const std::regex entry_re(R"(Compiling entry function '([^']+)')");
  static const std::regex props_re(R"(Function properties for (\S+))");
  static const std::regex stack_re(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used_re(R"(Used (\d+) registers)");
  static const std::regex smem_re(R"((\d+) bytes smem)");
  std::istringstream in(log);
  std::string line, entry, props;
  bool found = false;
  ResourceUsage r = *out;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, entry_re)) {
      if (found) break;  // the function we wanted is complete
      entry = m[1];
      continue;
    }
    if (std::regex_search(line, m, props_re)) {
      props = m[1];
      continue;
    }
    const bool ours = function.empty() ? !entry.empty() : entry == function;
    if (std::regex_search(line, m, stack_re) && ours && props == entry) {
      r.stack_bytes = std::stoll(m[1]);
      r.spill_store_bytes = std::stoll(m[2]);
      r.spill_load_bytes = std::stoll(m[3]);
      found = true;
    }
    if (std::regex_search(line, m, used_re) && ours) {
      r.registers = std::stoi(m[1]);
      std::smatch s;
      r.shared_bytes = std::regex_search(line, s, smem_re) ? std::stoll(s[1]) : 0;
      found = true;
    }
  }
  if (found) *out = r;
  return found;
}

std::string sassDump(const std::string& cubin, const std::string& bin_dir) {
  std::string tool = findProgram("nvdisasm");
  std::vector<std::string> argv;
  if (tool.empty() && pathExists(bin_dir + "/nvdisasm")) tool = bin_dir + "/nvdisasm";
  if (!tool.empty()) {
    argv = {tool, "-c"};
  } else {
    tool = findProgram("cuobjdump");
    if (tool.empty() && pathExists(bin_dir + "/cuobjdump")) tool = bin_dir + "/cuobjdump";
    if (tool.empty())
      return "nvdisasm not installed (nor cuobjdump; looked on PATH and in " + bin_dir +
             "): SASS unavailable";
    argv = {tool, "-sass"};
  }
  auto dir = TempDir::create("ktune-sass-");
  if (!dir.ok()) return "SASS unavailable: " + dir.status().message();
  const std::string path = dir->file("kernel.cubin");
  if (!writeFileAtomic(path, cubin).ok()) return "SASS unavailable: cannot write " + path;
  argv.push_back(path);
  auto r = runProcess(argv, "", 60000);
  if (!r.ok()) return "SASS unavailable: " + r.status().message();
  if (r->exit_code != 0) return "SASS unavailable: " + argv[0] + " failed:\n" + r->err;
  return r->out;
}

}  // namespace ktune
