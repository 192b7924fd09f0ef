#include "schemas.hpp"

#include <c10/util/Exception.h>

namespace kvflash::torch_ext {

std::string edit_schema(std::string_view schema,
                        const std::vector<std::pair<std::string_view, std::string_view>>& edits) {
  std::string s(schema);
  for (const auto& [from, to] : edits) {
    const size_t at = s.find(from);
    TORCH_CHECK(at != std::string::npos && s.find(from, at + 1) == std::string::npos,
                "kvflash: a derived schema expects \"", from, "\" once in ", schema);
    s.replace(at, from.size(), to);
  }
  return s;
}

std::string ifa_ext_schema() {
  return edit_schema(kIfaNpuSchema,
                     {{"npu_incre_flash_attention(", "incre_flash_attention("},
                      {"Tensor key, Tensor value,", "Tensor[] key, Tensor[] value,"},
                      {") -> Tensor",
                       ", bool return_softmax_lse=False, bool zero_fully_masked_rows=False) -> "
                       "(Tensor attention_out, Tensor softmax_lse)"}});
}

}  // namespace kvflash::torch_ext
