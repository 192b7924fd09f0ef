#include "ops/li/li_bind.hpp"

#include <cstdio>

#include "core/plan_fields.hpp"
#include "core/view_check.hpp"
#include "ops/li/li_fields.hpp"
#include "ops/li/li_validate.hpp"

namespace kvflash::li {

LightningIndexerArgs strip_data(const LightningIndexerArgs& args, const core::LiProblem&) {
  LightningIndexerArgs m = core::strip_fields(kFields, args);
  // Without return_value sparse_values is not even looked at: runs ignore it too.
  if (!m.return_value) m.sparse_values.reset();
  return m;
}

Status check_matches_plan(const LightningIndexerArgs& p, const LightningIndexerArgs& a) {
  return core::match_fields(kOpName, kFields, p, a);
}

void bind_data(const core::LiProblem& p, const LightningIndexerArgs& a, core::LiData* d) {
  *d = core::LiData{};
  d->query = core::element0(a.query);
  d->key = core::element0(a.key);
  d->weights = core::element0(a.weights);
  if (p.has_asq) d->asq = core::element0(*a.actual_seq_lengths_query);
  if (p.has_ask) d->ask = core::element0(*a.actual_seq_lengths_key);
  if (p.key_layout == core::LiKeyLayout::kPaged)
    d->block_table = static_cast<const int32_t*>(core::element0(*a.block_table));
  d->indices = static_cast<int32_t*>(core::element0(a.sparse_indices));
  if (p.return_value) d->values = core::element0(*a.sparse_values);
  if (p.scores_out) d->scores = static_cast<float*>(core::element0(*a.sparse_values));
}

void describe(const core::LiProblem& p, char* buf, size_t size) {
  std::snprintf(buf, size, "B=%lld N=%lld K=%lld rows=%lld %s%s", static_cast<long long>(p.batch),
                static_cast<long long>(p.num_heads), static_cast<long long>(p.sparse_count),
                static_cast<long long>(p.num_rows), dtype_name(p.dtype),
                p.key_layout == core::LiKeyLayout::kPaged ? " paged" : "");
}

}  // namespace kvflash::li
