// The library's kernels with per-CTA phase timestamps (the SK_TRACE hook of
// kernels/gemm_common.h): %globaltimer of CTA thread 0 at each phase boundary, its SM
// and the launch's %gridid in slot 7. A launch writes trace slot (gridid % 8), so a
// chain of up to 8 back-to-back launches can be traced at once (CTAs < 512 each). Words
// 8..14 of a CTA's 16 hold %clock64 at the same points: finer intra-CTA phases.
// Each instance also exports its THREADS and LDS_BYTES (NAME_meta).
#include "prelude/prelude.h"
extern "C" __attribute__((device)) unsigned long long sk_trace_buf[1 << 16];
__attribute__((device)) unsigned long long sk_trace_buf[1 << 16];
#ifdef KTRACE_NOTRACE  // timing builds: the kernels as the library ships them
#define SK_TRACE(point)
#else
#define SK_TRACE(point)                                                                    \
  do {                                                                                     \
    if (__nvvm_read_ptx_sreg_tid_x() == 0) {                                               \
      unsigned long long t_, g_, k_;                                                       \
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t_));                              \
      asm volatile("mov.u64 %0, %%clock64;" : "=l"(k_));                                  \
      asm volatile("mov.u64 %0, %%gridid;" : "=l"(g_));                                   \
      const unsigned b_ = (unsigned)(g_ & 7) * 512u +                                       \
                          __nvvm_read_ptx_sreg_ctaid_y() * __nvvm_read_ptx_sreg_nctaid_x() + \
                          __nvvm_read_ptx_sreg_ctaid_x();                                   \
      sk_trace_buf[b_ * 16 + (point)] = t_;                                                \
      sk_trace_buf[b_ * 16 + 8 + (point)] = k_;                                            \
      if ((point) == 0) {                                                                  \
        unsigned s_;                                                                       \
        asm volatile("mov.u32 %0, %%smid;" : "=r"(s_));                                    \
        sk_trace_buf[b_ * 16 + 7] = (g_ << 16) | s_;                                       \
      }                                                                                    \
    }                                                                                      \
  } while (0)
#endif
#include "wgmma_gemm.h"
#include "splitk_gemm.h"

#define META_OF(NAME, ...)                                 \
  extern "C" __attribute__((device)) int NAME##_meta[2]; \
  __attribute__((device)) int NAME##_meta[2] = {__VA_ARGS__::THREADS, __VA_ARGS__::LDS_BYTES};
#define META(NAME, TM, TN, TK, ST, WG, CL, TMA) META_OF(NAME, WgmmaSplitK<bf16_t, TM, TN, TK, ST, WG, CL, TMA>)
#define SPLITK(NAME, TM, TN, TK, ST, WM, WN, WK, CL)                            \
  SK_SPLITK_INSTANCE(NAME, bf16_t, TM, TN, TK, ST, WM, WN, WK, true, CL) \
  META_OF(NAME, SplitK<bf16_t, TM, TN, TK, ST, WM, WN, WK, true, CL>)
#define T(NAME, TM, TN, TK, ST, WG, CL)                                       \
  SK_WGMMA_TMA_INSTANCE(NAME, bf16_t, TM, TN, TK, ST, 1, WG * 4, 1, true, CL) \
  META(NAME, TM, TN, TK, ST, WG, CL, true)
#define C(NAME, TM, TN, TK, ST, WG, CL)                                   \
  SK_WGMMA_INSTANCE(NAME, bf16_t, TM, TN, TK, ST, 1, WG * 4, 1, true, CL) \
  META(NAME, TM, TN, TK, ST, WG, CL, false)

T(m64n128k64_s8_cl_tma, 64, 128, 64, 8, 2, true)
T(m64n128k64_s8_tma, 64, 128, 64, 8, 2, false)
T(m64n64k64_s6_cl_tma, 64, 64, 64, 6, 1, true)
T(m64n64k128_s4_cl_tma, 64, 64, 128, 4, 1, true)
T(m32n64k128_s6_cl_tma, 32, 64, 128, 6, 1, true)
T(m32n64k128_s6_tma, 32, 64, 128, 6, 1, false)
T(m64n128k128_s4_cl_tma, 64, 128, 128, 4, 2, true)
T(m16n64k64_s8_cl_tma, 16, 64, 64, 8, 1, true)
T(m128n128k64_s4_cl_tma, 128, 128, 64, 4, 2, true)
C(m64n128k64_s4_cl, 64, 128, 64, 4, 2, true)
SPLITK(sk_m8n16k128_s8_w114_cl, 8, 16, 128, 8, 1, 1, 4, true)
SPLITK(sk_m8n16k256_s6_w118_cl, 8, 16, 256, 6, 1, 1, 8, true)
SPLITK(sk_m8n32k128_s8_w122_cl, 8, 32, 128, 8, 1, 2, 2, true)
SPLITK(sk_m8n64k128_s6_w141_cl, 8, 64, 128, 6, 1, 4, 1, true)
SPLITK(sk_m16n16k128_s8_w114_cl, 16, 16, 128, 8, 1, 1, 4, true)
SPLITK(sk_m16n32k128_s8_w122_cl, 16, 32, 128, 8, 1, 2, 2, true)
C(m32n64k64_s8_cl, 32, 64, 64, 8, 1, true)
SPLITK(sk_m32n32k128_s6_w122_cl, 32, 32, 128, 6, 1, 2, 2, true)
SPLITK(sk_m32n32k128_s6_w114_cl, 32, 32, 128, 6, 1, 1, 4, true)
SPLITK(sk_m64n32k128_s4_w212_cl, 64, 32, 128, 4, 2, 1, 2, true)
