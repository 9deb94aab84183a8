// The kernel templates ktune ships, by name, for the CLI (`ktune compile <template>`) and for
// embedders who want a source without the tuned ops. Each entry names its embedded source file, its
// extern "C" entry point and default -D defines that make it compile on its own (the tuned ops and
// config spaces live with each kernel family: templates/rowwise.h, templates/gemm.h).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace ktune::templates {

struct TemplateInfo {
  std::string name;         // "rmsnorm"
  std::string source_file;  // "rmsnorm.cuh"
  std::string entry;        // "ktune_rmsnorm"
  std::string description;
  std::string example_problem;  // what defaultDefines() compiles for, in words
};

const std::vector<TemplateInfo>& catalog();
// kNotFound listing the known names when `name` is not a template.
Expected<TemplateInfo> findTemplate(const std::string& name);
// -D defines that make the template compile on its own for `arch`: the family's default config
// for a representative problem (example_problem); -D flags given by the user override them.
// kUnsupported when the template has no kernel for that vendor (e.g. gemm_mfma on sm_*).
Expected<std::vector<std::pair<std::string, std::string>>> defaultDefines(const TemplateInfo& t,
                                                                         const std::string& arch);
// Source text of a template (prelude included by the compilers; a GEMM kernel's is
// gemm::kernelSource: its folder's files with the shared GEMM part).
std::string_view sourceOf(const TemplateInfo& t);

}  // namespace ktune::templates
