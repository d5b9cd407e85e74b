// Per-CTA time of an epilogue-like burst of global stores of a bf16 tile, measured with
// %globaltimer, and the time per launch of a kernel that does only that (back-to-back launches,
// CUDA events). Modes:
//   0: 16-B st.global per chunk from registers (the epilogue's way, values from LDS);
//   1: the same with one global load feeding every value (a bias-like dependency);
//   2: the tile converted into LDS, then one bulk copy (cp.async.bulk shared -> global) per
//      token row, issued by one thread per row; the CTA may exit once the copies have read LDS;
//   3: no stores (the baseline of the per-launch time).
// nvcc -O3 -std=c++17 -arch=sm_90a store_probe.cu -o store_probe
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
__device__ unsigned long long tbuf[4096 * 3];
__device__ __forceinline__ unsigned long long gt() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__device__ __forceinline__ uint32_t sa(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }

// rows x cols (bf16) tile per CTA; CTA c writes columns [c*cols, ...) of a [rows][ldy] matrix.
template <int MODE>
__global__ void __launch_bounds__(288) stores(uint4* y, int ldy_chunks, int rows, int col_chunks, const float* src,
                                              int record) {
  __shared__ float4 s[2048];
  __shared__ __align__(128) uint4 out[1024];  // mode 2: the bf16 tile, [rows][col_chunks]
  for (int i = threadIdx.x; i < 2048; i += blockDim.x) s[i] = make_float4(i, 1, 2, 3);
  __syncthreads();
  unsigned long long t0 = gt();
  const int chunks = rows * col_chunks;
  for (int ch = threadIdx.x; ch < chunks; ch += blockDim.x) {
    const int t = ch / col_chunks, c = ch % col_chunks;
    float4 a = s[(2 * ch) & 2047], b = s[(2 * ch + 1) & 2047];
    uint4 v = make_uint4(__float_as_uint(a.x + b.x), __float_as_uint(a.y), __float_as_uint(a.z), __float_as_uint(b.w));
    if (MODE == 1) v.x ^= (unsigned)src[0];
    if (MODE == 3) continue;
    if (MODE == 2)
      out[ch] = v;
    else
      y[(size_t)t * ldy_chunks + blockIdx.x * col_chunks + c] = v;
  }
  if (MODE == 2) {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // LDS writes -> the bulk copies
    __syncthreads();
    if (threadIdx.x < rows) {
      const uint4* g = y + (size_t)threadIdx.x * ldy_chunks + blockIdx.x * col_chunks;
      asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(g),
                   "r"(sa(out + threadIdx.x * col_chunks)), "r"(col_chunks * 16)
                   : "memory");
      asm volatile("cp.async.bulk.commit_group;" ::: "memory");
      asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");  // LDS may be released
    }
  }
  unsigned long long t1 = gt();
  __syncthreads();
  unsigned long long t2 = gt();
  if (record && threadIdx.x == 0) { tbuf[blockIdx.x * 3] = t1 - t0; tbuf[blockIdx.x * 3 + 1] = t2 - t0; }
}

template <int MODE>
static void launch(int ctas, uint4* y, int ldy_chunks, int rows, int col_chunks, const float* src, int record) {
  stores<MODE><<<ctas, 288>>>(y, ldy_chunks, rows, col_chunks, src, record);
}

int main() {
  uint4* y; cudaMalloc(&y, 64 << 20); float* src; cudaMalloc(&src, 4096); cudaMemset(src, 0, 4096);
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  for (int mode = 0; mode < 4; ++mode)
  for (int ctas : {1, 23, 92, 132}) for (int rows : {32, 64}) for (int cols : {64, 128}) {
    const int col_chunks = cols / 8, ldy_chunks = 2880 / 8 * 4;
    auto go = [&](int record) {
      if (mode == 0) launch<0>(ctas, y, ldy_chunks, rows, col_chunks, src, record);
      else if (mode == 1) launch<1>(ctas, y, ldy_chunks, rows, col_chunks, src, record);
      else if (mode == 2) launch<2>(ctas, y, ldy_chunks, rows, col_chunks, src, record);
      else launch<3>(ctas, y, ldy_chunks, rows, col_chunks, src, record);
    };
    std::vector<double> thr, cta, per_launch;
    for (int rep = 0; rep < 5; ++rep) {
      go(1);
      cudaDeviceSynchronize();
      unsigned long long h[4096 * 3]; cudaMemcpyFromSymbol(h, tbuf, sizeof(h));
      std::vector<double> a, b;
      for (int c = 0; c < ctas; ++c) { a.push_back(h[c * 3] / 1000.0); b.push_back(h[c * 3 + 1] / 1000.0); }
      std::sort(a.begin(), a.end()); std::sort(b.begin(), b.end());
      thr.push_back(a[a.size() / 2]); cta.push_back(b[b.size() / 2]);
      cudaEventRecord(e0);
      for (int i = 0; i < 200; ++i) go(0);
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      float ms; cudaEventElapsedTime(&ms, e0, e1);
      per_launch.push_back(ms * 1000.0 / 200);
    }
    std::sort(thr.begin(), thr.end()); std::sort(cta.begin(), cta.end()); std::sort(per_launch.begin(), per_launch.end());
    printf("store mode=%d ctas=%d tile=%dx%d bytes/cta=%d thread0_us=%.3f cta_us=%.3f per_launch_us=%.3f err=%s\n", mode,
           ctas, rows, cols, rows * cols * 2, thr[2], cta[2], per_launch[2], cudaGetErrorString(cudaGetLastError()));
  }
  return 0;
}
