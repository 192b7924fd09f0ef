// Reading and writing single elements of a TensorView in tests: the oracle's own element access
// (reference/element_access.hpp), under the names the case builders and comparators use.
#pragma once

#include "element_access.hpp"  // reference/

namespace kvflash::testing {

using reference::element_at;
using reference::element_at_flat;
using reference::load_element;
using reference::load_element_flat;
using reference::store_element;
using reference::store_element_flat;

}  // namespace kvflash::testing
