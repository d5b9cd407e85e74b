#include "fiber.h"

#include <cstdint>

namespace emu {

#if SKEMU_FIBER_UCONTEXT

void fiber_init(Fiber& f, void* stack, size_t size, void (*entry)()) {
  getcontext(&f.ctx);
  f.ctx.uc_stack.ss_sp = stack;
  f.ctx.uc_stack.ss_size = size;
  f.ctx.uc_link = nullptr;
  makecontext(&f.ctx, entry, 0);
}

void fiber_switch(Fiber& from, Fiber& to) { swapcontext(&from.ctx, &to.ctx); }

#else

extern "C" void skemu_switch(void** save_sp, void* new_sp);
// rdi = where to save the old stack pointer, rsi = the new stack pointer.
asm(R"(
  .text
  .globl skemu_switch
  .type skemu_switch,@function
skemu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size skemu_switch, .-skemu_switch
)");

void fiber_init(Fiber& f, void* stack, size_t size, void (*entry)()) {
  // Initial frame, from the (16-aligned) top: a null return address for `entry`
  // (so rsp % 16 == 8 at its first instruction, as after a call), the address
  // `ret` jumps to, six zeroed callee-saved registers, MXCSR and the x87 CW.
  uintptr_t top = ((uintptr_t)stack + size) & ~(uintptr_t)15;
  uint64_t* p = (uint64_t*)top;
  *--p = 0;
  *--p = (uint64_t)(uintptr_t)entry;
  for (int i = 0; i < 6; ++i) *--p = 0;
  --p;
  uint32_t* csr = (uint32_t*)p;
  csr[0] = 0x1F80;  // MXCSR: all exceptions masked, round to nearest
  csr[1] = 0x037F;  // x87 control word: default
  f.sp = p;
}

void fiber_switch(Fiber& from, Fiber& to) { skemu_switch(&from.sp, to.sp); }

#endif

}  // namespace emu
