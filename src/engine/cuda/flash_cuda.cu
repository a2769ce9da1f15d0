// FlashAttention forward on CUDA: the same algorithm and the same per-row arithmetic
// (include/attn/tile_math.hpp, exercised by the CPU tests) as the CPU kernel.
//
// Layout: one thread block per (query block of kBr rows, head); thread t owns query row
// blockIdx.x * kBr + t, keeps its q row, output accumulator and (m, l) in registers/local
// memory, and the block streams K and V through shared memory kBc keys at a time. This is
// the textbook mapping (FlashAttention-1 style), chosen to be readable, not to be fast.
#include <cuda_runtime.h>

#include "attn/engine/tile_math.hpp"
#include "flash_cuda.hpp"

namespace attn::cuda {
namespace {

constexpr int kBr = 64;  // query rows per block = threads per block
constexpr int kBc = 32;  // keys per shared-memory tile

__global__ void flash_forward_kernel(const float* q, const float* k, const float* v,
                                     const unsigned char* allowed, int mask_heads, int H, int Hkv,
                                     int Lq, int Lk, int d, int dv, bool causal, float scale_log2,
                                     float* out, float* lse) {
  extern __shared__ float smem[];
  float* k_tile = smem;             // [kBc][d]
  float* v_tile = smem + kBc * d;   // [kBc][dv]
  const int h = blockIdx.y, g = h / (H / Hkv);
  const int i0 = blockIdx.x * kBr, i = i0 + threadIdx.x;
  const bool active = i < Lq;

  float q_row[kMaxHeadDim], o_row[kMaxHeadDim];
  for (int c = 0; c < d; ++c) q_row[c] = active ? q[(size_t(h) * Lq + i) * d + c] * scale_log2 : 0.0f;
  for (int c = 0; c < dv; ++c) o_row[c] = 0.0f;
  tile::RowState<float> st = tile::row_start<float>();

  // Causal: key tiles past the last key this block's last row sees are never loaded.
  const int rows_end = min(i0 + kBr, Lq);
  const int key_end = causal ? int(tile::causal_key_end(rows_end, Lq, Lk)) : Lk;
  for (int j0 = 0; j0 < key_end; j0 += kBc) {
    const int cols = min(kBc, key_end - j0);
    for (int x = threadIdx.x; x < cols * d; x += blockDim.x)
      k_tile[x] = k[(size_t(g) * Lk + j0 + x / d) * d + x % d];
    for (int x = threadIdx.x; x < cols * dv; x += blockDim.x)
      v_tile[x] = v[(size_t(g) * Lk + j0 + x / dv) * dv + x % dv];
    __syncthreads();
    if (active) {
      float s[kBc];
      float tile_max = -INFINITY;
      for (int jj = 0; jj < cols; ++jj) {
        const int j = j0 + jj;
        bool visible = !causal || tile::causal_visible(i, j, Lq, Lk);
        if (allowed) visible = visible && allowed[((size_t(mask_heads == 1 ? 0 : h) * Lq + i) * Lk) + j];
        float dot = 0.0f;
        for (int c = 0; c < d; ++c) dot += q_row[c] * k_tile[jj * d + c];
        s[jj] = visible ? dot : -INFINITY;
        tile_max = fmaxf(tile_max, s[jj]);
      }
      const float alpha = tile::row_rescale(st, tile_max);  // Algorithm 1, lines 10-11
      for (int c = 0; c < dv; ++c) o_row[c] *= alpha;
      if (st.m != -INFINITY) {
        for (int jj = 0; jj < cols; ++jj) {
          const float p = exp2f(s[jj] - st.m);  // 0 for masked keys
          st.l += p;
          for (int c = 0; c < dv; ++c) o_row[c] += p * v_tile[jj * dv + c];  // line 12
        }
      }
    }
    __syncthreads();
  }
  if (active) {
    const float inv_l = tile::row_output_scale(st);  // lines 13-15
    for (int c = 0; c < dv; ++c) out[(size_t(h) * Lq + i) * dv + c] = o_row[c] * inv_l;
    lse[size_t(h) * Lq + i] = tile::row_lse(st);
  }
}

// Device buffer that frees itself.
struct DeviceBuffer {
  void* ptr = nullptr;
  ~DeviceBuffer() { if (ptr) cudaFree(ptr); }
};

}  // namespace

bool device_usable(std::string& reason) {
  int count = 0;
  // Without a GPU this returns an error (35, insufficient driver, or 100, no device) and may
  // leave count untouched: test the error, not the count.
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    reason = std::string("no CUDA device (") + cudaGetErrorString(err) + ")";
    return false;
  }
  if (count == 0) {
    reason = "no CUDA device (the driver reports none)";
    return false;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  reason = prop.name;
  return true;
}

std::string flash_forward(const float* q, const float* k, const float* v,
                          const unsigned char* allowed, std::size_t mask_heads,
                          const FlashDims& dims, bool causal, float scale, float* out,
                          float* lse) {
  const std::size_t nq = dims.H * dims.Lq * dims.d, nk = dims.Hkv * dims.Lk * dims.d,
                    nv = dims.Hkv * dims.Lk * dims.dv, no = dims.H * dims.Lq * dims.dv,
                    nl = dims.H * dims.Lq, nm = allowed ? mask_heads * dims.Lq * dims.Lk : 0;
  DeviceBuffer dq, dk, dv, dm, dout, dlse;
  cudaError_t err = cudaSuccess;
  auto alloc_copy = [&](DeviceBuffer& b, const void* host, std::size_t bytes) {
    if (err == cudaSuccess) err = cudaMalloc(&b.ptr, bytes ? bytes : 1);
    if (err == cudaSuccess && host) err = cudaMemcpy(b.ptr, host, bytes, cudaMemcpyHostToDevice);
  };
  alloc_copy(dq, q, nq * sizeof(float));
  alloc_copy(dk, k, nk * sizeof(float));
  alloc_copy(dv, v, nv * sizeof(float));
  alloc_copy(dm, allowed, nm);
  alloc_copy(dout, nullptr, no * sizeof(float));
  alloc_copy(dlse, nullptr, nl * sizeof(float));
  if (err != cudaSuccess) return cudaGetErrorString(err);

  const dim3 grid(unsigned((dims.Lq + kBr - 1) / kBr), unsigned(dims.H));
  const std::size_t shared = kBc * (dims.d + dims.dv) * sizeof(float);
  // Past 48 KiB of dynamic shared memory a kernel must opt in (d = dv = 256 needs 64 KiB).
  if (shared > 48 * 1024) {
    err = cudaFuncSetAttribute(flash_forward_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared));
    if (err != cudaSuccess) return cudaGetErrorString(err);
  }
  flash_forward_kernel<<<grid, kBr, shared>>>(
      static_cast<const float*>(dq.ptr), static_cast<const float*>(dk.ptr),
      static_cast<const float*>(dv.ptr), allowed ? static_cast<const unsigned char*>(dm.ptr) : nullptr,
      int(mask_heads), int(dims.H), int(dims.Hkv), int(dims.Lq), int(dims.Lk), int(dims.d),
      int(dims.dv), causal, scale * float(tile::kLog2ed), static_cast<float*>(dout.ptr),
      static_cast<float*>(dlse.ptr));
  err = cudaGetLastError();
  if (err == cudaSuccess) err = cudaMemcpy(out, dout.ptr, no * sizeof(float), cudaMemcpyDeviceToHost);
  if (err == cudaSuccess) err = cudaMemcpy(lse, dlse.ptr, nl * sizeof(float), cudaMemcpyDeviceToHost);
  return err == cudaSuccess ? std::string() : std::string(cudaGetErrorString(err));
}

}  // namespace attn::cuda
