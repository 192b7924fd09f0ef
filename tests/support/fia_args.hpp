// A case's reference::FiaCall as the public kvflash::FiaArgs (include/kvflash/fia.hpp): the same
// views and attributes member for member (FiaCall mirrors aclnnFusedInferAttentionScoreV4 as
// FiaArgs does; scale_value is FiaArgs::scale).
#pragma once

#include "fia_reference.hpp"
#include "kvflash/fia.hpp"

namespace kvflash::testing {

FiaArgs fia_args(const reference::FiaCall& call);

}  // namespace kvflash::testing
