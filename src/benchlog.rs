//! hipBLASLt's bench log for the calls skinnylt runs. hipBLASLt users capture a
//! workload's GEMMs with `HIPBLASLT_LOG_MASK=32`: the real library writes one
//! `hipblaslt-bench` command line per `hipblasLtMatmul` (to stderr, or to
//! `HIPBLASLT_LOG_FILE`, `%i` = pid), and tuning reads those lines back. A call
//! skinnylt runs never reaches the real library, so skinnylt writes the line
//! itself, in the real library's format, into the same stream.
//!
//! The format is hipBLASLt 6.4 / 7.x's (`tensile_host.cpp`, `log_str`): each token
//! followed by one space, an empty string value still printing its space (so some
//! gaps are two or three spaces wide), and the line ends with a space. A call
//! skinnylt runs has no Tensile solution index: its line says `--algo_method
//! heuristic`, which `hipblaslt-bench` accepts.
//!
//! Off unless the mask asks for it; then each intercepted call formats a line and
//! takes a lock to write it, as the real library does.

use std::io::Write;
use std::sync::Mutex;

use crate::abi::{self, OP_N, OP_T};
use crate::shadow::{DescState, LayoutState};

/// Where bench lines go: `HIPBLASLT_LOG_FILE` (`%i` replaced), else stderr.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sink {
    Stderr,
    File(String),
}

/// The bench-log sink the environment asks for, read as hipBLASLt reads it:
/// `HIPBLASLT_LOG_LEVEL`, when set at all, replaces the mask (and no level
/// includes the bench bit); `HIPBLASLT_LOG_MASK` is a C integer (`0x20`, `040`).
pub fn sink_from(get: &dyn Fn(&str) -> Option<String>) -> Option<Sink> {
    if get("HIPBLASLT_LOG_LEVEL").is_some() {
        return None;
    }
    let mask = get("HIPBLASLT_LOG_MASK").map_or(0, |m| c_integer(&m));
    if mask & 32 == 0 {
        return None;
    }
    Some(match get("HIPBLASLT_LOG_FILE") {
        // hipBLASLt replaces the first `%i` only.
        Some(f) => Sink::File(f.replacen("%i", &std::process::id().to_string(), 1)),
        None => Sink::Stderr,
    })
}

/// `strtol(s, NULL, 0)`: the longest prefix that is a decimal, `0x` hex or `0`
/// octal integer; 0 when there is none.
fn c_integer(s: &str) -> i64 {
    let s = s.trim_start();
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let (radix, digits) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (16, h)
    } else if s.starts_with('0') {
        (8, s)
    } else {
        (10, s)
    };
    let end = digits.find(|c: char| !c.is_digit(radix)).unwrap_or(digits.len());
    let v = i64::from_str_radix(&digits[..end], radix).unwrap_or(0);
    if neg { -v } else { v }
}

/// hipBLASLt's bench spelling of a `hipDataType`; `None` for types it drops.
fn type_name(t: i32) -> Option<&'static str> {
    Some(match t {
        abi::R_32F => "f32_r",
        1 => "f64_r",
        abi::R_16F => "f16_r",
        abi::R_16BF => "bf16_r",
        3 => "i8_r",
        10 => "i32_r",
        _ => return None,
    })
}

/// What names the solution in a bench line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algo {
    /// A Tensile solution index (the real library's lines).
    Index(i64),
    /// skinnylt's own kernel: no index; `hipblaslt-bench` picks by heuristic.
    Heuristic,
}

/// Everything a bench line states about one call.
#[derive(Clone, Copy, Debug)]
pub struct Call<'a> {
    pub desc: &'a DescState,
    pub a: &'a LayoutState,
    pub b: &'a LayoutState,
    pub c: &'a LayoutState,
    pub d: &'a LayoutState,
    pub alpha: f32,
    pub beta: f32,
    pub algo: Algo,
}

/// The line hipBLASLt writes for `call`, without the newline. M, N and K are the
/// BLAS call's: the rows and columns of D, and K from op(A).
pub fn line(call: &Call<'_>) -> String {
    let Call { desc, a, b, c, d, alpha, beta, algo } = *call;
    let k = if desc.trans_a() == OP_N { a.cols } else { a.rows };
    let op = |t: i32| if t == OP_T { "T" } else { "N" };
    let ty = |t: i32| type_name(t).map_or(String::new(), |n| format!("{n} "));
    let epilogue = desc.epilogue();
    let bias = matches!(epilogue, abi::EPILOGUE_BIAS | abi::EPILOGUE_RELU_BIAS | abi::EPILOGUE_GELU_BIAS);
    let activation = match epilogue {
        abi::EPILOGUE_RELU | abi::EPILOGUE_RELU_BIAS => "relu",
        abi::EPILOGUE_GELU | abi::EPILOGUE_GELU_BIAS => "gelu",
        _ => "none",
    };
    // The bias is D's type unless BIAS_DATA_TYPE says otherwise; without a bias
    // hipBLASLt's problem still carries an fp32 bias tensor.
    let bias_type = match desc.bias_type() {
        _ if !bias => abi::R_32F,
        abi::DATATYPE_INVALID => d.dtype,
        t => t,
    };
    let mut s = format!(
        "hipblaslt-bench --api_method c -m {} -n {} -k {k} --lda {} --ldb {} --ldc {} --ldd {}  --stride_a 0 --stride_b 0 --stride_c 0 --stride_d 0  --alpha {alpha:.6} --beta {beta:.6} --transA {} --transB {} --batch_count 1 --scaleA 0 --scaleB 0 ",
        d.rows,
        d.cols,
        a.ld,
        b.ld,
        c.ld,
        d.ld,
        op(desc.trans_a()),
        op(desc.trans_b()),
    );
    s += if bias { "--bias_vector --bias_source d " } else { " " };
    s += &format!("--a_type {}--b_type {}--c_type {}--d_type {}", ty(a.dtype), ty(b.dtype), ty(c.dtype), ty(d.dtype));
    s += &format!("--scale_type f32_r --bias_type {}  --compute_type f32_r ", ty(bias_type));
    s += &match algo {
        Algo::Index(i) => format!("--algo_method index --solution_index {i} "),
        Algo::Heuristic => "--algo_method heuristic ".to_owned(),
    };
    s += &format!("--activation_type {activation} --any_stride --rotating 0 --cold_iters 0 --iters 0 ");
    s
}

/// The open bench stream, found or opened on the first line.
pub struct BenchLog {
    sink: Sink,
    out: Mutex<Option<Box<dyn Write + Send>>>,
}

impl BenchLog {
    pub fn new(sink: Sink) -> BenchLog {
        BenchLog { sink, out: Mutex::new(None) }
    }

    /// Writes one line (and its newline) in one write, as the real library
    /// flushes each of its lines. `standalone`: skinnylt is the only library, so a
    /// file it opens is truncated first, as hipBLASLt does; interposed, appended to.
    #[cold]
    pub fn write(&self, line: &str, standalone: bool) {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let w = out.get_or_insert_with(|| self.open(standalone));
        let _ = w.write_all(format!("{line}\n").as_bytes());
        let _ = w.flush();
    }

    fn open(&self, standalone: bool) -> Box<dyn Write + Send> {
        let Sink::File(path) = &self.sink else { return Box::new(std::io::stderr()) };
        // The real library's own stream to the file, if it has one: writing through
        // a duplicate of its descriptor shares its file offset, so the lines of
        // both interleave instead of overwriting each other.
        if let Some(f) = shared_descriptor(path) {
            return Box::new(f);
        }
        match crate::log::open_nonblocking(path, !standalone) {
            Ok(f) => Box::new(f),
            Err(e) => {
                crate::log::config_error(format_args!("HIPBLASLT_LOG_FILE: cannot write to {path}: {e}; bench lines go to stderr"));
                Box::new(std::io::stderr())
            }
        }
    }
}

/// A duplicate of a descriptor this process already has open for writing on
/// `path` (the real library's log stream), if any.
fn shared_descriptor(path: &str) -> Option<std::fs::File> {
    use std::os::fd::{BorrowedFd, FromRawFd};
    let want = std::fs::canonicalize(path).ok()?;
    for entry in std::fs::read_dir("/proc/self/fd").ok()?.flatten() {
        let Ok(fd) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        if std::fs::read_link(entry.path()).ok().as_deref() != Some(want.as_path()) {
            continue;
        }
        // SAFETY: F_GETFL on a descriptor number just listed; a stale one fails.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        if flags < 0 || flags & libc::O_ACCMODE == libc::O_RDONLY {
            continue;
        }
        // SAFETY: `fd` is open (F_GETFL succeeded) for the duration of this call;
        // it is only duplicated, and the duplicate is owned by the File.
        let dup = unsafe { BorrowedFd::borrow_raw(fd) }.try_clone_to_owned().ok()?;
        // SAFETY: `dup` is a fresh descriptor this File now owns.
        return Some(unsafe { std::fs::File::from_raw_fd(std::os::fd::IntoRawFd::into_raw_fd(dup)) });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(dtype: i32, rows: u64, cols: u64, ld: i64) -> LayoutState {
        LayoutState::new(dtype, rows, cols, ld)
    }

    /// A line hipBLASLt 7.x wrote (ROCm/legacy-rocm-build issue #5941), rebuilt
    /// from its call, byte for byte: spacing, order, and the trailing space.
    #[test]
    fn lines_match_the_real_librarys_byte_for_byte() {
        let desc = DescState::new(abi::COMPUTE_32F, abi::R_32F);
        let a = layout(abi::R_32F, 1, 256, 1);
        let b = layout(abi::R_32F, 256, 256, 256);
        let d = layout(abi::R_32F, 1, 256, 1);
        let call = Call { desc: &desc, a: &a, b: &b, c: &d, d: &d, alpha: 1.0, beta: 1.0, algo: Algo::Index(1214) };
        assert_eq!(
            line(&call),
            "hipblaslt-bench --api_method c -m 1 -n 256 -k 256 --lda 1 --ldb 256 --ldc 1 --ldd 1  --stride_a 0 --stride_b 0 --stride_c 0 --stride_d 0  --alpha 1.000000 --beta 1.000000 --transA N --transB N --batch_count 1 --scaleA 0 --scaleB 0  --a_type f32_r --b_type f32_r --c_type f32_r --d_type f32_r --scale_type f32_r --bias_type f32_r   --compute_type f32_r --algo_method index --solution_index 1214 --activation_type none --any_stride --rotating 0 --cold_iters 0 --iters 0 "
        );
    }

    /// PyTorch's `F.linear(x[8,4096], W[1024,4096], b)` in bf16, as skinnylt runs it.
    #[test]
    fn a_decode_linear_with_bias() {
        let mut desc = DescState::new(abi::COMPUTE_32F, abi::R_32F);
        desc.attrs.insert(abi::desc_attr::TRANSA, OP_T as u64);
        desc.attrs.insert(abi::desc_attr::EPILOGUE, abi::EPILOGUE_BIAS as u64);
        let a = layout(abi::R_16BF, 4096, 1024, 4096);
        let b = layout(abi::R_16BF, 4096, 8, 4096);
        let d = layout(abi::R_16BF, 1024, 8, 1024);
        let call = Call { desc: &desc, a: &a, b: &b, c: &d, d: &d, alpha: 0.5, beta: 0.0, algo: Algo::Heuristic };
        assert_eq!(
            line(&call),
            "hipblaslt-bench --api_method c -m 1024 -n 8 -k 4096 --lda 4096 --ldb 4096 --ldc 1024 --ldd 1024  --stride_a 0 --stride_b 0 --stride_c 0 --stride_d 0  --alpha 0.500000 --beta 0.000000 --transA T --transB N --batch_count 1 --scaleA 0 --scaleB 0 --bias_vector --bias_source d --a_type bf16_r --b_type bf16_r --c_type bf16_r --d_type bf16_r --scale_type f32_r --bias_type bf16_r   --compute_type f32_r --algo_method heuristic --activation_type none --any_stride --rotating 0 --cold_iters 0 --iters 0 "
        );
    }

    /// `gemm_and_bias` with GELU_BIAS and an fp32 bias, and a plain RELU with beta = 1:
    /// the activation, the bias flags and types, and beta as the call passed them.
    #[test]
    fn activations_and_bias_types() {
        let mut desc = DescState::new(abi::COMPUTE_32F, abi::R_32F);
        desc.attrs.insert(abi::desc_attr::TRANSA, OP_T as u64);
        desc.attrs.insert(abi::desc_attr::EPILOGUE, abi::EPILOGUE_GELU_BIAS as u64);
        desc.attrs.insert(abi::desc_attr::BIAS_DATA_TYPE, abi::R_32F as u64);
        let a = layout(abi::R_16BF, 4096, 1024, 4096);
        let b = layout(abi::R_16BF, 4096, 8, 4096);
        let d = layout(abi::R_16BF, 1024, 8, 1024);
        let call = Call { desc: &desc, a: &a, b: &b, c: &d, d: &d, alpha: 1.0, beta: 0.0, algo: Algo::Heuristic };
        let l = line(&call);
        assert!(l.contains(" --bias_vector --bias_source d --a_type") && l.contains("--bias_type f32_r ") && l.contains("--activation_type gelu "), "{l}");
        let mut relu = desc.clone();
        relu.attrs.insert(abi::desc_attr::EPILOGUE, abi::EPILOGUE_RELU as u64);
        let l = line(&Call { desc: &relu, beta: 1.0, ..call });
        assert!(!l.contains("--bias_vector") && l.contains("--beta 1.000000") && l.contains("--activation_type relu "), "{l}");
    }

    /// The mask is read as hipBLASLt reads it, and any log level turns it off.
    #[test]
    fn the_mask_and_level_are_read_as_hipblaslt_reads_them() {
        let sink = |pairs: &[(&str, &str)]| sink_from(&|k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string()));
        assert_eq!(sink(&[("HIPBLASLT_LOG_MASK", "32")]), Some(Sink::Stderr));
        assert_eq!(sink(&[("HIPBLASLT_LOG_MASK", "0x20")]), Some(Sink::Stderr));
        assert_eq!(sink(&[("HIPBLASLT_LOG_MASK", "040")]), Some(Sink::Stderr));
        assert_eq!(sink(&[("HIPBLASLT_LOG_MASK", "48junk")]), Some(Sink::Stderr));
        assert_eq!(sink(&[("HIPBLASLT_LOG_MASK", "31")]), None);
        assert_eq!(sink(&[("HIPBLASLT_LOG_MASK", "junk")]), None);
        assert_eq!(sink(&[("HIPBLASLT_LOG_MASK", "32"), ("HIPBLASLT_LOG_LEVEL", "5")]), None);
        assert_eq!(sink(&[("HIPBLASLT_LOG_MASK", "32"), ("HIPBLASLT_LOG_LEVEL", "")]), None);
        let pid = std::process::id();
        assert_eq!(sink(&[("HIPBLASLT_LOG_MASK", "32"), ("HIPBLASLT_LOG_FILE", "/tmp/b-%i-%i.log")]), Some(Sink::File(format!("/tmp/b-{pid}-%i.log"))));
    }

    /// Lines go through the descriptor another writer already holds on the file,
    /// sharing its offset: neither overwrites the other's lines.
    #[test]
    fn lines_interleave_with_the_real_librarys_stream() {
        let path = std::env::temp_dir().join(format!("skinnylt-bench-{}.log", std::process::id()));
        let mut theirs = std::fs::File::create(&path).unwrap();
        writeln!(theirs, "real 1").unwrap();
        let log = BenchLog::new(Sink::File(path.to_str().unwrap().to_owned()));
        log.write("ours 1", false);
        writeln!(theirs, "real 2").unwrap();
        log.write("ours 2", false);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "real 1\nours 1\nreal 2\nours 2\n");
        std::fs::remove_file(&path).unwrap();
    }
}
