// Multicast probe (sm_90a): does a TMA multicast of the operand that several CTAs share make
// the streaming of an M >= 32 GEMM faster? Each CTA streams the W rows [n0, n0+ROWS) and the X
// rows [m0, m0+XROWS) of its K range through a ring, as the wgmma TMA kernels do, with no MMA
// and no combine. In a cluster of CN x CM CTAs, the CM CTAs of one weight tile (different token
// tiles) can share each W box by multicast, and the CN CTAs of one token tile (different weight
// tiles) each X box. Per stage, box b of a shared operand is issued by one member (b mod C) for
// all; every consumer warp releases a stage to every producer of the cluster.
// It answers: is the M >= 32 main loop limited by L2 -> SM traffic (multicast helps) or by each
// SM's own ingress (it does not)?
//
// nvcc -O3 -std=c++17 -arch=sm_90a mcast_probe.cu -lcuda -o mcast_probe
#include <algorithm>
#include <vector>

#include "probe_tma.h"

// The consumers' release of a stage to a producer in another CTA: with cluster-scope release
// (as the library's combine hand-offs) or the default CTA scope (enough for a write-after-read
// hand-off of a ring stage). Chosen per run, to separate the release's cost from the multicast's.
__device__ int REL_CLUSTER;
__device__ __forceinline__ void bar_arrive_remote(uint64_t* b, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(sa(b)), "r"(rank));
  if (REL_CLUSTER) asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(r) : "memory");
  else asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(r) : "memory");  // release at CTA scope
}
// The same box into the same offsets of every CTA in `mask`, completing on each one's barrier.
__device__ __forceinline__ void tma2d_mc(void* dst, const CUtensorMap* m, uint64_t* b, int c0, int c1, uint16_t mask,
                                         uint64_t pol) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster.L2::cache_hint"
               " [%0], [%1, {%3, %4}], [%2], %5, %6;"
               ::"r"(sa(dst)), "l"(m), "r"(sa(b)), "r"(c0), "r"(c1), "h"(mask), "l"(pol) : "memory");
}

// grid (n tiles, m tiles, splits), cluster (CN, CM, 1); one producer warp + 4 consumer warps.
template <int ROWS, int XROWS, int BOXES, int CN, int CM>
__global__ void __launch_bounds__(160) mc_stream(const __grid_constant__ Maps maps, int kblocks, int per_split,
                                                 int stages, int* sink) {
  extern __shared__ __align__(1024) unsigned char smem[];
  constexpr int WB = ROWS * 128, XB = XROWS * 128, STAGE = BOXES * (WB + XB);
  constexpr int CL = CN * CM;
  uint64_t* full = (uint64_t*)(smem + stages * STAGE);
  uint64_t* empty = full + stages;
  const int n0 = blockIdx.x * ROWS, m0 = blockIdx.y * XROWS;
  const int kb0 = blockIdx.z * per_split;
  const int nkb = min(per_split, kblocks - kb0);
  const int cx = blockIdx.x % CN, cy = blockIdx.y % CM;  // rank = cx + CN * cy (x fastest)
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) { bar_init(&full[s], 1); bar_init(&empty[s], 4 * CL); }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  if constexpr (CL > 1) asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
  else __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (warp == 4) {
    if (lane == 0) {
      uint64_t first, last;
      asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(first));
      asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(last));
      uint16_t wmask = 0, xmask = 0;  // the W group: same cx; the X group: same cy
      for (int j = 0; j < CM; ++j) wmask |= (uint16_t)(1u << (cx + CN * j));
      for (int j = 0; j < CN; ++j) xmask |= (uint16_t)(1u << (j + CN * cy));
      for (int i = 0; i < nkb; ++i) {
        const int s = i % stages;
        if (i >= stages) bar_wait(&empty[s], ((i / stages) - 1) & 1);
        bar_expect(&full[s], STAGE);
        unsigned char* st = smem + s * STAGE;
        for (int b = 0; b < BOXES; ++b) {
          const int k = ((kb0 + i) * BOXES + b) * 64;
          if constexpr (CM == 1) tma2d(st + b * WB, &maps.w, &full[s], k, n0, first);
          else if (b % CM == cy) tma2d_mc(st + b * WB, &maps.w, &full[s], k, n0, wmask, first);
          if constexpr (CN == 1) tma2d(st + BOXES * WB + b * XB, &maps.x, &full[s], k, m0, last);
          else if (b % CN == cx) tma2d_mc(st + BOXES * WB + b * XB, &maps.x, &full[s], k, m0, xmask, last);
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
      if constexpr (CL == 1) { if (lane == 0) bar_arrive(&empty[s]); }
      else if (lane < CL) bar_arrive_remote(&empty[s], lane);  // release the stage to every producer
    }
    if (acc == 0x7fffffff) sink[0] = acc;
  }
  // No CTA leaves while a peer may still multicast into it or arrive on its barriers.
  if constexpr (CL > 1) asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// Weight sets rotated so they exceed 3x the L2 (cold weights, as the bench).
struct Problem {
  int N, K, M, nbuf;
  std::vector<void*> w;
  void* x;
};
static int* g_sink;
static cudaStream_t g_stream;

// Median per-launch time of a captured graph of `per_graph` launches (buffers rotated).
template <class F>
static double graph_us(F launch, int nbuf) {
  const int per_graph = std::max(20, std::min(nbuf, 200));
  cudaGraph_t g; cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(g_stream, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < per_graph; ++i) launch(i % nbuf);
  CK(cudaStreamEndCapture(g_stream, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  CK(cudaGraphLaunch(ge, g_stream));
  CK(cudaStreamSynchronize(g_stream));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  std::vector<double> t;
  for (int rep = 0; rep < 9; ++rep) {
    CK(cudaEventRecord(a, g_stream));
    CK(cudaGraphLaunch(ge, g_stream));
    CK(cudaEventRecord(b, g_stream));
    CK(cudaEventSynchronize(b));
    float ms; CK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1000.0 / per_graph);
  }
  CK(cudaGetLastError());
  std::sort(t.begin(), t.end());
  cudaEventDestroy(a); cudaEventDestroy(b);
  cudaGraphExecDestroy(ge); cudaGraphDestroy(g);
  return t[t.size() / 2];
}

template <int ROWS, int XROWS, int BOXES, int CN, int CM>
static void run(Problem& P, int S, const char* label) {
  constexpr int STAGE = BOXES * (ROWS + XROWS) * 128;
  const int stages = std::max(2, std::min(8, 160 * 1024 / STAGE));
  const int smem = stages * STAGE + 16 * stages + 1024;
  auto kern = mc_stream<ROWS, XROWS, BOXES, CN, CM>;
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  if (CN * CM > 8) CK(cudaFuncSetAttribute(kern, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  std::vector<Maps> maps(P.nbuf);
  for (int i = 0; i < P.nbuf; ++i) {
    maps[i].w = make_map(P.w[i], P.N, P.K, ROWS);
    maps[i].x = make_map(P.x, P.M, P.K, XROWS);
  }
  const int kblocks = P.K / (64 * BOXES);
  const int per = (kblocks + S - 1) / S;
  const int Se = (kblocks + per - 1) / per;
  const int nt = (P.N + ROWS - 1) / ROWS, mt = (P.M + XROWS - 1) / XROWS;
  if (nt % CN || mt % CM) { printf("%s: skipped (tiles %d x %d vs cluster %d x %d)\n", label, nt, mt, CN, CM); return; }
  dim3 grid(nt, mt, Se);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid; cfg.blockDim = dim3(160); cfg.dynamicSmemBytes = smem; cfg.stream = g_stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = CN; attr[0].val.clusterDim.y = CM; attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr; cfg.numAttrs = 1;
  double us = graph_us([&](int i) { CK(cudaLaunchKernelEx(&cfg, kern, maps[i], kblocks, per, stages, g_sink)); }, P.nbuf);
  const double ctas = (double)grid.x * grid.y * grid.z;
  const double kspan = 2.0 * per * BOXES * 64;            // bytes per row of a CTA's K range
  const double in_cta = (ROWS + XROWS) * kspan;            // what each SM takes in
  const double l2_out = ctas * (ROWS * kspan / CM + XROWS * kspan / CN);  // what L2 sends, multicast once
  printf("%-34s M=%d N=%d K=%d rows=%d xrows=%d tile_k=%d S=%d cluster=%dx%d ctas=%.0f stages=%d us=%.2f "
         "in_per_cta_kb=%.0f gbs_per_cta=%.0f l2_out_mb=%.1f l2_out_tbs=%.2f\n",
         label, P.M, P.N, P.K, ROWS, XROWS, BOXES * 64, Se, CN, CM, ctas, stages, us, in_cta / 1e3, in_cta / us / 1e3,
         l2_out / 1e6, l2_out / us / 1e6);
}

static Problem make_problem(int M, int N, int K) {
  Problem P; P.M = M; P.N = N; P.K = K;
  const double wbytes = 2.0 * N * K;
  P.nbuf = std::max(4, std::min(400, (int)(160e6 / wbytes) + 1));
  for (int i = 0; i < P.nbuf; ++i) {
    void* p; CK(cudaMalloc(&p, (size_t)N * K * 2)); CK(cudaMemset(p, 1, (size_t)N * K * 2)); P.w.push_back(p);
  }
  CK(cudaMalloc(&P.x, (size_t)M * K * 2)); CK(cudaMemset(P.x, 1, (size_t)M * K * 2));
  return P;
}
static void free_problem(Problem& P) { for (void* p : P.w) cudaFree(p); cudaFree(P.x); }

int main() {
  CK(cudaFree(0));
  CK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
  CK(cudaMalloc(&g_sink, 64));
  // For each cell: the shipped/forwarded tile's byte mix, alone, then its shared operand multicast.
  for (int rep = 0; rep < 2; ++rep) {
    const int rel = rep;  // pass 0: CTA-scope release; pass 1: cluster-scope release
    CK(cudaMemcpyToSymbol(REL_CLUSTER, &rel, sizeof rel));
    printf("# pass %d: remote stage release at %s scope\n", rep, rel ? "cluster" : "CTA");
    { Problem P = make_problem(64, 2880, 2880);   // m32n64 S=1 (90 CTAs), shipped-class, forwarded cell
      run<64, 32, 2, 1, 1>(P, 1, "m32n64k128 plain");
      run<64, 32, 2, 1, 2>(P, 1, "m32n64k128 W-mc over 2 m-tiles");
      run<64, 32, 2, 3, 1>(P, 1, "m32n64k128 X-mc over 3 n-tiles");
      run<64, 32, 2, 3, 2>(P, 1, "m32n64k128 W2 x X3");
      free_problem(P); }
    { Problem P = make_problem(128, 2880, 2880);  // m64n64 S=1 (90 CTAs)
      run<64, 64, 2, 1, 1>(P, 1, "m64n64k128 plain");
      run<64, 64, 2, 1, 2>(P, 1, "m64n64k128 W-mc 2");
      run<64, 64, 2, 3, 1>(P, 1, "m64n64k128 X-mc 3");
      run<64, 64, 2, 3, 2>(P, 1, "m64n64k128 W2 x X3");
      run<64, 128, 2, 1, 1>(P, 1, "m128n64k128 plain (45)");
      run<64, 128, 2, 1, 1>(P, 2, "m128n64k128 plain S2");
      run<64, 128, 2, 3, 1>(P, 2, "m128n64k128 X-mc 3 S2");
      free_problem(P); }
    { Problem P = make_problem(128, 384, 7168);   // m64n64 S=8 (96 CTAs), forwarded cell
      run<64, 64, 2, 1, 1>(P, 8, "m64n64k128 plain");
      run<64, 64, 2, 1, 2>(P, 8, "m64n64k128 W-mc 2");
      run<64, 64, 2, 2, 1>(P, 8, "m64n64k128 X-mc 2");
      run<64, 64, 2, 2, 2>(P, 8, "m64n64k128 W2 x X2");
      free_problem(P); }
    { Problem P = make_problem(128, 64, 7168);    // shipped m8n16k256 S=2 (128 CTAs)
      run<16, 8, 4, 1, 1>(P, 2, "m8n16k256 plain");
      run<16, 8, 4, 1, 2>(P, 2, "m8n16k256 W-mc 2");
      run<16, 8, 4, 1, 4>(P, 2, "m8n16k256 W-mc 4");
      run<16, 8, 4, 2, 4>(P, 2, "m8n16k256 W4 x X2");
      run<16, 32, 4, 1, 1>(P, 8, "m32n16k256 plain S8");
      run<16, 32, 4, 1, 4>(P, 8, "m32n16k256 W-mc 4 S8");
      free_problem(P); }
    { Problem P = make_problem(64, 5120, 2880);   // forwarded cell
      run<64, 32, 2, 1, 1>(P, 1, "m32n64k128 plain (160)");
      run<128, 64, 2, 1, 1>(P, 1, "m64n128k128 plain (40)");
      run<128, 64, 2, 1, 1>(P, 3, "m64n128k128 plain S3");
      run<128, 64, 2, 4, 1>(P, 3, "m64n128k128 X-mc 4 S3");
      run<64, 64, 2, 1, 1>(P, 1, "m64n64k128 plain (80)");
      run<64, 64, 2, 4, 1>(P, 1, "m64n64k128 X-mc 4");
      free_problem(P); }
    { Problem P = make_problem(128, 2112, 7168);  // forwarded cell
      run<64, 64, 2, 1, 1>(P, 2, "m64n64k128 plain S2 (132)");
      run<64, 64, 2, 1, 2>(P, 2, "m64n64k128 W-mc 2 S2");
      run<64, 64, 2, 3, 1>(P, 2, "m64n64k128 X-mc 3 S2");
      run<64, 64, 2, 3, 2>(P, 2, "m64n64k128 W2 x X3 S2");
      free_problem(P); }
  }
  return 0;
}
