// NVRTC compiler: CUDA source -> cubin (PTX and SASS on request), with the ptxas resource report.
// libnvrtc is opened with dlopen; no CUDA header or library is needed to build ktune.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/compiler.h"

namespace ktune {

struct NvrtcConfig {
  // Directory holding cuda_fp16.h / cuda_bf16.h (passed as -I). Empty: the build-time default
  // (KTUNE_DEFAULT_CUDA_INCLUDE, the toolkit CMake found).
  std::string cuda_include;
  // Libraries tried in order. Empty: libnvrtc.so.13, .so.12, .so, then the same names under the
  // toolkit's lib64/ and lib/ next to cuda_include.
  std::vector<std::string> library_candidates;
};

// Opens NVRTC. kUnavailable listing every library tried when none loads. The returned compiler is
// thread-safe (each compile uses its own nvrtcProgram).
Expected<std::unique_ptr<Compiler>> openNvrtcCompiler(const NvrtcConfig& config);

// Parses ptxas -v output (as NVRTC 12/13 print it with --ptxas-options=-v) for one function:
// "Used N registers", "N bytes smem", "N bytes stack frame, N bytes spill stores, N bytes spill
// loads". `function` is the mangled (lowered) name; empty takes the first function. Returns false
// when the function does not appear.
bool parsePtxasReport(const std::string& log, const std::string& function, ResourceUsage* out);
// Registers and stack frame (EIATTR_REGCOUNT / EIATTR_FRAME_SIZE of the kernel's symbol in
// .nv.info) read from a cubin, and shared bytes (.nv.shared.<entry>, an upper bound: it may
// include reserved memory) when *out has none; false when `cubin` is not a 64-bit ELF or has no
// such kernel. Used when NVRTC printed no ptxas report.
bool cubinResources(const std::string& cubin, const std::string& entry, ResourceUsage* out);
// SASS of a cubin via nvdisasm (else cuobjdump), looked for on PATH and in `bin_dir`; a sentence
// saying why when neither runs. Not an error: SASS is an optional view.
std::string sassDump(const std::string& cubin, const std::string& bin_dir);

}  // namespace ktune
