# Kernel-source mutants: copies of kernels/splitk_gemm.h and kernels/gemm_common.h
# (the shared split-K combine) with one synchronisation
# step removed or weakened. The emulator's tests must fail on each (see
# src/main.cpp, "source mutants"). Each entry: name | regex | replacement | what.
# A pattern that no longer matches the kernel source is reported as a failure
# (update the regex here after a rewrite of the kernel). `%SEMI%` stands for a
# semicolon (CMake's list separator); avoid [ and ] (they group list elements).
set(SKEMU_MUTANTS
  "no-main-wait|copy_wait<STAGES - 2, MIN_COPIES>\\(\\)%SEMI%|(void)0 /* mutant: no wait */%SEMI%|main loop without s_waitcnt vmcnt before the barrier"
  "wait-off-by-one|copy_wait<STAGES - 2, MIN_COPIES>\\(\\)%SEMI%|copy_wait<STAGES - 2, MIN_COPIES + 1>()%SEMI%|main-loop wait lets one copy too many stay in flight"
  "no-main-barrier|(copy_wait<STAGES - 2, MIN_COPIES>\\(\\)%SEMI%[^\n]*\n[ \t]*)barrier\\(\\)%SEMI%|\\1(void)0 /* mutant: no barrier */%SEMI%|main loop without the barrier after the wait"
  "no-final-wait|copy_wait<0, MIN_COPIES>\\(\\)%SEMI%|(void)0 /* mutant: no final wait */%SEMI%|no s_waitcnt vmcnt(0) before the LDS is reused"
  "no-slice-barrier|(store_k_slice\\(red, acc, wk, wmn, lane\\)%SEMI%[ \t]*\n[ \t]*)barrier\\(\\)%SEMI%|\\1(void)0 /* mutant: no barrier */%SEMI%|K-slice partial sums read before every slice has written them"
  "no-counter-reset|atomic_store_device\\(p\\.counters \\+ c\\.tile, 0u\\)%SEMI%|(void)0 /* mutant: no reset */%SEMI%|the last arriver does not reset the tile's counter"
  "arrival-order-sum|load_partial\\(slots \\+ \\(\\(i64\\)\\(s0 \\+ b\\) \\* E4|load_partial(slots + ((i64)((s0 + b + c.split) % S) * E4|the last arriver sums the slots starting from its own split (order depends on arrival)"
  "no-combine-barrier|(sums.idx. = total%SEMI%[ \t]*\n[ \t]*}[ \t]*\n[ \t]*)barrier\\(\\)%SEMI%|\\1(void)0 /* mutant: no barrier */%SEMI%|split-K combine: chunk sums read from LDS before every thread has written them"
)

# Writes <bindir>/mutants/<name>/splitk_gemm.h and gemm_common.h, the pattern
# applied to both (splitk_gemm.h's quoted include then finds the mutated
# gemm_common.h beside it); sets `applied` to 1 when the pattern matched.
function(skemu_make_mutant name regex repl root bindir applied_out header_out)
  string(ASCII 59 semi)
  string(REPLACE "%SEMI%" "${semi}" regex "${regex}")
  string(REPLACE "%SEMI%" "${semi}" repl "${repl}")
  set(dir "${bindir}/mutants/${name}")
  file(MAKE_DIRECTORY "${dir}")
  set(applied false)
  foreach(f splitk_gemm.h gemm_common.h)
    file(READ "${root}/kernels/${f}" text)
    string(REGEX REPLACE "${regex}" "${repl}" mutated "${text}")
    if(NOT mutated STREQUAL text)
      set(applied true)
    endif()
    skemu_write_if_changed("${dir}/${f}" "${mutated}")
  endforeach()
  set(${applied_out} ${applied} PARENT_SCOPE)
  set(${header_out} "${dir}/splitk_gemm.h" PARENT_SCOPE)
endfunction()
