// One-way latency of cluster hand-offs: remote mbarrier arrive, st.async + complete_tx,
// waited with try_wait (blocking) or test_wait (spin), both acquire.cluster.
#include <cuda_runtime.h>
#include <cstdio>
#include <vector>
#include <algorithm>
__device__ unsigned long long tb[4096];
__device__ __forceinline__ unsigned long long gt() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__device__ __forceinline__ unsigned sa(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ unsigned mapa(unsigned a, unsigned r) { unsigned o; asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(o) : "r"(a), "r"(r)); return o; }
template <bool SPIN>
__device__ __forceinline__ void wait_cl(unsigned long long* bar, unsigned parity) {
  unsigned done;
  do {
    if (SPIN) asm volatile("{\n\t.reg .pred p;\n\tmbarrier.test_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}" : "=r"(done) : "r"(sa(bar)), "r"(parity) : "memory");
    else asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}" : "=r"(done) : "r"(sa(bar)), "r"(parity) : "memory");
  } while (!done);
}
template <bool SPIN>
__global__ void __launch_bounds__(128) handoff(int S, int delay_ns) {
  __shared__ __align__(16) float4 slots[16 * 32];
  __shared__ __align__(8) unsigned long long bars[2];
  unsigned rank; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(sa(&bars[0])));
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(sa(&bars[1])));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
  // some "main loop" time
  unsigned long long t = gt(); while (gt() - t < (unsigned long long)delay_ns) {}
  unsigned long long tw0 = gt();
  asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
  unsigned long long tw1 = gt();
  unsigned long long* o = tb + blockIdx.x * 4;
  if (rank == 0) {
    __syncthreads();
    unsigned long long ts = gt();
    if (threadIdx.x == 0) {
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(sa(&bars[1])), "r"((S - 1) * 512) : "memory");
      for (int r = 1; r < S; ++r) asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: "r"(mapa(sa(&bars[0]), r)) : "memory");
    }
    wait_cl<SPIN>(&bars[1], 0);
    unsigned long long tr = gt();
    if (threadIdx.x == 0) { o[0] = tw1 - tw0; o[1] = ts; o[2] = tr; }
  } else {
    wait_cl<SPIN>(&bars[0], 0);
    unsigned long long tg = gt();
    if (threadIdx.x < 32) {
      float4 v = make_float4(rank, threadIdx.x, 0, 0);
      unsigned d = mapa(sa(&slots[(rank - 1) * 32 + threadIdx.x]), 0), b = mapa(sa(&bars[1]), 0);
      asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];" :: "r"(d), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w), "r"(b) : "memory");
    }
    if (threadIdx.x == 0) { o[0] = tw1 - tw0; o[3] = tg; }
  }
}
int main() {
  for (int spin = 0; spin < 2; ++spin) for (int S : {2, 4, 8}) for (int delay : {0, 2000}) {
    const int grid = 64 / S * S;
    std::vector<double> cw, go, recv;
    for (int rep = 0; rep < 7; ++rep) {
      cudaLaunchConfig_t cfg = {}; cfg.gridDim = dim3(grid); cfg.blockDim = dim3(128);
      cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeClusterDimension;
      at[0].val.clusterDim.x = S; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
      cfg.attrs = at; cfg.numAttrs = 1;
      if (spin) cudaLaunchKernelEx(&cfg, handoff<true>, S, delay); else cudaLaunchKernelEx(&cfg, handoff<false>, S, delay);
      cudaDeviceSynchronize();
      unsigned long long h[4096]; cudaMemcpyFromSymbol(h, tb, sizeof(h));
      std::vector<double> a, g, r;
      for (int c = 0; c < grid; c += S) {
        unsigned long long ts = h[c * 4 + 1], tr = h[c * 4 + 2];
        a.push_back(h[c * 4] / 1000.0);
        for (int k = 1; k < S; ++k) g.push_back(((long long)h[(c + k) * 4 + 3] - (long long)ts) / 1000.0);
        r.push_back((tr - ts) / 1000.0);
      }
      std::sort(a.begin(), a.end()); std::sort(g.begin(), g.end()); std::sort(r.begin(), r.end());
      cw.push_back(a[a.size() / 2]); go.push_back(g[g.size() / 2]); recv.push_back(r[r.size() / 2]);
    }
    std::sort(cw.begin(), cw.end()); std::sort(go.begin(), go.end()); std::sort(recv.begin(), recv.end());
    printf("handoff %s S=%d delay=%dns cluster_wait=%.3f go_latency=%.3f roundtrip(go+st.async)=%.3f err=%s\n", spin ? "test_wait" : "try_wait",
           S, delay, cw[3], go[3], recv[3], cudaGetErrorString(cudaGetLastError()));
  }
  return 0;
}
