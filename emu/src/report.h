// Test bookkeeping for the emulator's runner.
#pragma once
#include <cstdio>
#include <mutex>
#include <string>

namespace emu {

struct Report {
  int passed = 0, failed = 0;
  bool verbose = false;
  std::mutex mu;
  void result(bool ok, const std::string& name, const std::string& detail = "") {
    std::lock_guard<std::mutex> g(mu);
    if (ok) ++passed;
    else ++failed;
    if (!ok || verbose) std::printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", name.c_str(), detail.empty() ? "" : ": ",
                                    detail.c_str());
    std::fflush(stdout);
  }
};

// checks.cpp
void run_isa_selftests(Report& rep);
void run_probe_parity(Report& rep);
void run_atom_contract(Report& rep);
void run_bank_selftests(Report& rep);
void run_prefetch_check(Report& rep);

}  // namespace emu
