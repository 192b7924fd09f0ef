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

std::string li_scores_schema() {
  return edit_schema(kLiNpuSchema, {{"npu_lightning_indexer(", "lightning_indexer_scores("},
                                    {", bool return_value=False) -> (Tensor, Tensor)",
                                     ") -> (Tensor sparse_indices, Tensor scores)"}});
}

std::string fia_out_schema(bool v2) {
  const char* name =
      v2 ? "npu_fused_infer_attention_score_v2(" : "npu_fused_infer_attention_score(";
  const char* last = v2 ? "int? out_dtype=None" : "bool softmax_lse_flag=False";
  const std::string from = std::string(last) + ") -> (Tensor, Tensor)";
  const std::string to = std::string(last) +
                         ", Tensor? workspace=None, Tensor(a!) attention_out, Tensor(b!) "
                         "softmax_lse) -> (Tensor(a!), Tensor(b!))";
  const std::string out_name = std::string(name, std::string_view(name).size() - 1) + ".out(";
  return edit_schema(v2 ? kFiaV2NpuSchema : kFiaNpuSchema, {{name, out_name}, {from, to}});
}

std::string fia_workspace_schema(bool v2) {
  const char* name =
      v2 ? "npu_fused_infer_attention_score_v2(" : "npu_fused_infer_attention_score(";
  const std::string ws_name =
      "_" + std::string(name, std::string_view(name).size() - 1) + "_get_max_workspace(";
  return edit_schema(v2 ? kFiaV2NpuSchema : kFiaNpuSchema,
                     {{name, ws_name}, {") -> (Tensor, Tensor)", ") -> Tensor"}});
}

}  // namespace kvflash::torch_ext
