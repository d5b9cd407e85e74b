// Runs one traced kernel of ktrace.ptx (ktrace_kernels.cu) over a K-split sweep and prints, per
// split: the time per launch (back-to-back, rotated cold weights) and, for isolated launches on
// cold weights ("cold"), after another launch ("warm") and on the same weights again ("hot"), the
// kernel's span and the median per-CTA phase times from the SK_TRACE timestamps. Driver API only.
//   ktrace PTX NAME TILE_M TILE_N TILE_K CLUSTER(0/1) TMA(0/1) M N K SPLITS...
#include <cuda.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#define CU(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char* s_; cuGetErrorString(r_, &s_); \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, s_); exit(1); } } while (0)

struct GemmParams {
  uint64_t w, x, y, bias, partials, counters, zeros;
  int64_t ldw, ldx, ldy;
  int32_t m, n, k;
  float alpha;
  int32_t split_k, prefetch_row_bytes, pdl_flags;
};
static_assert(sizeof(GemmParams) == 112, "layout");
struct alignas(64) Maps { CUtensorMap w, x; };

static CUtensorMap map2d(CUdeviceptr base, uint64_t cols, uint64_t rows, uint64_t row_bytes, uint32_t box_rows) {
  CUtensorMap m;
  cuuint64_t dims[2] = {cols, rows}, strides[1] = {row_bytes};
  cuuint32_t box[2] = {64, box_rows}, es[2] = {1, 1};
  CU(cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, (void*)base, dims, strides, box, es,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  return m;
}

static double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Trace slot s (512 CTAs x 16 words) holds the launch whose %gridid % 8 == s; slot word 7
// of a CTA is (gridid << 16 | smid). Reads all slots, ordered by gridid (oldest first).
static std::vector<std::vector<unsigned long long>> read_launches(CUdeviceptr trace_p, int ctas) {
  std::vector<unsigned long long> all(1 << 16);
  CU(cuMemcpyDtoH(all.data(), trace_p, all.size() * 8));
  std::vector<std::pair<unsigned long long, int>> ids;
  for (int s = 0; s < 8; ++s)
    if (all[(s * 512) * 16 + 7]) ids.push_back({all[(s * 512) * 16 + 7] >> 16, s});
  std::sort(ids.begin(), ids.end());
  std::vector<std::vector<unsigned long long>> out;
  for (auto& [g, s] : ids) out.emplace_back(all.begin() + s * 512 * 16, all.begin() + (s * 512 + ctas) * 16);
  return out;
}

int main(int argc, char** argv) {
  if (argc < 10) {
    fprintf(stderr, "usage: ktrace PTX NAME TM TN TK CLUSTER(0/1) TMA(0/1) M N K S...\n");
    return 2;
  }
  const char* ptx_path = argv[1];
  const std::string name = argv[2];
  const int TM = atoi(argv[3]), TN = atoi(argv[4]), TK = atoi(argv[5]);
  const bool cluster = atoi(argv[6]), tma = atoi(argv[7]);
  const int M = atoi(argv[8]), N = atoi(argv[9]), K = atoi(argv[10]);
  std::vector<int> splits;
  for (int i = 11; i < argc; ++i) splits.push_back(atoi(argv[i]));

  CU(cuInit(0));
  CUdevice dev; CU(cuDeviceGet(&dev, 0));
  CUcontext ctx; CU(cuDevicePrimaryCtxRetain(&ctx, dev)); CU(cuCtxSetCurrent(ctx));
  std::ifstream f(ptx_path); std::stringstream ss; ss << f.rdbuf(); std::string ptx = ss.str();
  static CUmodule mod = nullptr;
  if (!mod) CU(cuModuleLoadData(&mod, ptx.c_str()));
  CUfunction fn; CU(cuModuleGetFunction(&fn, mod, name.c_str()));
  CUdeviceptr meta_p, trace_p; size_t sz;
  CU(cuModuleGetGlobal(&meta_p, &sz, mod, (name + "_meta").c_str()));
  CU(cuModuleGetGlobal(&trace_p, &sz, mod, "sk_trace_buf"));
  int meta[2]; CU(cuMemcpyDtoH(meta, meta_p, 8));
  const int threads = meta[0];
  // KTRACE_LDS=bytes: launch with that much dynamic LDS (>= the kernel's), as the
  // library's padding does to spread CTAs over the SMs.
  const int lds = std::max(meta[1], getenv("KTRACE_LDS") ? atoi(getenv("KTRACE_LDS")) : 0);
  CU(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, lds));
  printf("meta %s threads=%d lds_bytes=%d launched with %d\n", name.c_str(), threads, meta[1], lds);
  CU(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));  // S = 16

  const int NBUF = 12;
  const size_t wbytes = (size_t)N * K * 2;
  std::vector<CUdeviceptr> w(NBUF);
  for (auto& p : w) { CU(cuMemAlloc(&p, wbytes)); CU(cuMemsetD16(p, 0x3c00, wbytes / 2)); }
  CUdeviceptr x, y, partials, counters, zeros;
  CU(cuMemAlloc(&x, (size_t)M * K * 2)); CU(cuMemsetD16(x, 0x3c00, (size_t)M * K));
  CU(cuMemAlloc(&y, (size_t)M * N * 2));
  const int tiles = ((M + TM - 1) / TM) * ((N + TN - 1) / TN);
  CU(cuMemAlloc(&partials, (size_t)tiles * 16 * TM * TN * 4));
  CU(cuMemAlloc(&counters, tiles * 4)); CU(cuMemsetD32(counters, 0, tiles));
  CU(cuMemAlloc(&zeros, 256)); CU(cuMemsetD8(zeros, 0, 256));
  CUdeviceptr bias = 0;  // KTRACE_BIAS=1: a bias vector, as G2's shapes have
  if (getenv("KTRACE_BIAS")) { CU(cuMemAlloc(&bias, (size_t)N * 2)); CU(cuMemsetD16(bias, 0x3c00, N)); }
  std::vector<Maps> maps(NBUF);
  for (int i = 0; i < NBUF; ++i) {
    maps[i].w = map2d(w[i], K, N, (uint64_t)K * 2, TN);
    maps[i].x = map2d(x, K, M, (uint64_t)K * 2, TM);
  }
  CUstream st; CU(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
  CUevent e0, e1; CU(cuEventCreate(&e0, 0)); CU(cuEventCreate(&e1, 0));

  for (int S : splits) {
    std::vector<GemmParams> params(NBUF);
    for (int i = 0; i < NBUF; ++i) {
      GemmParams& p = params[i];
      memset(&p, 0, sizeof p);
      p.w = w[i]; p.x = x; p.y = y; p.bias = bias; p.partials = partials; p.counters = counters; p.zeros = zeros;
      p.ldw = K; p.ldx = K; p.ldy = N; p.m = M; p.n = N; p.k = K; p.alpha = 1.f; p.split_k = S;
    }
    auto launch = [&](int i, bool pdl = false) {
      CUlaunchConfig cfg; memset(&cfg, 0, sizeof cfg);
      cfg.gridDimX = tiles; cfg.gridDimY = S; cfg.gridDimZ = 1;
      cfg.blockDimX = threads; cfg.blockDimY = 1; cfg.blockDimZ = 1;
      cfg.sharedMemBytes = lds; cfg.hStream = st;
      CUlaunchAttribute at[2];
      cfg.attrs = at;
      if (cluster && S > 1) {
        at[cfg.numAttrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        at[cfg.numAttrs].value.clusterDim.x = 1; at[cfg.numAttrs].value.clusterDim.y = S;
        at[cfg.numAttrs++].value.clusterDim.z = 1;
      }
      if (pdl) {
        at[cfg.numAttrs].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        at[cfg.numAttrs++].value.programmaticStreamSerializationAllowed = 1;
      }
      GemmParams pp = params[i];
      if (pdl) { pp.prefetch_row_bytes = 1024; pp.pdl_flags = 1 | 2 | (8 << 8); }
      void* args[2] = {&pp, &maps[i]};
      CU(cuLaunchKernelEx(&cfg, fn, args, nullptr));
    };
    // A graph of `count` back-to-back launches with the library's PDL settings, and
    // its time per launch (median of `reps` replays of a graph of 96).
    auto graph_of = [&](int count) {
      CUgraph g; CUgraphExec ge;
      CU(cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_GLOBAL));
      for (int i = 0; i < count; ++i) launch(i % NBUF, true);
      CU(cuStreamEndCapture(st, &g));
      CU(cuGraphInstantiate(&ge, g, 0));
      return ge;
    };
    auto pdl_graph_time = [&](CUgraphExec g96, int reps) {
      std::vector<double> t;
      for (int rep = 0; rep < reps; ++rep) {
        CU(cuEventRecord(e0, st)); CU(cuGraphLaunch(g96, st)); CU(cuEventRecord(e1, st));
        CU(cuEventSynchronize(e1));
        float ms; CU(cuEventElapsedTime(&ms, e0, e1)); t.push_back(ms * 1000 / 96);
      }
      return median(t);
    };
    // Back-to-back: time per launch, median of 5 x 24 launches.
    std::vector<double> per;
    for (int rep = 0; rep < 5; ++rep) {
      CU(cuEventRecord(e0, st));
      for (int i = 0; i < 24; ++i) launch(i % NBUF);
      CU(cuEventRecord(e1, st)); CU(cuEventSynchronize(e1));
      float ms; CU(cuEventElapsedTime(&ms, e0, e1)); per.push_back(ms * 1000 / 24);
    }
    const int ctas = tiles * S;
    // KTRACE_TIMING=1 (for a PTX built with -DKTRACE_NOTRACE): only the two times per
    // launch, plain back-to-back and PDL graph, with no trace point in the kernel.
    if (getenv("KTRACE_TIMING")) {
      printf("timing %s M=%d N=%d K=%d S=%d ctas=%d per_launch=%.3f per_launch_pdl_graph=%.3f\n", name.c_str(), M, N, K,
             S, ctas, median(per), pdl_graph_time(graph_of(96), 9));
      fflush(stdout);
      continue;
    }
    // Traced launches, median over 5 of the span and of per-CTA phase times. Modes:
    // cold = isolated launch on cold weights; hot = the same weights launched just before
    // (W and code in L2); warm = another (cold) weight set's launch just before, unsynchronised.
    std::vector<unsigned long long> tr(ctas * 16);
    for (const char* mode : {"cold", "warm", "hot"}) {
      std::vector<double> span, ph[7], end_main_max, pre6, post6;
      for (int rep = 0; rep < 5; ++rep) {
        CU(cuMemsetD8(trace_p, 0, 8 << 16));
        CU(cuStreamSynchronize(st));
        const int buf = (rep * 5 + 3) % NBUF;
        if (!strcmp(mode, "hot")) { launch(buf); CU(cuStreamSynchronize(st)); }
        if (!strcmp(mode, "warm")) launch((buf + 1) % NBUF);
        launch(buf);
        CU(cuStreamSynchronize(st));
        tr = read_launches(trace_p, ctas).back();
        unsigned long long t0 = ~0ull, t5 = 0;
        std::vector<double> p[7], em, a6, b6;
        for (int c = 0; c < ctas; ++c) {
          unsigned long long* t = &tr[c * 16];
          if (t[6] && t[3] <= t[6] && t[6] <= t[4]) {  // splitk order: t3 < t6 < t4
            a6.push_back((t[6] - t[3]) / 1000.0); b6.push_back((t[4] - t[6]) / 1000.0);
            t[6] = t[4];
          }
          if (!t[6]) t[6] = t[4];
          if (!t[5]) t[5] = t[6];
          t0 = std::min(t0, t[0]); t5 = std::max(t5, t[5]);
          const unsigned long long seq[7] = {t[0], t[1], t[2], t[3], t[4], t[6], t[5]};
          for (int k = 1; k < 7; ++k) p[k].push_back((double)(seq[k] - seq[k - 1]) / 1000.0);
        }
        for (int c = 0; c < ctas; ++c) em.push_back((double)(tr[c * 16 + 3] - t0) / 1000.0);
        span.push_back((t5 - t0) / 1000.0);
        end_main_max.push_back(*std::max_element(em.begin(), em.end()));
        for (int k = 1; k < 7; ++k) ph[k].push_back(median(p[k]));
        pre6.push_back(median(a6)); post6.push_back(median(b6));
      }
      std::vector<int> per_sm(256, 0);
      for (int c = 0; c < ctas; ++c) per_sm[tr[c * 16 + 7] & 0xffff]++;
      const int busiest = *std::max_element(per_sm.begin(), per_sm.end());
      printf("%s M=%d N=%d K=%d S=%d ctas=%d lds=%dK per_launch=%.2f %s span=%.2f main_end_max=%.2f max_per_sm=%d | "
             "prologue=%.2f first=%.2f main=%.2f stage=%.2f wait=%.2f reduce_store=%.2f (splitk: to_sync=%.2f after_sync=%.2f)\n",
             name.c_str(), M, N, K, S, ctas, lds / 1024, median(per), mode, median(span), median(end_main_max), busiest,
             median(ph[1]), median(ph[2]), median(ph[3]), median(ph[4]), median(ph[5]), median(ph[6]), median(pre6), median(post6));
    }
    // Chain (KTRACE_CHAIN=1): the library's PDL settings (prefetch 1 KiB/row of W and X,
    // trigger 8 K blocks before the end), launches captured in a graph. Times 96
    // launches per replay, then traces a graph of 8 and prints, for launches 2..7,
    // each phase relative to the end of the predecessor's last CTA (E): negative =
    // overlapped with the predecessor.
    if (getenv("KTRACE_CHAIN")) {
      CUgraphExec g96 = graph_of(96), g8 = graph_of(8);
      const double per_pdl = pdl_graph_time(g96, 7);
      std::vector<double> f[9];
      for (int rep = 0; rep < 7; ++rep) {
        CU(cuGraphLaunch(g96, st));  // predecessor traffic like the bench's
        CU(cuStreamSynchronize(st));
        CU(cuMemsetD8(trace_p, 0, 8 << 16));
        CU(cuGraphLaunch(g8, st));
        CU(cuStreamSynchronize(st));
        auto L = read_launches(trace_p, ctas);
        if (L.size() != 8) { printf("chain: %zu launches traced\n", L.size()); break; }
        auto col = [&](const std::vector<unsigned long long>& t, int pt) {
          std::vector<double> v;
          for (int c = 0; c < ctas; ++c) v.push_back((double)t[c * 16 + (pt == 6 && !t[c * 16 + 6] ? 4 : pt)]);
          std::sort(v.begin(), v.end());
          return v;
        };
        if (const char* dump = getenv("KTRACE_DUMP"); dump && rep == 6) {
          // Per CTA of launch 4: cta, smid, then points 0..6 relative to E of launch 3 (ns), then
          // the CTA's %clock64 at points 0..6 relative to point 1 (cycles).
          FILE* fd = fopen(dump, "a");
          const double E3 = col(L[3], 5).back();
          fprintf(fd, "# %s M=%d N=%d K=%d S=%d tiles=%d\n", name.c_str(), M, N, K, S, tiles);
          for (int c = 0; c < ctas; ++c) {
            const unsigned long long* t = &L[4][c * 16];
            fprintf(fd, "%d %llu", c, t[7] & 0xffff);
            for (int k = 0; k < 7; ++k) fprintf(fd, " %.0f", t[k] ? (double)t[k] - E3 : -1e9);
            // then %clock64 at points 0..6 relative to point 1, in SM cycles
            fprintf(fd, " |");
            for (int k = 0; k < 7; ++k) fprintf(fd, " %lld", t[8 + k] ? (long long)(t[8 + k] - t[8 + 1]) : -1000000000ll);
            fprintf(fd, "\n");
          }
          fclose(fd);
        }
        for (int i = 2; i < 8; ++i) {
          const double E = col(L[i - 1], 5).back();
          auto t0 = col(L[i], 0), t1 = col(L[i], 1), t2 = col(L[i], 2), t3 = col(L[i], 3), t5 = col(L[i], 5);
          auto pt3 = col(L[i - 1], 3);
          const double r[9] = {t0.front() - E, t0.back() - E, t1.front() - E, t1[ctas / 2] - E, t2[ctas / 2] - E,
                               t3[ctas / 2] - E, t3.back() - E, t5.back() - E, E - pt3.back()};
          for (int k = 0; k < 9; ++k) f[k].push_back(r[k] / 1000.0);
        }
      }
      printf("chain %s M=%d N=%d K=%d S=%d ctas=%d per_launch_pdl_graph=%.2f | relative to predecessor end E: "
             "first_start=%.2f last_start=%.2f wait_done_first=%.2f wait_done_med=%.2f first_stage_med=%.2f "
             "main_done_med=%.2f main_done_max=%.2f end_max(period)=%.2f | predecessor tail (E - its last main done)=%.2f\n",
             name.c_str(), M, N, K, S, ctas, per_pdl, median(f[0]), median(f[1]), median(f[2]), median(f[3]),
             median(f[4]), median(f[5]), median(f[6]), median(f[7]), median(f[8]));
    }
    fflush(stdout);
  }
  return 0;
}
