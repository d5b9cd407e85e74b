//! A program of hipBLASLt C API calls drawn from the fuzzer's bytes, run through
//! skinnylt's exported `extern "C"` functions with the checks of every call.
//!
//! The driver keeps a table of every object it created (live and destroyed), so
//! most calls get live objects of the right kind and some get destroyed ones
//! (double destroy, use after destroy), objects of another kind, NULL or garbage
//! integers. It never breaks the caller's side of the contract: a buffer passed
//! with a size holds at least that many bytes, a results array holds the count
//! requested, and alpha/beta are readable host floats wherever skinnylt may read
//! them (host pointer mode with an fp32 scale type, as far as the driver can tell;
//! garbage only where the descriptor says they are not host floats). Device
//! pointers (A, B, C, D, bias, workspace, stream) are arbitrary integers: with no
//! GPU nothing may dereference them.
//!
//! Checked after every call (a failed check panics, which libFuzzer reports):
//! * the status is one of hipBLASLt's (`abi.rs`) and never INTERNAL_ERROR (what a
//!   panic caught at the C boundary becomes);
//! * every `hipblasLtMatmul` is counted exactly once (`skinnylt_get_counters`:
//!   intercepted + forwarded grows by one; with no GPU it is always forwarded), and
//!   the forwards by reason (`skinnylt_forwarded_for`) add up to the forwarded total;
//! * standalone: what the library itself answers (Destroy succeeds exactly for a
//!   live object of its kind, a new object never has the address of a live one,
//!   GetAttribute reads back what SetAttribute set, NULL handles get
//!   NOT_INITIALIZED, nothing runs without a GPU);
//! * interposed on the stub: every call reaches the stub, once, first, and its
//!   status comes back unchanged; `hipblasLtMatmul` reaches it with exactly the
//!   caller's arguments.

use std::ffi::{CStr, CString, c_char, c_void};

use arbitrary::{Result, Unstructured};
use skinnylt::abi::*;
use skinnylt::ffi::hipblaslt as lt;
use skinnylt::ffi::skinnylt as sk;

use crate::stub::Stub;

/// Calls per program: enough for long sequences, bounded so that one input stays fast.
pub const MAX_OPS: usize = 160;

/// Handles and the three descriptor kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Handle,
    Desc,
    Layout,
    Pref,
}

const KINDS: [Kind; 4] = [Kind::Handle, Kind::Desc, Kind::Layout, Kind::Pref];

/// One object the program created.
#[derive(Clone, Copy, Debug)]
struct Obj {
    kind: Kind,
    addr: usize,
    live: bool,
    /// Matmul descriptors: the scale type it was created with, and the low 32 bits
    /// of POINTER_MODE as skinnylt shadows it (host = 0).
    scale: i32,
    pointer_mode: u32,
}

/// The coherent decode GEMM set up by the last `setup` op (addresses, possibly
/// destroyed since).
#[derive(Clone, Copy, Debug)]
struct Group {
    handle: usize,
    desc: usize,
    a: usize,
    b: usize,
    c: usize,
    d: usize,
    pref: usize,
}

/// Which library answers: skinnylt alone, or skinnylt interposed on the stub.
pub enum Mode<'s> {
    Standalone,
    Stub(&'s Stub),
}

pub struct Driver<'s> {
    mode: Mode<'s>,
    /// `FUZZ_TRACE=1`: print every call, its status and, for matmuls, the reason
    /// it was forwarded (to read what an input does).
    trace: bool,
    objs: Vec<Obj>,
    group: Option<Group>,
    enabled: bool,
    algo: Option<MatmulAlgo>,
}

/// Every stub function `set_status` may program (the 24 of every version).
const STUB_FUNCTIONS: [&str; 19] = [
    "hipblasLtGetVersion",
    "hipblasLtGetGitRevision",
    "hipblasLtGetArchName",
    "hipblasLtCreate",
    "hipblasLtDestroy",
    "hipblasLtMatrixLayoutCreate",
    "hipblasLtMatrixLayoutDestroy",
    "hipblasLtMatrixLayoutSetAttribute",
    "hipblasLtMatrixLayoutGetAttribute",
    "hipblasLtMatmulDescCreate",
    "hipblasLtMatmulDescDestroy",
    "hipblasLtMatmulDescSetAttribute",
    "hipblasLtMatmulDescGetAttribute",
    "hipblasLtMatmulPreferenceCreate",
    "hipblasLtMatmulPreferenceDestroy",
    "hipblasLtMatmulPreferenceSetAttribute",
    "hipblasLtMatmulPreferenceGetAttribute",
    "hipblasLtMatmulAlgoGetHeuristic",
    "hipblasLtMatmul",
];

/// Statuses the stub is programmed with: hipBLASLt's, less INTERNAL_ERROR, which
/// stays reserved for a panic inside skinnylt.
const STUB_STATUSES: [Status; 10] = [
    STATUS_SUCCESS,
    STATUS_NOT_INITIALIZED,
    STATUS_ALLOC_FAILED,
    STATUS_INVALID_VALUE,
    STATUS_MAPPING_ERROR,
    STATUS_EXECUTION_FAILED,
    STATUS_NOT_SUPPORTED,
    STATUS_ARCH_MISMATCH,
    STATUS_HANDLE_IS_NULLPTR,
    STATUS_INVALID_ENUM,
];

const DIMS: [u64; 22] = [
    0,
    1,
    2,
    7,
    8,
    15,
    16,
    127,
    128,
    129,
    256,
    4096,
    7168,
    1 << 28,
    (1 << 28) + 8,
    u32::MAX as u64 / 2,
    u32::MAX as u64 / 2 + 1,
    u32::MAX as u64,
    1 << 32,
    i64::MAX as u64,
    u64::MAX - 7,
    u64::MAX,
];

const DTYPES: [i32; 8] = [R_16BF, R_16BF, R_16F, R_32F, 1, 28, DATATYPE_INVALID, -1];

/// Attribute values worth trying whatever the attribute.
const VALUES: [u64; 16] = [
    0,
    1,
    4,
    OP_N as u64,
    OP_T as u64,
    OP_C as u64,
    R_16BF as u64,
    R_16F as u64,
    DATATYPE_INVALID as u64,
    EPILOGUE_BIAS as u64,
    2,
    0x7300_0000,
    0x7300_0001,
    u32::MAX as u64,
    u64::MAX,
    1 << 31,
];

fn known_status(s: Status) -> bool {
    (STATUS_SUCCESS..=STATUS_UNKNOWN).contains(&s)
}

fn counters() -> sk::skinnylt_counters {
    let mut c = sk::skinnylt_counters::default();
    // SAFETY: `c` is a writable counters struct for the call.
    let r = unsafe { sk::skinnylt_get_counters(&mut c) };
    assert_eq!(r, 0, "skinnylt_get_counters failed");
    c
}

fn forwarded_for(name: &str) -> i64 {
    let c = CString::new(name).unwrap();
    // SAFETY: a NUL-terminated string, read during the call only.
    unsafe { sk::skinnylt_forwarded_for(c.as_ptr()) }
}

/// A dimension: mostly small or a multiple of 8, some edge values, some anything.
fn dim(u: &mut Unstructured) -> Result<u64> {
    Ok(match u.arbitrary::<u8>()? {
        0..=89 => u.int_in_range(0..=300)?,
        90..=179 => 8 * u.int_in_range(0..=8192u64)?,
        180..=229 => *u.choose(&DIMS)?,
        _ => u.arbitrary()?,
    })
}

/// A token count for a set-up GEMM: mostly what decode uses.
fn tokens(u: &mut Unstructured) -> Result<u64> {
    Ok(match u.arbitrary::<u8>()? {
        0..=159 => u.int_in_range(1..=16)?,
        160..=229 => u.int_in_range(1..=300)?,
        _ => dim(u)?,
    })
}

/// A device pointer as the caller passes it: null, 16-byte aligned, odd, anything.
fn device_ptr(u: &mut Unstructured) -> Result<u64> {
    Ok(match u.arbitrary::<u8>()? {
        0..=24 => 0,
        25..=199 => 0x7000_0000 + 16 * u.int_in_range(0..=0xFFFFu64)?,
        200..=219 => 0x7000_0000 + u.int_in_range(1..=15u64)?,
        _ => u.arbitrary()?,
    })
}

fn dtype(u: &mut Unstructured) -> Result<i32> {
    if u.ratio(1, 16)? { u.arbitrary() } else { Ok(*u.choose(&DTYPES)?) }
}

/// An attribute id of `kind`: mostly one hipBLASLt defines, some anything.
fn attr(u: &mut Unstructured, kind: Kind) -> Result<i32> {
    if u.ratio(1, 10)? {
        return u.arbitrary();
    }
    Ok(match kind {
        Kind::Desc => *u.choose(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 22, 23, 31, 32, 33, 100, 101, 102, 103, 104, 105, 106])?,
        Kind::Layout | Kind::Handle => u.int_in_range(0..=9)?,
        Kind::Pref => u.int_in_range(0..=2)?,
    })
}

/// A scalar value for alpha or beta.
fn scalar(u: &mut Unstructured) -> Result<f32> {
    Ok(match u.arbitrary::<u8>()? {
        0..=199 => 1.0,
        200..=219 => 0.0,
        220..=229 => -0.0,
        230..=239 => f32::NAN,
        _ => u.arbitrary()?,
    })
}

/// A `(const void* buf, size_t size)` pair: the bytes (if any) and the size claimed,
/// never more than the bytes hold.
struct InBuf {
    bytes: Option<Vec<u8>>,
    size: usize,
}

impl InBuf {
    fn draw(u: &mut Unstructured) -> Result<InBuf> {
        Ok(match u.arbitrary::<u8>()? {
            0..=199 => {
                let value = if u.ratio(3, 4)? { *u.choose(&VALUES)? } else { u.arbitrary()? };
                let len = *u.choose(&[4usize, 8, 8, 8, 1, 2, 0, 16])?;
                let mut bytes = value.to_le_bytes().to_vec();
                bytes.resize(len, 0);
                let size = if u.ratio(1, 8)? { u.int_in_range(0..=len)? } else { len };
                InBuf { bytes: Some(bytes), size }
            }
            // NULL with a size: zero, the field's, huge.
            _ => InBuf { bytes: None, size: *u.choose(&[0usize, 1, 4, 8, 16, usize::MAX, isize::MAX as usize, 1 << 40])? },
        })
    }

    fn ptr(&self) -> *const c_void {
        self.bytes.as_ref().map_or(std::ptr::null(), |b| b.as_ptr().cast())
    }
}

/// A `(void* buf, size_t size, size_t* written)` triple for GetAttribute.
struct OutBuf {
    bytes: Option<Vec<u8>>,
    size: usize,
    written: Option<usize>,
}

impl OutBuf {
    fn draw(u: &mut Unstructured) -> Result<OutBuf> {
        let (bytes, size) = match u.arbitrary::<u8>()? {
            0..=179 => {
                let len = *u.choose(&[8usize, 8, 4, 16, 1, 0, 3])?;
                let size = if u.ratio(1, 8)? { u.int_in_range(0..=len)? } else { len };
                (Some(vec![0xEEu8; len]), size)
            }
            _ => (None, *u.choose(&[0usize, 4, 8, usize::MAX])?),
        };
        let written = (!u.ratio(1, 6)?).then_some(usize::MAX);
        Ok(OutBuf { bytes, size, written })
    }
}

/// Where alpha or beta points.
enum ScalarArg {
    Null,
    Host(Box<f32>),
    /// A device pointer (not read by skinnylt, by the descriptor's own say-so).
    Device(u64),
}

impl ScalarArg {
    fn ptr(&self) -> *const c_void {
        match self {
            ScalarArg::Null => std::ptr::null(),
            ScalarArg::Host(b) => (&**b as *const f32).cast(),
            ScalarArg::Device(p) => *p as usize as *const c_void,
        }
    }
}

type GetFn = unsafe extern "C" fn(*mut c_void, i32, *mut c_void, usize, *mut usize) -> Status;

/// GetAttribute of a descriptor kind, and its name.
fn get_fn(kind: Kind) -> (&'static str, GetFn) {
    match kind {
        Kind::Desc => ("hipblasLtMatmulDescGetAttribute", lt::hipblasLtMatmulDescGetAttribute),
        Kind::Layout | Kind::Handle => ("hipblasLtMatrixLayoutGetAttribute", lt::hipblasLtMatrixLayoutGetAttribute),
        Kind::Pref => ("hipblasLtMatmulPreferenceGetAttribute", lt::hipblasLtMatmulPreferenceGetAttribute),
    }
}

impl<'s> Driver<'s> {
    pub fn new(mode: Mode<'s>) -> Driver<'s> {
        static TRACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let trace = *TRACE.get_or_init(|| std::env::var_os("FUZZ_TRACE").is_some_and(|v| v == "1"));
        Driver { mode, trace, objs: Vec::new(), group: None, enabled: true, algo: None }
    }

    fn standalone(&self) -> bool {
        matches!(self.mode, Mode::Standalone)
    }

    fn stub(&self) -> Option<&'s Stub> {
        match self.mode {
            Mode::Stub(s) => Some(s),
            Mode::Standalone => None,
        }
    }

    // ------------------------------------------------------------ the object table

    fn live_at(&self, kind: Kind, addr: usize) -> Option<usize> {
        self.objs.iter().position(|o| o.live && o.kind == kind && o.addr == addr)
    }

    /// After a successful Create: the new object, which must not alias a live one.
    fn created(&mut self, kind: Kind, addr: usize, scale: i32) {
        assert_ne!(addr, 0, "{kind:?} Create succeeded with a NULL object");
        if self.standalone() {
            // Every live object is skinnylt's own allocation: addresses are unique.
            let clash = self.objs.iter().find(|o| o.live && o.addr == addr);
            assert!(clash.is_none(), "{kind:?} Create returned {addr:#x}, the address of live {clash:?}");
        }
        self.objs.push(Obj { kind, addr, live: true, scale, pointer_mode: 0 });
        // Bound the table: forget the oldest dead objects.
        if self.objs.len() > 512
            && let Some(i) = self.objs.iter().position(|o| !o.live)
        {
            self.objs.remove(i);
        }
    }

    /// After a Destroy of `kind` at `addr`, whatever its status: skinnylt forgets
    /// the object before it forwards, so the object is gone in both modes.
    fn destroyed(&mut self, kind: Kind, addr: usize) {
        for o in self.objs.iter_mut().filter(|o| o.kind == kind && o.addr == addr) {
            o.live = false;
        }
    }

    /// An object argument of `kind`: mostly a live one, else a destroyed one, one
    /// of another kind, NULL or a garbage integer.
    fn pick(&self, u: &mut Unstructured, kind: Kind) -> Result<usize> {
        let sel: u8 = u.arbitrary()?;
        let i: usize = u.arbitrary::<u16>()? as usize;
        let of = |f: &dyn Fn(&Obj) -> bool| -> Option<usize> {
            let v: Vec<usize> = self.objs.iter().filter(|o| f(o)).map(|o| o.addr).collect();
            (!v.is_empty()).then(|| v[i % v.len()])
        };
        Ok(match sel {
            0..=184 => of(&|o| o.live && o.kind == kind).unwrap_or(0),
            185..=209 => of(&|o| !o.live && o.kind == kind).or_else(|| of(&|o| o.kind == kind)).unwrap_or(0),
            210..=222 => of(&|o| o.live && o.kind != kind).unwrap_or(0),
            223..=237 => 0,
            238..=245 => of(&|o| o.live).map_or(0, |a| a.wrapping_add(8 * (1 + i % 4))),
            _ => match u.arbitrary::<u8>()? % 3 {
                0 => u.int_in_range(1..=0xFFFFusize)?,
                1 => 0x5100 + 0x10 * (i % 64),
                _ => u.arbitrary()?,
            },
        })
    }

    /// Whether skinnylt may read alpha and beta of a matmul with `desc` as host
    /// floats: unless the driver knows `desc` is a live descriptor in device
    /// pointer mode or with a scale type other than fp32, assume it may.
    fn scalars_read(&self, desc: usize) -> bool {
        match self.live_at(Kind::Desc, desc) {
            Some(i) => {
                let o = &self.objs[i];
                o.scale == R_32F && o.pointer_mode == POINTER_MODE_HOST as u32
            }
            None => true,
        }
    }

    // ------------------------------------------------------------ checks

    /// Runs one call of the C API function `name` and checks its status.
    fn call(&self, name: &str, f: impl FnOnce() -> Status) -> Status {
        let before = self.stub().map(Stub::call_count);
        let reasons = self.trace.then(|| skinnylt::route::Reason::ALL.map(|r| forwarded_for(r.name())));
        let s = f();
        if let Some(reasons) = reasons {
            let why = skinnylt::route::Reason::ALL.iter().zip(reasons).filter(|(r, n)| forwarded_for(r.name()) != *n).map(|(r, _)| r.name()).collect::<Vec<_>>();
            eprintln!("{name} -> {} {why:?}", status_name(s));
        }
        assert!(known_status(s), "{name} returned {s}, not a hipBLASLt status");
        assert_ne!(s, STATUS_INTERNAL_ERROR, "{name} returned INTERNAL_ERROR: a panic was caught at the C boundary");
        if let (Some(stub), Some(before)) = (self.stub(), before) {
            // Interposed: the call reached the real library first, and its status
            // came back unchanged.
            let first = stub.call_at(before);
            let first = first.unwrap_or_else(|| panic!("{name} did not reach the real library"));
            assert_eq!(first.name, name, "{name} reached the real library as {}", first.name);
            assert_eq!(s, first.status, "{name}: the real library returned {}, the caller got {s}", first.status);
        }
        s
    }

    /// Standalone: `s` must be `want`.
    fn expect(&self, name: &str, s: Status, want: Status) {
        if self.standalone() {
            assert_eq!(s, want, "{name}: status {} ({s}), expected {} ({want})", status_name(s), status_name(want));
        }
    }

    // ------------------------------------------------------------ the ops

    /// Runs the program in `u` (until its bytes or `MAX_OPS` run out), then destroys
    /// everything still live and checks the counters.
    pub fn run(&mut self, u: &mut Unstructured) {
        if let Some(stub) = self.stub() {
            stub.reset();
        }
        for _ in 0..MAX_OPS {
            if u.is_empty() {
                break;
            }
            if self.op(u).is_err() {
                break;
            }
            // The stub's log holds 4096 calls: stay clear of its wrap.
            if self.stub().is_some_and(|s| s.call_count() > 3500) {
                break;
            }
        }
        self.cleanup();
    }

    fn op(&mut self, u: &mut Unstructured) -> Result<()> {
        match u.arbitrary::<u8>()? {
            0..=9 => self.create(u),
            10..=14 => {
                let h = self.pick(u, Kind::Handle)?;
                self.destroy_handle(h);
                Ok(())
            }
            15..=29 => self.create_layout(u),
            30..=37 => self.create_desc(u),
            38..=42 => self.create_pref(u),
            43..=54 => {
                let kind = *u.choose(&KINDS)?;
                let obj = self.pick(u, kind)?;
                self.destroy(kind, obj);
                Ok(())
            }
            55..=99 => self.set_attribute(u),
            100..=124 => self.get_attribute(u),
            125..=139 => self.heuristic(u),
            140..=184 => self.matmul(u),
            185..=199 => self.setup(u),
            200..=209 => self.info(u),
            210..=219 => self.own_api(u),
            220..=234 => self.other(u),
            _ => match self.stub() {
                Some(stub) => {
                    let name = *u.choose(&STUB_FUNCTIONS)?;
                    stub.set_status(name, *u.choose(&STUB_STATUSES)?);
                    Ok(())
                }
                None => {
                    // Double destroy of a live object.
                    let kind = *u.choose(&KINDS)?;
                    let obj = self.pick(u, kind)?;
                    self.destroy(kind, obj);
                    self.destroy(kind, obj);
                    Ok(())
                }
            },
        }
    }

    fn create(&mut self, u: &mut Unstructured) -> Result<()> {
        let null = u.ratio(1, 16)?;
        self.create_handle(null);
        Ok(())
    }

    fn create_handle(&mut self, null: bool) -> Option<usize> {
        let mut h: Handle = std::ptr::null_mut();
        let out = if null { std::ptr::null_mut() } else { &mut h as *mut Handle };
        // SAFETY: `out` is NULL or a writable handle slot.
        let s = self.call("hipblasLtCreate", || unsafe { lt::hipblasLtCreate(out) });
        self.expect("hipblasLtCreate", s, if null { STATUS_INVALID_VALUE } else { STATUS_SUCCESS });
        (s == STATUS_SUCCESS && !null).then(|| {
            self.created(Kind::Handle, h as usize, 0);
            h as usize
        })
    }

    fn destroy_handle(&mut self, h: usize) {
        let live = self.live_at(Kind::Handle, h).is_some();
        // SAFETY: only the handle's value crosses; skinnylt must not dereference it.
        let s = self.call("hipblasLtDestroy", || unsafe { lt::hipblasLtDestroy(h as Handle) });
        self.destroyed(Kind::Handle, h);
        let want = match (h, live) {
            (0, _) => STATUS_NOT_INITIALIZED,
            (_, true) => STATUS_SUCCESS,
            (_, false) => STATUS_INVALID_VALUE,
        };
        self.expect("hipblasLtDestroy", s, want);
    }

    fn create_layout(&mut self, u: &mut Unstructured) -> Result<()> {
        let null = u.ratio(1, 16)?;
        let (t, rows, cols) = (dtype(u)?, dim(u)?, dim(u)?);
        let ld = match u.arbitrary::<u8>()? {
            0..=199 => rows as i64,
            200..=219 => dim(u)? as i64,
            _ => u.arbitrary()?,
        };
        self.layout(null, t, rows, cols, ld);
        Ok(())
    }

    fn layout(&mut self, null: bool, t: i32, rows: u64, cols: u64, ld: i64) -> Option<usize> {
        let mut l: MatrixLayout = std::ptr::null_mut();
        let out = if null { std::ptr::null_mut() } else { &mut l as *mut MatrixLayout };
        // SAFETY: `out` is NULL or a writable layout slot.
        let s = self.call("hipblasLtMatrixLayoutCreate", || unsafe { lt::hipblasLtMatrixLayoutCreate(out, t, rows, cols, ld) });
        self.expect("hipblasLtMatrixLayoutCreate", s, if null { STATUS_INVALID_VALUE } else { STATUS_SUCCESS });
        (s == STATUS_SUCCESS && !null).then(|| {
            self.created(Kind::Layout, l as usize, 0);
            l as usize
        })
    }

    fn create_desc(&mut self, u: &mut Unstructured) -> Result<()> {
        let null = u.ratio(1, 16)?;
        let compute = if u.ratio(7, 8)? { COMPUTE_32F } else { *u.choose(&[0, 1, 3, 4, 5, 6, 7, 21, -1, i32::MAX])? };
        let scale = if u.ratio(3, 4)? { R_32F } else { dtype(u)? };
        self.desc(null, compute, scale);
        Ok(())
    }

    fn desc(&mut self, null: bool, compute: i32, scale: i32) -> Option<usize> {
        let mut d: MatmulDesc = std::ptr::null_mut();
        let out = if null { std::ptr::null_mut() } else { &mut d as *mut MatmulDesc };
        // SAFETY: `out` is NULL or a writable descriptor slot.
        let s = self.call("hipblasLtMatmulDescCreate", || unsafe { lt::hipblasLtMatmulDescCreate(out, compute, scale) });
        if self.standalone() {
            assert!(s == STATUS_SUCCESS || s == STATUS_INVALID_VALUE, "hipblasLtMatmulDescCreate: {}", status_name(s));
            assert!(!(null && s == STATUS_SUCCESS), "hipblasLtMatmulDescCreate(NULL) succeeded");
        }
        (s == STATUS_SUCCESS && !null).then(|| {
            self.created(Kind::Desc, d as usize, scale);
            d as usize
        })
    }

    fn create_pref(&mut self, u: &mut Unstructured) -> Result<()> {
        let null = u.ratio(1, 16)?;
        self.pref(null);
        Ok(())
    }

    fn pref(&mut self, null: bool) -> Option<usize> {
        let mut p: MatmulPreference = std::ptr::null_mut();
        let out = if null { std::ptr::null_mut() } else { &mut p as *mut MatmulPreference };
        // SAFETY: `out` is NULL or a writable preference slot.
        let s = self.call("hipblasLtMatmulPreferenceCreate", || unsafe { lt::hipblasLtMatmulPreferenceCreate(out) });
        self.expect("hipblasLtMatmulPreferenceCreate", s, if null { STATUS_INVALID_VALUE } else { STATUS_SUCCESS });
        (s == STATUS_SUCCESS && !null).then(|| {
            self.created(Kind::Pref, p as usize, 0);
            p as usize
        })
    }

    fn destroy(&mut self, kind: Kind, obj: usize) {
        let live = self.live_at(kind, obj).is_some();
        let (name, f): (&str, unsafe extern "C" fn(*mut c_void) -> Status) = match kind {
            Kind::Handle => return self.destroy_handle(obj),
            Kind::Desc => ("hipblasLtMatmulDescDestroy", lt::hipblasLtMatmulDescDestroy),
            Kind::Layout => ("hipblasLtMatrixLayoutDestroy", lt::hipblasLtMatrixLayoutDestroy),
            Kind::Pref => ("hipblasLtMatmulPreferenceDestroy", lt::hipblasLtMatmulPreferenceDestroy),
        };
        // SAFETY: only the object's value crosses; skinnylt must not dereference it.
        let s = self.call(name, || unsafe { f(obj as *mut c_void) });
        self.destroyed(kind, obj);
        self.expect(name, s, if live { STATUS_SUCCESS } else { STATUS_INVALID_VALUE });
    }

    fn set_attribute(&mut self, u: &mut Unstructured) -> Result<()> {
        let kind = *u.choose(&[Kind::Desc, Kind::Desc, Kind::Layout, Kind::Layout, Kind::Pref])?;
        let obj = self.pick(u, kind)?;
        let a = attr(u, kind)?;
        let buf = InBuf::draw(u)?;
        self.set(kind, obj, a, &buf);
        Ok(())
    }

    /// SetAttribute; standalone, a success is read back with GetAttribute.
    fn set(&mut self, kind: Kind, obj: usize, a: i32, buf: &InBuf) -> Status {
        let (p, ptr, size) = (obj as *mut c_void, buf.ptr(), buf.size);
        let (name, f): (&str, unsafe extern "C" fn(*mut c_void, i32, *const c_void, usize) -> Status) = match kind {
            Kind::Desc => ("hipblasLtMatmulDescSetAttribute", lt::hipblasLtMatmulDescSetAttribute),
            Kind::Layout | Kind::Handle => ("hipblasLtMatrixLayoutSetAttribute", lt::hipblasLtMatrixLayoutSetAttribute),
            Kind::Pref => ("hipblasLtMatmulPreferenceSetAttribute", lt::hipblasLtMatmulPreferenceSetAttribute),
        };
        // SAFETY: `ptr` is NULL or holds `size` bytes (`InBuf`); the object is a value.
        let s = self.call(name, || unsafe { f(p, a, ptr, size) });
        let kind = if kind == Kind::Handle { Kind::Layout } else { kind };
        let live = self.live_at(kind, obj);
        if self.standalone() {
            assert!(s == STATUS_SUCCESS || s == STATUS_INVALID_VALUE, "{name}: {}", status_name(s));
            if s == STATUS_SUCCESS {
                assert!(live.is_some(), "{name} succeeded on {obj:#x}, no live {kind:?}");
                assert!(buf.bytes.is_some() && size > 0, "{name} succeeded with NULL or size 0");
            }
        }
        // What skinnylt now shadows as POINTER_MODE: the first min(4, size) bytes
        // (none for NULL), when the call succeeded.
        if s == STATUS_SUCCESS
            && kind == Kind::Desc
            && a == skinnylt::abi::desc_attr::POINTER_MODE
            && let Some(i) = live
        {
            let mut v = [0u8; 4];
            if let Some(b) = &buf.bytes {
                let n = size.min(4);
                v[..n].copy_from_slice(&b[..n]);
            }
            self.objs[i].pointer_mode = u32::from_le_bytes(v);
        }
        if s == STATUS_SUCCESS && self.standalone() {
            self.read_back(kind, obj, a, buf);
        }
        s
    }

    /// Standalone: GetAttribute returns the field as set: the bytes SetAttribute
    /// was given, zero-extended to the field's size.
    fn read_back(&self, kind: Kind, obj: usize, a: i32, set: &InBuf) {
        let mut got = [0xEEu8; 8];
        let mut written = 0usize;
        let (p, ptr) = (obj as *mut c_void, got.as_mut_ptr().cast::<c_void>());
        let f = get_fn(kind).1;
        // SAFETY: `got` holds the 8 bytes claimed, `written` is writable.
        let s = unsafe { f(p, a, ptr, 8, &mut written) };
        assert_eq!(s, STATUS_SUCCESS, "{kind:?} attribute {a}: set, then GetAttribute failed ({})", status_name(s));
        assert!(written == 4 || written == 8, "{kind:?} attribute {a}: GetAttribute wrote {written} bytes");
        let bytes = set.bytes.as_deref().unwrap_or(&[]);
        let want: Vec<u8> = (0..written).map(|j| if j < set.size { bytes[j] } else { 0 }).collect();
        assert_eq!(&got[..written], &want[..], "{kind:?} attribute {a}: read back differs from what was set");
        assert!(got[written..].iter().all(|&b| b == 0xEE), "{kind:?} attribute {a}: GetAttribute wrote past its {written} bytes");
    }

    fn get_attribute(&mut self, u: &mut Unstructured) -> Result<()> {
        let kind = *u.choose(&[Kind::Desc, Kind::Layout, Kind::Pref])?;
        let obj = self.pick(u, kind)?;
        let a = attr(u, kind)?;
        let mut out = OutBuf::draw(u)?;
        let p = obj as *mut c_void;
        let size = out.size;
        let ptr = out.bytes.as_mut().map_or(std::ptr::null_mut(), |b| b.as_mut_ptr().cast::<c_void>());
        let wp = out.written.as_mut().map_or(std::ptr::null_mut(), |w| w as *mut usize);
        let (name, f) = get_fn(kind);
        // SAFETY: `ptr` is NULL or holds `size` bytes, `wp` is NULL or a writable
        // size (`OutBuf`); the object is a value.
        let s = self.call(name, || unsafe { f(p, a, ptr, size, wp) });
        if self.standalone() {
            assert!(s == STATUS_SUCCESS || s == STATUS_INVALID_VALUE, "{name}: {}", status_name(s));
            if s == STATUS_SUCCESS {
                assert!(self.live_at(kind, obj).is_some(), "{name} succeeded on {obj:#x}, no live {kind:?}");
                let w = out.written.unwrap_or(0);
                assert!(out.written.is_none() || w == 4 || w == 8, "{name}: wrote a size of {w}");
                if let Some(b) = &out.bytes
                    && size > 0
                {
                    assert!(b[w.min(b.len())..].iter().all(|&x| x == 0xEE) || out.written.is_none(), "{name}: wrote past the {w} bytes it reported");
                }
            }
        }
        Ok(())
    }

    fn heuristic(&mut self, u: &mut Unstructured) -> Result<()> {
        let g = if u.ratio(2, 3)? { self.group } else { None };
        let handle = match g { Some(g) if !u.ratio(1, 8)? => g.handle, _ => self.pick(u, Kind::Handle)? };
        let desc = match g { Some(g) if !u.ratio(1, 8)? => g.desc, _ => self.pick(u, Kind::Desc)? };
        let mut l = [0usize; 4];
        for (i, slot) in l.iter_mut().enumerate() {
            *slot = match g {
                Some(g) if !u.ratio(1, 8)? => [g.a, g.b, g.c, g.d][i],
                _ => self.pick(u, Kind::Layout)?,
            };
        }
        let pref = match g { Some(g) if !u.ratio(1, 8)? => g.pref, _ => self.pick(u, Kind::Pref)? };
        let requested: i32 = match u.arbitrary::<u8>()? {
            0..=199 => u.int_in_range(0..=8)?,
            200..=229 => *u.choose(&[-1, i32::MIN, 64, 256, i32::MAX])?,
            _ => u.arbitrary()?,
        };
        // A results array holds what is requested, or is NULL.
        let array = (0..=256).contains(&requested) && !u.ratio(1, 8)?;
        let mut results = vec![HeuristicResult::default(); if array { requested as usize } else { 0 }];
        let rp = if array { results.as_mut_ptr() } else { std::ptr::null_mut() };
        let mut returned: i32 = -12345;
        let ret = if u.ratio(1, 8)? { std::ptr::null_mut() } else { &mut returned as *mut i32 };
        // SAFETY: `rp` is NULL or holds `requested` results; `ret` is NULL or a
        // writable int; the handles are only values.
        let s = self.call("hipblasLtMatmulAlgoGetHeuristic", || unsafe {
            lt::hipblasLtMatmulAlgoGetHeuristic(handle as Handle, desc as MatmulDesc, l[0] as MatrixLayout, l[1] as MatrixLayout, l[2] as MatrixLayout, l[3] as MatrixLayout, pref as MatmulPreference, requested, rp, ret)
        });
        if self.standalone() {
            // Nothing runs without a GPU, so no algorithm is offered.
            assert_ne!(s, STATUS_SUCCESS, "hipblasLtMatmulAlgoGetHeuristic offered an algorithm without a GPU");
            if handle == 0 {
                assert_eq!(s, STATUS_NOT_INITIALIZED, "hipblasLtMatmulAlgoGetHeuristic with a NULL handle");
            }
            if s == STATUS_NOT_SUPPORTED && !ret.is_null() {
                assert_eq!(returned, 0, "hipblasLtMatmulAlgoGetHeuristic: NOT_SUPPORTED with {returned} results");
            }
        } else if !ret.is_null() {
            // The stub answers min(requested, 3) results into a non-NULL array.
            let want = if array { requested.clamp(0, 3) } else { 0 };
            assert_eq!(returned, want, "hipblasLtMatmulAlgoGetHeuristic: the real library's count did not come back");
        }
        if s == STATUS_SUCCESS && array && returned > 0 {
            self.algo = Some(results[0].algo);
        }
        Ok(())
    }

    fn matmul(&mut self, u: &mut Unstructured) -> Result<()> {
        let g = if u.ratio(3, 4)? { self.group } else { None };
        let handle = match g { Some(g) if !u.ratio(1, 16)? => g.handle, _ => self.pick(u, Kind::Handle)? };
        let desc = match g { Some(g) if !u.ratio(1, 16)? => g.desc, _ => self.pick(u, Kind::Desc)? };
        let mut l = [0usize; 4];
        for (i, slot) in l.iter_mut().enumerate() {
            *slot = match g {
                Some(g) if !u.ratio(1, 16)? => [g.a, g.b, g.c, g.d][i],
                _ => self.pick(u, Kind::Layout)?,
            };
        }
        let mut ptrs = [0u64; 4];
        for p in &mut ptrs {
            *p = device_ptr(u)?;
        }
        let read = self.scalars_read(desc);
        let scalar_arg = |u: &mut Unstructured, default: f32| -> Result<ScalarArg> {
            Ok(match u.arbitrary::<u8>()? {
                0..=229 => ScalarArg::Host(Box::new(default)),
                230..=239 => ScalarArg::Host(Box::new(scalar(u)?)),
                240..=247 => ScalarArg::Null,
                // Garbage only where skinnylt has no business reading it.
                _ if !read => ScalarArg::Device(device_ptr(u)?),
                _ => ScalarArg::Host(Box::new(scalar(u)?)),
            })
        };
        let alpha = scalar_arg(u, 1.0)?;
        let beta = scalar_arg(u, 0.0)?;
        let algo_value = match u.arbitrary::<u8>()? {
            0..=179 => None,
            180..=219 => self.algo,
            _ => {
                let mut a = MatmulAlgo::default();
                u.fill_buffer(&mut a.data)?;
                a.max_workspace_bytes = u.arbitrary()?;
                Some(a)
            }
        };
        let (workspace, workspace_size): (u64, usize) = match u.arbitrary::<u8>()? {
            0..=179 => (0, 0),
            180..=219 => (device_ptr(u)?, *u.choose(&[0usize, 256, 1 << 20, 32 << 20])?),
            220..=235 => (0, u.arbitrary()?),
            _ => (u.arbitrary()?, u.arbitrary()?),
        };
        let stream: u64 = if u.ratio(3, 4)? { 0 } else { u.arbitrary()? };
        let algo_ptr = algo_value.as_ref().map_or(std::ptr::null(), |a| a as *const MatmulAlgo);
        let args: [u64; 16] = [
            handle as u64,
            desc as u64,
            alpha.ptr() as u64,
            ptrs[0],
            l[0] as u64,
            ptrs[1],
            l[1] as u64,
            beta.ptr() as u64,
            ptrs[2],
            l[2] as u64,
            ptrs[3],
            l[3] as u64,
            algo_ptr as u64,
            workspace,
            workspace_size as u64,
            stream,
        ];
        let before = counters();
        let stub_before = self.stub().map(Stub::call_count);
        // SAFETY: alpha and beta are NULL or host floats wherever skinnylt may read
        // them (`scalars_read`); `algo_ptr` is NULL or a live algo; every other
        // pointer is a device pointer, a number skinnylt must not dereference.
        let s = self.call("hipblasLtMatmul", || unsafe {
            lt::hipblasLtMatmul(
                handle as Handle,
                desc as MatmulDesc,
                alpha.ptr(),
                ptrs[0] as usize as *const c_void,
                l[0] as MatrixLayout,
                ptrs[1] as usize as *const c_void,
                l[1] as MatrixLayout,
                beta.ptr(),
                ptrs[2] as usize as *const c_void,
                l[2] as MatrixLayout,
                ptrs[3] as usize as *mut c_void,
                l[3] as MatrixLayout,
                algo_ptr,
                workspace as usize as *mut c_void,
                workspace_size,
                stream as usize as Stream,
            )
        });
        let after = counters();
        // Every call is counted once: run by skinnylt or forwarded (refused).
        let (di, df) = (after.intercepted.wrapping_sub(before.intercepted), after.forwarded.wrapping_sub(before.forwarded));
        assert_eq!(di + df, 1, "hipblasLtMatmul counted {di} intercepted + {df} forwarded");
        // Without a GPU nothing runs on skinnylt's kernels.
        assert_eq!(di, 0, "hipblasLtMatmul was intercepted without a GPU");
        match (self.stub(), stub_before) {
            (Some(stub), Some(i)) => {
                let call = stub.call_at(i).expect("hipblasLtMatmul was not forwarded");
                assert_eq!(call.args, args, "hipblasLtMatmul reached the real library with other arguments");
            }
            _ => {
                assert_ne!(s, STATUS_SUCCESS, "hipblasLtMatmul succeeded without a GPU");
                if handle == 0 {
                    assert_eq!(s, STATUS_NOT_INITIALIZED, "hipblasLtMatmul with a NULL handle");
                }
            }
        }
        Ok(())
    }

    /// A coherent decode GEMM, as PyTorch sets one up (`F.linear`, or the gemv
    /// form), with the fuzzer's sizes, so that matmuls reach the deep end of
    /// routing; later ops then change it.
    fn setup(&mut self, u: &mut Unstructured) -> Result<()> {
        let gemv = u.ratio(1, 8)?;
        let t = if u.ratio(7, 8)? { *u.choose(&[R_16BF, R_16F])? } else { dtype(u)? };
        let m = if gemv { 1 } else { tokens(u)? };
        let (n, k) = if u.ratio(3, 4)? { (8 * u.int_in_range(1..=4096u64)?, 8 * u.int_in_range(1..=4096u64)?) } else { (dim(u)?, dim(u)?) };
        let bias = !gemv && u.ratio(1, 3)?;
        let handle = match self.objs.iter().rev().find(|o| o.live && o.kind == Kind::Handle) {
            Some(o) if u.ratio(1, 2)? => Some(o.addr),
            _ => self.create_handle(false),
        };
        let desc = self.desc(false, COMPUTE_32F, R_32F);
        let set4 = |v: i32| InBuf { bytes: Some(v.to_le_bytes().to_vec()), size: 4 };
        let set8 = |v: u64| InBuf { bytes: Some(v.to_le_bytes().to_vec()), size: 8 };
        if let Some(d) = desc {
            use skinnylt::abi::desc_attr as da;
            self.set(Kind::Desc, d, da::TRANSA, &set4(if gemv { OP_N } else { OP_T }));
            if u.ratio(1, 2)? {
                self.set(Kind::Desc, d, da::TRANSB, &set4(OP_N));
            }
            if bias {
                self.set(Kind::Desc, d, da::EPILOGUE, &set4(EPILOGUE_BIAS as i32));
                self.set(Kind::Desc, d, da::BIAS_POINTER, &set8(device_ptr(u)?));
                if u.ratio(1, 2)? {
                    self.set(Kind::Desc, d, da::BIAS_DATA_TYPE, &set4(t));
                }
            }
        }
        // Column-major, as hipBLASLt sees F.linear: A = W stored k x n, B = X stored
        // k x m, D = Y stored n x m; gemv: A = x (1 x k), B = W (k x n), D = y (1 x n).
        let (a, b, d) = if gemv {
            (self.layout(false, t, 1, k, 1), self.layout(false, t, k, n, k as i64), self.layout(false, t, 1, n, 1))
        } else {
            (self.layout(false, t, k, n, k as i64), self.layout(false, t, k, m, k as i64), self.layout(false, t, n, m, n as i64))
        };
        let c = if u.ratio(3, 4)? { d } else if gemv { self.layout(false, t, 1, n, 1) } else { self.layout(false, t, n, m, n as i64) };
        let pref = self.pref(false);
        if let Some(p) = pref {
            self.set(Kind::Pref, p, skinnylt::abi::pref_attr::MAX_WORKSPACE_BYTES, &set8(32 << 20));
        }
        let z = |o: Option<usize>| o.unwrap_or(0);
        self.group = Some(Group { handle: z(handle), desc: z(desc), a: z(a), b: z(b), c: z(c), d: z(d), pref: z(pref) });
        Ok(())
    }

    /// Version, revision and arch name.
    fn info(&mut self, u: &mut Unstructured) -> Result<()> {
        let h = self.pick(u, Kind::Handle)?;
        let null = u.ratio(1, 8)?;
        match u.int_in_range(0..=2u8)? {
            0 => {
                let mut v = -1i32;
                let p = if null { std::ptr::null_mut() } else { &mut v as *mut i32 };
                // SAFETY: `p` is NULL or a writable int; the handle is a value.
                let s = self.call("hipblasLtGetVersion", || unsafe { lt::hipblasLtGetVersion(h as Handle, p) });
                if self.standalone() {
                    // A destroyed or made-up handle is refused, as Matmul refuses it.
                    let live = self.live_at(Kind::Handle, h).is_some();
                    let want = if h == 0 { STATUS_NOT_INITIALIZED } else if null || !live { STATUS_INVALID_VALUE } else { STATUS_SUCCESS };
                    self.expect("hipblasLtGetVersion", s, want);
                    assert!(s != STATUS_SUCCESS || v > 0, "hipblasLtGetVersion: version {v}");
                }
            }
            1 => {
                // hipBLASLt writes a short tag with no size: 256 bytes hold any.
                let mut rev = [0x55u8; 256];
                let p = if null { std::ptr::null_mut() } else { rev.as_mut_ptr().cast::<c_char>() };
                // SAFETY: `p` is NULL or 256 writable bytes; the handle is a value.
                let s = self.call("hipblasLtGetGitRevision", || unsafe { lt::hipblasLtGetGitRevision(h as Handle, p) });
                if s == STATUS_SUCCESS && !null {
                    assert!(rev.contains(&0), "hipblasLtGetGitRevision: no NUL terminator");
                }
                if self.standalone() {
                    let live = self.live_at(Kind::Handle, h).is_some();
                    let want = if h == 0 { STATUS_NOT_INITIALIZED } else if null || !live { STATUS_INVALID_VALUE } else { STATUS_SUCCESS };
                    self.expect("hipblasLtGetGitRevision", s, want);
                }
            }
            _ => {
                let mut name: *mut c_char = std::ptr::null_mut();
                let p = if null { std::ptr::null_mut() } else { &mut name as *mut *mut c_char };
                // SAFETY: `p` is NULL or a writable string pointer.
                let s = self.call("hipblasLtGetArchName", || unsafe { lt::hipblasLtGetArchName(p) });
                // Freed whatever the status: a real library writes the string only
                // on success, the stub whenever it is given somewhere to write it.
                if !null && !name.is_null() {
                    // SAFETY: hipBLASLt's contract: a NUL-terminated string from
                    // malloc, which the caller frees.
                    unsafe {
                        let _ = CStr::from_ptr(name).to_bytes().len();
                        libc::free(name.cast());
                    }
                }
                self.expect("hipblasLtGetArchName", s, if null { STATUS_INVALID_VALUE } else { STATUS_SUCCESS });
            }
        }
        Ok(())
    }

    /// skinnylt's own API (`include/skinnylt.h`).
    fn own_api(&mut self, u: &mut Unstructured) -> Result<()> {
        match u.int_in_range(0..=7u8)? {
            0 => {
                let on = *u.choose(&[0, 1, -1, 2, i32::MIN])?;
                sk::skinnylt_set_enabled(on);
                self.enabled = on != 0;
            }
            1 => assert_eq!(sk::skinnylt_is_enabled(), self.enabled as i32, "skinnylt_is_enabled"),
            2 => {
                sk::skinnylt_reset_counters();
                let c = counters();
                assert_eq!((c.intercepted, c.forwarded), (0, 0), "counters after skinnylt_reset_counters");
            }
            3 => {
                // SAFETY: NULL is allowed.
                assert_eq!(unsafe { sk::skinnylt_get_counters(std::ptr::null_mut()) }, -1, "skinnylt_get_counters(NULL)");
                // SAFETY: NULL is allowed.
                assert_eq!(unsafe { sk::skinnylt_forwarded_for(std::ptr::null()) }, -1, "skinnylt_forwarded_for(NULL)");
            }
            4 => {
                let len = u.int_in_range(0..=40usize)?;
                let bytes: Vec<u8> = u.bytes(len)?.iter().map(|&b| if b == 0 { b'-' } else { b }).collect();
                let name = CString::new(bytes).unwrap();
                // SAFETY: a NUL-terminated string.
                let n = unsafe { sk::skinnylt_forwarded_for(name.as_ptr()) };
                let known = skinnylt::route::Reason::ALL.iter().any(|r| r.name().as_bytes() == name.as_bytes());
                assert!(if known { n >= 0 } else { n == -1 }, "skinnylt_forwarded_for({name:?}) = {n}");
            }
            5 => {
                let real = sk::skinnylt_has_real_library();
                assert_eq!(real, self.stub().is_some() as i32, "skinnylt_has_real_library");
            }
            6 => {
                let dev = *u.choose(&[0, 1, -1, i32::MAX, i32::MIN])?;
                assert_eq!(sk::skinnylt_preload(dev), -1, "skinnylt_preload({dev}) without a GPU");
            }
            _ => {
                // SAFETY: documented never NULL, NUL-terminated and static.
                let v = unsafe { CStr::from_ptr(sk::skinnylt_version()) };
                assert!(!v.to_bytes().is_empty(), "skinnylt_version is empty");
            }
        }
        Ok(())
    }

    /// The functions skinnylt only forwards (matrix transforms, the develop-only
    /// and ext-op ones): NOT_SUPPORTED standalone, passed through interposed.
    fn other(&mut self, u: &mut Unstructured) -> Result<()> {
        let h = self.pick(u, Kind::Handle)? as Handle;
        let obj = if u.ratio(1, 2)? { self.pick(u, Kind::Layout)? } else { 0x5100 + 0x10 * u.int_in_range(0..=64usize)? } as *mut c_void;
        let (p1, p2, p3) = (device_ptr(u)? as usize as *mut c_void, device_ptr(u)? as usize as *mut c_void, device_ptr(u)? as usize as *mut c_void);
        let (i1, x1, x2): (i32, u32, u32) = (u.arbitrary()?, u.arbitrary()?, u.arbitrary()?);
        let null = u.ratio(1, 4)?;
        let mut out_ptr: *mut c_void = std::ptr::null_mut();
        let mut out_i32 = 0i32;
        let mut out_u32 = 0u32;
        let mut written = 0usize;
        let mut buf = [0u8; 8];
        let one = 1.0f32;
        let alpha = (&one as *const f32).cast::<c_void>();
        let outp = if null { std::ptr::null_mut() } else { &mut out_ptr as *mut *mut c_void };
        let oi = if null { std::ptr::null_mut() } else { &mut out_i32 as *mut i32 };
        let ou = if null { std::ptr::null_mut() } else { &mut out_u32 as *mut u32 };
        let (bp, bsize) = if null { (std::ptr::null_mut(), 0) } else { (buf.as_mut_ptr().cast::<c_void>(), 8) };
        let stream = p3 as Stream;
        // One forwarded function, with its name as the status check reports it.
        macro_rules! fwd {
            ($d:expr, $f:ident($($arg:expr),*)) => {
                (stringify!($f), $d.call(stringify!($f), || {
                    // SAFETY: out-parameters are NULL or writable locals of their
                    // type, `bp` holds `bsize` bytes, alpha and beta are host floats;
                    // the rest are handles and device pointers, values skinnylt must
                    // pass through without dereferencing.
                    unsafe { lt::$f($($arg),*) }
                }))
            };
        }
        let (name, s) = match u.int_in_range(0..=20u8)? {
            0 => fwd!(self, hipblasLtMatrixTransformDescCreate(outp, i1)),
            1 => fwd!(self, hipblasLtMatrixTransformDescDestroy(obj)),
            2 => fwd!(self, hipblasLtMatrixTransformDescSetAttribute(obj, i1, bp, bsize)),
            3 => fwd!(self, hipblasLtMatrixTransformDescGetAttribute(obj, i1, bp, bsize, &mut written)),
            4 => fwd!(self, hipblasLtMatrixTransform(h, obj, alpha, p1, obj, alpha, p2, obj, p3, obj, stream)),
            5 => fwd!(self, hipblasLtSetSmCountTarget(h, i1)),
            6 => fwd!(self, hipblasLtGetSmCountTarget(h, oi)),
            7 => fwd!(self, hipblasLtSetUniformSummationOrder(h, i1)),
            8 => fwd!(self, hipblasLtGetUniformSummationOrder(h, oi)),
            9 => fwd!(self, hipblasLtCheckNumericsDrain(h, ou)),
            10 => fwd!(self, hipblasLtFusedEpilogueCreate(outp)),
            11 => fwd!(self, hipblasLtFusedEpilogueAdd(obj, i1)),
            12 => fwd!(self, hipblasLtFusedEpilogueSetAttribute(obj, i1, bp, bsize)),
            13 => fwd!(self, hipblasLtFusedEpilogueDestroy(obj)),
            14 => fwd!(self, hipblasLtFusedEpilogueRMSNormDescriptorCreate(outp)),
            15 => fwd!(self, hipblasLtFusedEpilogueRMSNormDescriptorSetBuffer(obj, p1, x1 as usize)),
            16 => fwd!(self, hipblasLtFusedEpilogueRMSNormDescriptorDestroy(obj)),
            17 => fwd!(self, hipblasltExtSoftmax(i1, x1, x2, 1, p1, p2, stream)),
            18 => fwd!(self, hipblasltExtLayerNorm(i1, p1, p2, p3, p1, x1, x2, 1e-5, p2, p3, stream)),
            19 => fwd!(self, hipblasltExtAMax(i1, R_32F, p1, p2, x1, x2, stream)),
            _ => fwd!(self, hipblasltExtAMaxWithScale(i1, R_32F, R_32F, p1, p2, p3, p1, x1, x2, stream)),
        };
        self.expect(name, s, STATUS_NOT_SUPPORTED);
        Ok(())
    }

    /// Destroys every live object (with the stub answering success again), turns
    /// skinnylt back on, and checks the counters add up.
    fn cleanup(&mut self) {
        if let Some(stub) = self.stub() {
            stub.reset();
        }
        // Descriptors first, handles last, as applications do.
        for kind in [Kind::Layout, Kind::Desc, Kind::Pref, Kind::Handle] {
            let live: Vec<usize> = self.objs.iter().filter(|o| o.live && o.kind == kind).map(|o| o.addr).collect();
            for addr in live {
                if self.live_at(kind, addr).is_some() {
                    self.destroy(kind, addr);
                }
            }
        }
        self.objs.clear();
        self.group = None;
        self.algo = None;
        if !self.enabled {
            sk::skinnylt_set_enabled(1);
            self.enabled = true;
        }
        // The forwards by reason add up to the total: 28 counter snapshots, so
        // checked every 16th program (the per-call counting is checked always).
        static PROGRAMS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        if PROGRAMS.fetch_add(1, std::sync::atomic::Ordering::Relaxed).is_multiple_of(16) {
            let c = counters();
            let by_reason: i64 = skinnylt::route::Reason::ALL.iter().map(|r| forwarded_for(r.name())).sum();
            assert_eq!(by_reason, c.forwarded as i64, "forwards by reason add up to {by_reason}, the counters say {}", c.forwarded);
            assert_eq!(forwarded_for("no-such-reason"), -1, "skinnylt_forwarded_for of an unknown reason");
        }
    }
}
