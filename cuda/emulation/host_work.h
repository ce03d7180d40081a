// What the emulated libraries built on the emulated runtime (cuBLASLt's and
// NCCL's stand-ins) ask of it, beyond the CUDA runtime API. Private to
// cuda/emulation/; defined in cudart_emulated.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>

namespace astrai::emu {

// Queues host work on `stream` in order with its kernels and copies, or
// records it into the graph the stream is capturing (a graph launch runs it
// again). It runs at the next synchronising call, under the runtime's lock;
// a KernelFault it throws is a fault of the stream (a sticky error).
void enqueue_host_work(cudaStream_t stream, std::function<void()> work);

// Whether [address, address + bytes) lies inside one live device allocation.
bool is_device_range(const void* address, size_t bytes);

// The calling thread's current device, and the device a stream belongs to
// (the current one for the legacy default stream, null).
int current_device();
int stream_device(cudaStream_t stream);

}  // namespace astrai::emu
