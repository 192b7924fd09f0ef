#include "hooks/sfa_path.hpp"

#include "ops/sfa/sfa_bind.hpp"

namespace kvflash::cuda {

SfaPathChoice sfa_path_for(const core::SfaProblem& p, const SfaArgs& args) {
  core::SfaData d;
  sfa::bind_data(p, args, &d);
  return sfa_path_for(p, d);
}

}  // namespace kvflash::cuda
