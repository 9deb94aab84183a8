// The kernel templates ktune ships, by name, for the CLI (`ktune compile <template>`) and for
// embedders who want a source without the tuned ops. Each entry names its embedded source file, its
// extern "C" entry point and default -D defines that make it compile on its own (the tuned ops and
// config spaces live with each kernel family: templates/rowwise.h, templates/gemm.h).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/config.h"
#include "base/status.h"
#include "templates/gemm.h"

namespace ktune::templates {

struct TemplateInfo {
  std::string name;         // "rmsnorm"
  std::string source_file;  // "rmsnorm.cuh"
  std::string entry;        // "ktune_rmsnorm"
  std::string description;
  std::string example_problem;  // what defaultDefines() compiles for, in words
};

using DefineList = std::vector<std::pair<std::string, std::string>>;

const std::vector<TemplateInfo>& catalog();
// kNotFound listing the known names when `name` is not a template.
Expected<TemplateInfo> findTemplate(const std::string& name);
// -D defines that make the template compile on its own for `arch`: the family's default config
// for a representative problem (example_problem); for a GEMM template the first curated config
// for that arch (templates/gemm/curated.json, arch level first), what the tuned op runs with
// tuning off. -D flags given by the user override them. kUnsupported when the template has no
// kernel for that vendor (e.g. gemm_mfma on sm_*).
Expected<DefineList> defaultDefines(const TemplateInfo& t, const std::string& arch);
// Before compiling: for a GEMM template, kInvalidArgument naming the constraint of the config
// space, or the problem rule (gemm::applicable, for the example problem in the -D LAYOUT given),
// that the final `defines` (defaults with the user's -D) break, and how to list the valid configs.
// Ok for other templates, for values that are not integers (the compiler judges those) and when
// nothing is broken.
Status checkDefines(const TemplateInfo& t, const std::string& arch, const DefineList& defines);
// The configs of a GEMM template's space that pass its constraints and apply to its example
// problem (in the layout of a LAYOUT define, when `defines` has one), in the space's order.
// kNotFound for a template without a config space here; kUnsupported as defaultDefines.
Expected<std::vector<Config>> validConfigs(const TemplateInfo& t, const std::string& arch,
                                           const DefineList& defines);
// The launch rule's answer for a GEMM template's config (the final `defines`) on its example
// problem, for a nominal device of `arch`: the block size and the dynamic shared memory
// (gemm::launchSharedBytes) the report computes occupancy for. kNotFound for a template without
// a launch rule here, kInvalidArgument when the defines pin no valid config.
Expected<gemm::LaunchPlan> exampleLaunch(const TemplateInfo& t, const std::string& arch,
                                         const DefineList& defines);
// Source text of a template (prelude included by the compilers; a GEMM kernel's is
// gemm::kernelSource: its folder's files with the shared GEMM part).
std::string_view sourceOf(const TemplateInfo& t);

}  // namespace ktune::templates
