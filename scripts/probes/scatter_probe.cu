// The exchange of a split-K reduce-scatter inside a thread-block cluster, alone: each of
// the S CTAs holds a TILE-byte fp32 tile in shared memory and sends every peer that
// peer's 1/S slice, then waits for its own slice from every peer. Per CTA (%clock64,
// from a cluster barrier): when its sends are issued, when its slice has arrived, and
// the kernel's time per launch (which includes draining every remote store). Modes:
//   st.async  16-B st.async, transaction bytes on the receiver's barrier (the library's)
//   plain     16-B st.shared::cluster, bar.sync, one release arrival per peer
//   bulk      one cp.async.bulk shared::cta -> shared::cluster per peer, transaction bytes
//             on the receiver's barrier; a cluster barrier before exit keeps the sources alive
//   global    16-B global stores of each peer's slice into a per-rank global slot, one
//             cluster barrier (release/acquire), then 16-B L2 loads of our slice from every
//             peer's slot: the exchange through L2, with the cluster only as a barrier
//   barrier   the cluster barrier alone (what `global` pays on top of its stores and loads)
// All threads send, round-robin over (peer, 16-B piece). One CTA per SM, 132/S clusters.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <vector>
__device__ unsigned long long tb[4096];
__device__ __forceinline__ unsigned sa(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ unsigned mapa(unsigned a, unsigned r) {
  unsigned o;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(o) : "r"(a), "r"(r));
  return o;
}
__device__ __forceinline__ unsigned long long clk() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t));
  return t;
}
__device__ __forceinline__ void wait_cl(unsigned long long* bar) {
  unsigned done;
  do {
    asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], 0;\n\tselp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(done) : "r"(sa(bar)) : "memory");
  } while (!done);
}
enum Mode { ST_ASYNC, PLAIN, BULK, GLOBAL, BARRIER };
template <int MODE>
__global__ void __launch_bounds__(128) scatter(int S, int tile_bytes, float4* gbuf) {
  extern __shared__ __align__(128) char sm[];
  char* const tile = sm;                 // our tile
  char* const recv = sm + tile_bytes;    // [S-1][slice] received slices
  __shared__ __align__(8) unsigned long long bar;
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  const int slice = tile_bytes / S & ~15, tid = threadIdx.x;  // 16-B pieces
  for (int i = tid; i < tile_bytes / 4; i += 128) ((float*)tile)[i] = (float)(i + rank);
  if (tid == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(sa(&bar)), "r"(MODE == PLAIN ? S - 1 : 1));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  asm volatile("barrier.cluster.arrive.aligned; barrier.cluster.wait.aligned;" ::: "memory");
  const unsigned long long t0 = clk();
  if (MODE != PLAIN && tid == 0)
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(sa(&bar)), "r"((S - 1) * slice) : "memory");
  if (MODE == GLOBAL || MODE == BARRIER) {
    const int pieces = slice / 16;
    const unsigned cl = blockIdx.x / S;
    float4* const mine = gbuf + ((size_t)cl * S + rank) * (tile_bytes / 16);
    if (MODE == GLOBAL)
      for (int i = tid; i < (S - 1) * pieces; i += 128) {
        const unsigned q = (rank + 1 + i / pieces) % S;
        mine[q * pieces + i % pieces] = *(const float4*)(tile + q * slice + (i % pieces) * 16);
      }
    const unsigned long long ts = clk();
    asm volatile("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;" ::: "memory");
    const unsigned long long tb_ = clk();
    float4 acc = {0.f, 0.f, 0.f, 0.f};
    if (MODE == GLOBAL)
      for (int i = tid; i < pieces; i += 128) {
        float4 v[16];
#pragma unroll
        for (int r = 0; r < 16; ++r)
          if (r < S && r != (int)rank) v[r] = __ldcg(gbuf + ((size_t)cl * S + r) * (tile_bytes / 16) + rank * pieces + i);
#pragma unroll
        for (int r = 0; r < 16; ++r)
          if (r < S && r != (int)rank) { acc.x += v[r].x; acc.y += v[r].y; acc.z += v[r].z; acc.w += v[r].w; }
      }
    const unsigned long long t3 = clk();
    if (tid == 0) {
      unsigned long long* o = tb + blockIdx.x * 4;
      o[0] = ts - t0;   // stores issued
      o[1] = tb_ - t0;  // barrier passed
      o[2] = t3 - t0;   // slice loaded and summed
      o[3] = acc.x == -1.f;
    }
    return;
  }
  if (MODE == BULK) {
    if (tid >= 1 && tid < S) {
      const unsigned q = (rank + tid) % S, from = rank < q ? rank : rank - 1;
      asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                   :: "r"(mapa(sa(recv + from * slice), q)), "r"(sa(tile + q * slice)), "r"(slice), "r"(mapa(sa(&bar), q))
                   : "memory");
    }
  } else {
    const int pieces = slice / 16;
    for (int i = tid; i < (S - 1) * pieces; i += 128) {
      const unsigned q = (rank + 1 + i / pieces) % S, from = rank < q ? rank : rank - 1;
      const float4 v = *(const float4*)(tile + q * slice + (i % pieces) * 16);
      const unsigned d = mapa(sa(recv + from * slice + (i % pieces) * 16), q);
      if (MODE == ST_ASYNC)
        asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];"
                     :: "r"(d), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w), "r"(mapa(sa(&bar), q)) : "memory");
      else
        asm volatile("st.shared::cluster.v4.f32 [%0], {%1, %2, %3, %4};" :: "r"(d), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w) : "memory");
    }
    if (MODE == PLAIN) {
      __syncthreads();
      if (tid >= 1 && tid < S)
        asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: "r"(mapa(sa(&bar), (rank + tid) % S)) : "memory");
    }
  }
  const unsigned long long t1 = clk();
  wait_cl(&bar);
  const unsigned long long t2 = clk();
  // Use the slices (so nothing is optimised away) and check one value.
  float sum = 0.f;
  for (int i = tid; i < (S - 1) * slice / 4; i += 128) sum += ((const float*)recv)[i];
  if (MODE == BULK) asm volatile("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;" ::: "memory");
  const unsigned long long t3 = clk();
  if (tid == 0) {
    unsigned long long* o = tb + blockIdx.x * 4;
    o[0] = t1 - t0;
    o[1] = t2 - t0;
    o[2] = t3 - t0;
    o[3] = sum == -1.f;  // never
  }
}
template <int MODE>
void run(const char* name, int S, int tile) {
  static float4* gbuf = nullptr;
  if (!gbuf) cudaMalloc(&gbuf, (size_t)132 * 32768);
  auto k = scatter<MODE>;
  const int lds = std::max(2 * tile, 120 << 10);  // one CTA per SM
  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, lds);
  cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  const int grid = 132 / S * S;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(128);
  cfg.dynamicSmemBytes = lds;
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeClusterDimension;
  at[0].val.clusterDim.x = S; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
  cfg.attrs = at; cfg.numAttrs = 1;
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0); cudaEventCreate(&e1);
  for (int i = 0; i < 3; ++i) cudaLaunchKernelEx(&cfg, k, S, tile, gbuf);
  cudaEventRecord(e0);
  for (int i = 0; i < 100; ++i) cudaLaunchKernelEx(&cfg, k, S, tile, gbuf);
  cudaEventRecord(e1);
  cudaEventSynchronize(e1);
  float ms; cudaEventElapsedTime(&ms, e0, e1);
  unsigned long long h[4096];
  cudaMemcpyFromSymbol(h, tb, sizeof(h));
  std::vector<double> a, b, c;
  for (int i = 0; i < grid; ++i) { a.push_back(h[i * 4] / 1.98e3); b.push_back(h[i * 4 + 1] / 1.98e3); c.push_back(h[i * 4 + 2] / 1.98e3); }
  std::sort(a.begin(), a.end()); std::sort(b.begin(), b.end()); std::sort(c.begin(), c.end());
  printf("scatter %-8s S=%2d tile=%5dB sends_issued med %.3f max %.3f | slice_arrived med %.3f max %.3f | done med %.3f max %.3f us | per launch %.2f us | %s\n",
         name, S, tile, a[a.size() / 2], a.back(), b[b.size() / 2], b.back(), c[c.size() / 2], c.back(), ms * 10,
         cudaGetErrorString(cudaGetLastError()));
}
int main() {
  for (int tile : {8192, 16384, 32768})
    for (int S : {2, 4, 8, 12, 16}) {
      run<ST_ASYNC>("st.async", S, tile);
      run<PLAIN>("plain", S, tile);
      run<BULK>("bulk", S, tile);
      run<GLOBAL>("global", S, tile);
      run<BARRIER>("barrier", S, tile);
    }
  return 0;
}
