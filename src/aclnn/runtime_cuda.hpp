// The ACL runtime on the CUDA runtime (KVFLASH_ACL_BACKEND=cuda, see acl_backend.hpp): the
// DeviceRuntime (device_runtime.hpp) of cuda_device_runtime(), which the C entry points
// (runtime.cpp, events.cpp, executor.cpp) call after checking their arguments exactly as on the
// host. Plain C++ (no CUDA header), defined in builds with the CUDA backend (KVFLASH_HAVE_CUDA).
//
// Mapping: aclrtMalloc/Free -> cudaMalloc/cudaFree; aclrtMallocHost/FreeHost -> cudaMallocHost /
// cudaFreeHost (pinned); aclrtMemcpy(Async) -> cudaMemcpy(Async) with the matching cudaMemcpyKind;
// aclrtMemset(Async) -> cudaMemset(Async); a stream -> a cudaStream_t (the null aclrtStream -> the
// legacy default stream); aclrtSynchronizeStream/Device -> cudaStreamSynchronize /
// cudaDeviceSynchronize; aclrtSetDevice -> cudaSetDevice.
//
// Errors found while running (ACL semantics, as on the CPU): a phase-2 run returns at once after
// queuing its kernels, so neither a failed run nor bad device data can be reported by the aclnn
// call. Each stream keeps, in launch order, (1) the failures runs returned on the calling thread
// and (2) the fault record of each run whose plan writes one (core/device_fault.hpp), copied in
// stream order from the start of its workspace into a pinned host slot of
// sizeof(core::FaultRecord). aclrtSynchronizeStream (and aclrtSynchronizeDevice) synchronise,
// then decode the records in launch order with the executor's decode_fault (the plan entry's
// fault hook): the first failure is reported, 507015 for bad device data, and forgotten. No host
// synchronisation happens inside an aclnn call, so a run can also be captured in a CUDA graph.
#pragma once

#include "aclnn/device_runtime.hpp"
