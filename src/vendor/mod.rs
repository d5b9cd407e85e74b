//! Vendor baselines for benchmarks and tuning, loaded at run time: cuBLASLt on
//! NVIDIA. (On AMD the baseline is the real hipBLASLt, reached through `crate::real`.)

pub mod cublaslt;
