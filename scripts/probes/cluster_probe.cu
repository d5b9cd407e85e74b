// Cost of a split-K cluster combine's pieces: cluster barrier, DSMEM loads.
#include <cuda_runtime.h>
#include <cstdio>
#include <vector>
#include <algorithm>
__device__ unsigned long long tb[8192];
__device__ __forceinline__ unsigned long long gt() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__device__ __forceinline__ void csync() { asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory"); }
__global__ void __launch_bounds__(128) comb(float* out, int S, int quads_per_thread) {
  __shared__ float4 s[128 * 8];
  unsigned rank; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  unsigned long long t0 = gt();
  for (int q = 0; q < quads_per_thread; ++q) s[q * 128 + threadIdx.x] = make_float4(rank, q, 1, 2);
  __syncthreads();
  unsigned long long t1 = gt();
  csync();
  unsigned long long t2 = gt();
  float4 acc = make_float4(0, 0, 0, 0);
  if (rank == 0) {
    for (int q = 0; q < quads_per_thread; ++q) {
      float4 v[16];
#pragma unroll
      for (int r = 0; r < 16; ++r) {
        if (r < S) {
          unsigned local = (unsigned)__cvta_generic_to_shared(&s[q * 128 + threadIdx.x]), remote;
          asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(r));
          asm volatile("ld.shared::cluster.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v[r].x), "=f"(v[r].y), "=f"(v[r].z), "=f"(v[r].w) : "r"(remote));
        }
      }
#pragma unroll
      for (int r = 0; r < 16; ++r) if (r < S) { acc.x += v[r].x; acc.y += v[r].y; }
    }
  }
  unsigned long long t3 = gt();
  csync();
  unsigned long long t4 = gt();
  if (rank == 0) out[blockIdx.x * 128 + threadIdx.x] = acc.x + acc.y;
  if (threadIdx.x == 0) {
    unsigned long long* o = tb + blockIdx.x * 4;
    o[0] = t1 - t0; o[1] = t2 - t1; o[2] = t3 - t2; o[3] = t4 - t3;
  }
}
int main() {
  float* out; cudaMalloc(&out, 1 << 24);
  for (int S : {2, 4, 8}) for (int ctas_total : {S * 4, 128}) for (int q : {1, 8}) {
    const int grid = ctas_total / S * S;
    std::vector<double> m[4];
    for (int rep = 0; rep < 7; ++rep) {
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = dim3(grid); cfg.blockDim = dim3(128);
      cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeClusterDimension;
      at[0].val.clusterDim.x = S; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
      cfg.attrs = at; cfg.numAttrs = 1;
      cudaLaunchKernelEx(&cfg, comb, out, S, q);
      cudaDeviceSynchronize();
      unsigned long long h[8192]; cudaMemcpyFromSymbol(h, tb, sizeof(h));
      for (int k = 0; k < 4; ++k) {
        std::vector<double> v; for (int c = 0; c < grid; ++c) v.push_back(h[c * 4 + k] / 1000.0);
        std::sort(v.begin(), v.end()); m[k].push_back(v[v.size() / 2]);
      }
    }
    for (auto& v : m) std::sort(v.begin(), v.end());
    printf("cluster S=%d ctas=%d quads/thread=%d stage=%.3f sync1=%.3f dsmem_loads=%.3f sync2=%.3f err=%s\n", S, grid, q,
           m[0][3], m[1][3], m[2][3], m[3][3], cudaGetErrorString(cudaGetLastError()));
  }
  return 0;
}
