// ScatterPaKvCache's arguments, declared once (core/fields.hpp): every member of
// ScatterPaKvCacheArgs but num_threads, in the order of aclnnScatterPaKvCacheGetWorkspaceSize's
// parameters. The plan's strip/match/fingerprint, the aclnn entry point and the PyTorch kernels
// iterate this table.
#pragma once

#include <tuple>

#include "core/fields.hpp"
#include "kvflash/kv_cache.hpp"

namespace kvflash::kv_cache {

inline constexpr auto kFields = std::tuple{
    core::field("key", "key", &ScatterPaKvCacheArgs::key),
    core::field("key_cache", "keyCacheRef", &ScatterPaKvCacheArgs::key_cache),
    core::field("slot_mapping", "slotMapping", &ScatterPaKvCacheArgs::slot_mapping),
    core::field("value", "value", &ScatterPaKvCacheArgs::value),
    core::field("value_cache", "valueCacheRef", &ScatterPaKvCacheArgs::value_cache),
    core::field("compress_lens", "compressLensOptional", &ScatterPaKvCacheArgs::compress_lens),
    core::field("compress_seq_offsets", "compressSeqOffsetOptional",
                &ScatterPaKvCacheArgs::compress_seq_offsets),
    core::field("seq_lens", "seqLensOptional", &ScatterPaKvCacheArgs::seq_lens),
    core::field("cache_mode", "cacheModeOptional", &ScatterPaKvCacheArgs::cache_mode),
    core::field("scatter_mode", "scatterModeOptional", &ScatterPaKvCacheArgs::scatter_mode),
    core::field("strides", "stridesOptional", &ScatterPaKvCacheArgs::strides),
    core::field("offsets", "offsetsOptional", &ScatterPaKvCacheArgs::offsets),
};

}  // namespace kvflash::kv_cache
