// Streaming probe (sm_90a): how fast can a grid of CTAs pull a weight matrix W[N,K] (bf16,
// row-major) out of DRAM, as a function of the tile shape each CTA streams, the K split, and
// whether an activation tile X[M,K] is also pulled per stage (it hits L2)?
// No MMA and no combine: consumers only wait for each stage and release it. Separates the memory
// system's behaviour from the GEMM kernels'.
//
// nvcc -O3 -std=c++17 -arch=sm_90a stream_probe.cu -lcuda -o stream_probe
#include <algorithm>
#include <vector>

#include "probe_tma.h"

// grid (ceil(N/ROWS), S); one producer warp + 4 consumer warps.
template <int ROWS, int BOXES, int XROWS>
__global__ void __launch_bounds__(160) tma_stream(const __grid_constant__ Maps maps, int kblocks,
                                                  int per_split, int stages, int* sink) {
  extern __shared__ __align__(1024) unsigned char smem[];
  constexpr int WB = ROWS * 128, XB = XROWS * 128, STAGE = BOXES * (WB + XB);
  uint64_t* full = (uint64_t*)(smem + stages * STAGE);
  uint64_t* empty = full + stages;
  const int n0 = blockIdx.x * ROWS;
  const int kb0 = blockIdx.y * per_split;
  const int nkb = min(per_split, kblocks - kb0);
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) { bar_init(&full[s], 1); bar_init(&empty[s], 4); }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (warp == 4) {
    if (lane == 0) {
      uint64_t first, last;
      asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(first));
      asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(last));
      for (int i = 0; i < nkb; ++i) {
        const int s = i % stages;
        if (i >= stages) bar_wait(&empty[s], ((i / stages) - 1) & 1);
        bar_expect(&full[s], STAGE);
        unsigned char* st = smem + s * STAGE;
        for (int b = 0; b < BOXES; ++b) {
          const int k = ((kb0 + i) * BOXES + b) * 64;
          tma2d(st + b * WB, &maps.w, &full[s], k, n0, first);
          if (XROWS) tma2d(st + BOXES * WB + b * XB, &maps.x, &full[s], k, 0, last);
        }
      }
    }
  } else {
    int acc = 0;
    for (int i = 0; i < nkb; ++i) {
      const int s = i % stages;
      bar_wait(&full[s], (i / stages) & 1);
      acc += smem[s * STAGE + threadIdx.x * 4];
      __syncwarp();
      if (lane == 0) bar_arrive(&empty[s]);
    }
    if (acc == 0x7fffffff) sink[0] = acc;
  }
}

// Plain loads: grid (ceil(N/ROWS), S); 8 warps; warp w streams rows w, w+8, ... of the tile over
// the split's K range, 512 contiguous bytes per warp instruction, UNROLL loads in flight.
template <int ROWS, int UNROLL>
__global__ void __launch_bounds__(256) ldg_stream(const uint4* __restrict__ w, int N, int K, int per_split, int* sink) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int chunks = K / 8;  // 16-B chunks per row
  const int c0 = blockIdx.y * per_split, c1 = min(chunks, c0 + per_split);
  uint32_t acc = 0;
  for (int r = warp; r < ROWS; r += 8) {
    const int row = blockIdx.x * ROWS + r;
    if (row >= N) break;
    const uint4* p = w + (size_t)row * chunks;
    for (int c = c0 + lane; c < c1; c += 32 * UNROLL) {
      uint4 v[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        const int cc = c + u * 32;
        if (cc < c1) asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                                  : "=r"(v[u].x), "=r"(v[u].y), "=r"(v[u].z), "=r"(v[u].w) : "l"(p + cc));
        else v[u] = make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) acc ^= v[u].x ^ v[u].w;
    }
  }
  if (acc == 0x12345678u) sink[0] = acc;
}

static const int NBUF = 10;
static std::vector<void*> g_w;
static void* g_x;
static int* g_sink;

template <class F>
static double time_us(F launch, int iters = 30) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  std::vector<double> t;
  for (int rep = 0; rep < 5; ++rep) {
    CK(cudaEventRecord(a));
    for (int i = 0; i < iters; ++i) launch(i % NBUF);
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms; CK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1000.0 / iters);
  }
  CK(cudaGetLastError());
  std::sort(t.begin(), t.end());
  cudaEventDestroy(a); cudaEventDestroy(b);
  return t[t.size() / 2];
}

template <int ROWS, int BOXES, int XROWS>
static void run_tma(int N, int K, int M, const std::vector<int>& splits, int lds_target) {
  constexpr int STAGE = BOXES * (ROWS + XROWS) * 128;
  int stages = std::max(2, std::min(8, 160 * 1024 / STAGE));
  int smem = stages * STAGE + 16 * stages + 1024;
  if (lds_target > smem) smem = lds_target;  // force occupancy
  auto kern = tma_stream<ROWS, BOXES, XROWS>;
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  std::vector<Maps> maps(NBUF);
  for (int i = 0; i < NBUF; ++i) {
    maps[i].w = make_map(g_w[i], N, K, ROWS);
    maps[i].x = make_map(g_x, M, K, XROWS ? XROWS : 8);
  }
  const int kblocks = K / (64 * BOXES);
  for (int S : splits) {
    const int per = (kblocks + S - 1) / S;
    const int Se = (kblocks + per - 1) / per;
    dim3 grid((N + ROWS - 1) / ROWS, Se);
    double us = time_us([&](int i) { kern<<<grid, 160, smem>>>(maps[i], kblocks, per, stages, g_sink); });
    double wbytes = 2.0 * N * K, xbytes = XROWS ? 2.0 * XROWS * K * grid.x : 0;
    printf("tma rows=%d tile_k=%d xrows=%d stages=%d lds=%dK N=%d K=%d S=%d ctas=%d us=%.2f dram_gbs=%.0f l2sm_gbs=%.0f\n",
           ROWS, BOXES * 64, XROWS, stages, smem / 1024, N, K, Se, grid.x * grid.y, us, wbytes / us / 1e3,
           (wbytes + xbytes) / us / 1e3);
  }
}

template <int ROWS, int UNROLL>
static void run_ldg(int N, int K, const std::vector<int>& splits) {
  const int chunks = K / 8;
  for (int S : splits) {
    const int per = (chunks + S - 1) / S;
    dim3 grid((N + ROWS - 1) / ROWS, S);
    double us = time_us([&](int i) {
      ldg_stream<ROWS, UNROLL><<<grid, 256>>>((const uint4*)g_w[i], N, K, per, g_sink);
    });
    printf("ldg rows=%d unroll=%d N=%d K=%d S=%d ctas=%d us=%.2f dram_gbs=%.0f\n", ROWS, UNROLL, N, K, S,
           grid.x * grid.y, us, 2.0 * N * K / us / 1e3);
  }
}

int main(int argc, char** argv) {
  const int N = argc > 1 ? atoi(argv[1]) : 2880, K = argc > 2 ? atoi(argv[2]) : 2880;
  const int M = 128;
  CK(cudaFree(0));
  for (int i = 0; i < NBUF; ++i) {
    void* p; CK(cudaMalloc(&p, (size_t)N * K * 2)); CK(cudaMemset(p, 1, (size_t)N * K * 2)); g_w.push_back(p);
  }
  CK(cudaMalloc(&g_x, (size_t)M * K * 2)); CK(cudaMemset(g_x, 1, (size_t)M * K * 2));
  CK(cudaMalloc(&g_sink, 64));
  {  // copy bandwidth (read + write bytes)
    size_t bytes = 256u << 20; void *a, *b;
    CK(cudaMalloc(&a, bytes)); CK(cudaMalloc(&b, bytes));
    double us = time_us([&](int) { CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice)); }, 10);
    printf("copy N=%d K=%d us=%.1f copy_tbs=%.3f\n", N, K, us, 2.0 * bytes / us / 1e6);
    cudaFree(a); cudaFree(b);
  }
  std::vector<int> sp = {1, 2, 3, 4, 6, 8, 12};
  run_ldg<16, 4>(N, K, sp);
  run_ldg<16, 8>(N, K, sp);
  run_ldg<64, 8>(N, K, sp);
  run_tma<16, 4, 0>(N, K, M, sp, 0);
  run_tma<32, 2, 0>(N, K, M, sp, 0);
  run_tma<32, 4, 0>(N, K, M, sp, 0);
  run_tma<64, 1, 0>(N, K, M, sp, 0);
  run_tma<64, 2, 0>(N, K, M, sp, 0);
  run_tma<64, 4, 0>(N, K, M, sp, 0);
  run_tma<128, 1, 0>(N, K, M, sp, 0);
  run_tma<128, 2, 0>(N, K, M, sp, 0);
  run_tma<64, 2, 64>(N, K, M, sp, 0);
  run_tma<64, 4, 64>(N, K, M, sp, 0);
  run_tma<128, 1, 64>(N, K, M, sp, 0);
  run_tma<128, 2, 64>(N, K, M, sp, 0);
  run_tma<128, 2, 128>(N, K, M, sp, 0);
  run_tma<64, 2, 32>(N, K, M, sp, 0);
  // two CTAs per SM (smaller rings)
  run_tma<64, 1, 64>(N, K, M, sp, 0);
  return 0;
}
