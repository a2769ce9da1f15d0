#pragma once
// How runs that allocate and free the same large blocks over and over (training steps, GPT-2
// forward passes, benchmarks) ask the C library to treat freed memory.

namespace attn {

// Keeps freed blocks in the process for the next allocation. By default glibc hands a freed
// block back to the kernel when it is over its threshold (128 KiB at first, rising to at most
// 32 MiB as such blocks are freed) or sits at the top of a heap with enough free below it; the
// next use then faults it in again, a zeroed page at a time. Under a hypervisor a fault is dear
// (about 12 us on this project's machine):
// - a training step allocates the kernels' results afresh: the faults had cost twice the
//   arithmetic;
// - `bench --backward` frees and allocates its float64 copies every run: 6600 new pages a run at
//   n = 1024, H = 8, 446 ms a run with this against 529 ms without (1 thread);
// - a GPT-2 forward allocates every layer's activations afresh.
// A GPT-2 run calls it after the model is read: the weights keep their own huge-page mappings.
// Benchmarks hand the free blocks back before measuring a run's memory
// (lessons/bench_timing.hpp). Process-wide; nothing happens on a C library other than glibc.
void reuse_freed_memory();

}  // namespace attn
