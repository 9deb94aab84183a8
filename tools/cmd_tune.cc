#include "tools/commands.h"
namespace ktune::cli {
int cmdTune(const std::vector<std::string>&) {
  return fail(Status::Unavailable("`ktune tune` is being built"));
}
int cmdDb(const std::vector<std::string>&) {
  return fail(Status::Unavailable("`ktune db` is being built"));
}
}  // namespace ktune::cli
