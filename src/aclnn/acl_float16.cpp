// aclFloat16ToFloat and aclFloatToFloat16 (include/acl/acl_base.h): the library's exact fp16
// conversions (core/half.hpp) under CANN's names.
#include "acl/acl_base.h"
#include "core/half.hpp"

extern "C" {

float aclFloat16ToFloat(aclFloat16 value) { return kvflash::core::fp16_to_float(value); }

aclFloat16 aclFloatToFloat16(float value) { return kvflash::core::float_to_fp16(value); }

}  // extern "C"
