// Minimal stackful fibers for the emulator's lanes: one context switch saves the
// callee-saved registers of the x86-64 SysV ABI (and MXCSR / x87 control word) on
// the old stack and restores them from the new one. Other hosts fall back to
// ucontext (correct, slower: swapcontext saves the signal mask with a syscall).
#pragma once
#include <cstddef>

#if !defined(__x86_64__) || defined(SKEMU_UCONTEXT)
#define SKEMU_FIBER_UCONTEXT 1
#include <ucontext.h>
#endif

namespace emu {

struct Fiber {
#if SKEMU_FIBER_UCONTEXT
  ucontext_t ctx;
#else
  void* sp = nullptr;
#endif
};

// Prepares `f` to run `entry()` on the stack [stack, stack + size) at its first switch.
void fiber_init(Fiber& f, void* stack, size_t size, void (*entry)());
// Saves the current context into `from` and continues `to`.
void fiber_switch(Fiber& from, Fiber& to);

}  // namespace emu
