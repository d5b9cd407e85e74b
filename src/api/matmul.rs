//! `hipblasLtMatmulAlgoGetHeuristic` and `hipblasLtMatmul`: the interception point.

use std::ffi::c_void;

use super::{Cx, raw, real_call};
use crate::abi::*;
use crate::engine;
use crate::gpu::Stream;
use crate::memo;
use crate::route::{self, Call, Pointers, Policy, Problem, Reason};
use crate::shadow::{DescState, Tables};

/// `alpha` or `beta` as the caller passed it: a host float in host pointer mode, a
/// device pointer otherwise (the descriptor decides which; routing forwards the
/// device case and reads only the host one).
#[derive(Clone, Copy, Debug)]
pub struct Scalar(pub *const c_void);

impl Scalar {
    /// The host float behind the pointer, if it is one.
    ///
    /// # Safety
    /// When `host_f32`, the pointer must be null or point to a readable f32 (the
    /// hipBLASLt contract in host pointer mode with an fp32 scale type).
    unsafe fn host_f32(self, host_f32: bool) -> Option<f32> {
        // SAFETY: the caller's contract above.
        (host_f32 && !self.0.is_null()).then(|| unsafe { std::ptr::read_unaligned(self.0 as *const f32) })
    }
}

/// The arguments of one `hipblasLtMatmul`: caller buffers as references, device
/// pointers as numbers, descriptors and the stream as the caller's handles.
pub struct MatmulArgs<'a> {
    pub handle: Handle,
    pub desc: MatmulDesc,
    pub alpha: Scalar,
    pub a: u64,
    pub a_desc: MatrixLayout,
    pub b: u64,
    pub b_desc: MatrixLayout,
    pub beta: Scalar,
    pub c: u64,
    pub c_desc: MatrixLayout,
    pub d: u64,
    pub d_desc: MatrixLayout,
    pub algo: Option<&'a MatmulAlgo>,
    pub workspace: u64,
    pub workspace_size: usize,
    pub stream: Stream,
}

impl MatmulArgs<'_> {
    /// The call, unchanged, to the real library.
    fn forward(&self, lib: &crate::real::RealLib) -> Status {
        let algo = self.algo.map_or(std::ptr::null(), |a| a as *const MatmulAlgo);
        real_call!(
            lib,
            hipblasLtMatmul(
                self.handle,
                self.desc,
                self.alpha.0,
                self.a as *const c_void,
                self.a_desc,
                self.b as *const c_void,
                self.b_desc,
                self.beta.0,
                self.c as *const c_void,
                self.c_desc,
                self.d as *mut c_void,
                self.d_desc,
                algo,
                self.workspace as *mut c_void,
                self.workspace_size,
                self.stream.0
            )
        )
    }

    fn key(&self) -> memo::Key {
        memo::Key { desc: self.desc as usize, a: self.a_desc as usize, b: self.b_desc as usize, c: self.c_desc as usize, d: self.d_desc as usize }
    }
}

/// What a forward reason becomes in standalone mode, where there is nothing to
/// forward to.
fn standalone_status(handle: Handle, reason: Reason) -> Status {
    match reason {
        _ if handle.is_null() => STATUS_NOT_INITIALIZED,
        Reason::NullArgument | Reason::UnknownDescriptor | Reason::UnknownHandle | Reason::Dimensions => STATUS_INVALID_VALUE,
        Reason::LaunchFailed => STATUS_EXECUTION_FAILED,
        _ => STATUS_NOT_SUPPORTED,
    }
}

/// The forward reason an engine error is counted under.
fn reason_of(e: &engine::Error) -> Reason {
    match e {
        engine::Error::NoGpu => Reason::NoGpu,
        engine::Error::UnknownHandle => Reason::UnknownHandle,
        engine::Error::NoKernel => Reason::ArchUnsupported,
        engine::Error::TunedForward => Reason::TunedForward,
        engine::Error::PlannerForward => Reason::PlannerForward,
        engine::Error::TooLarge => Reason::Dimensions,
        engine::Error::Launch(e) => {
            crate::log_error!("{e}");
            Reason::LaunchFailed
        }
    }
}

/// The interception point.
pub fn matmul(cx: Cx, m: &MatmulArgs<'_>) -> Status {
    let p = cx.p;
    let forward = |reason: Reason| -> Status {
        p.stats.count_forwarded(reason);
        crate::log_trace!("matmul forwarded: {}", reason.name());
        match cx.real() {
            Some(lib) => m.forward(lib),
            None => standalone_status(m.handle, reason),
        }
    };
    if crate::real::reentered() {
        return forward(Reason::Reentrant);
    }
    if m.handle.is_null() || m.desc.is_null() || m.alpha.0.is_null() || m.beta.0.is_null() {
        return forward(Reason::NullArgument);
    }
    if m.workspace == 0 && m.workspace_size > 0 {
        return forward(Reason::NullArgument);
    }
    let ptrs = Pointers { a: m.a, b: m.b, c: m.c, d: m.d };
    let routed = decide(cx, m.key(), ptrs, m.alpha, m.beta);
    let can_forward = cx.real().is_some();
    let outcome = routed.and_then(|problem| {
        let call = engine::Call { workspace: m.workspace, workspace_size: m.workspace_size, stream: m.stream };
        p.engines.run(m.handle as usize, &problem, can_forward, &call).map_err(|e| reason_of(&e))
    });
    if let Some(rec) = &p.recorder {
        record(cx, rec, m, routed.as_ref().ok(), outcome);
    }
    match outcome {
        Ok(()) => {
            p.stats.count_intercepted();
            crate::log_trace!("matmul run by skinnylt");
            STATUS_SUCCESS
        }
        Err(r) => forward(r),
    }
}

/// Writes the call to the record (`SKINNYLT_RECORD`) if it is the first of its kind.
#[cold]
fn record(cx: Cx, rec: &crate::record::Recorder, m: &MatmulArgs<'_>, problem: Option<&Problem>, outcome: Result<(), Reason>) {
    let r = {
        let t = cx.p.shadow.read();
        let key = m.key();
        let lay = |p: usize| t.layouts.get(&p).map(|e| &e.1);
        match (t.descs.get(&key.desc), lay(key.a), lay(key.b), lay(key.d)) {
            (Some((_, desc)), Some(a), Some(b), Some(d)) => crate::record::Record::new(desc, a, b, d, problem, outcome),
            _ => return,
        }
    };
    rec.note(r);
}

/// Routing for a matmul call: the state half from this thread's memo while no
/// descriptor has changed since it was made, else from the side table (under its
/// lock, released before the launch or forward); the call half every time.
#[inline]
pub(super) fn decide(cx: Cx, key: memo::Key, ptrs: Pointers, alpha: Scalar, beta: Scalar) -> Result<Problem, Reason> {
    let shadow = &cx.p.shadow;
    let policy = cx.p.policy(cx.mode);
    let m = match memo::get(&key, shadow.generation(), &policy) {
        Some(m) => m,
        None => {
            let t = shadow.read();
            // Under the lock, the generation names exactly the state read here.
            let generation = shadow.generation();
            let m = memo_from(&t, &key, &policy);
            drop(t);
            memo::put(key, generation, policy, m);
            m
        }
    };
    // SAFETY: `m.host_f32` says the descriptor is in host pointer mode with an
    // fp32 scale type, where hipBLASLt's contract makes alpha and beta host floats.
    let (alpha, beta) = unsafe { (alpha.host_f32(m.host_f32), beta.host_f32(m.host_f32)) };
    route::finish(&m.template, ptrs, alpha, beta)
}

/// The state half of routing, from the side table.
pub(super) fn memo_from(t: &Tables, key: &memo::Key, policy: &Policy) -> memo::Memo {
    let desc = t.descs.get(&key.desc).map(|e| &e.1);
    let lay = |p: usize| t.layouts.get(&p).map(|e| &e.1);
    let c = lay(key.c);
    // C and D are usually one layout: one lookup.
    let d = if key.d == key.c { c } else { lay(key.d) };
    memo::Memo {
        template: route::prepare(desc, lay(key.a), lay(key.b), c, d, policy),
        // alpha and beta are host floats only with an fp32 scale type in host pointer
        // mode; otherwise routing forwards, and they are not read at all.
        host_f32: desc.is_some_and(|s| s.pointer_mode() == POINTER_MODE_HOST && s.scale_type == R_32F),
    }
}

/// The descriptor handles of a heuristic query.
pub struct HeuristicArgs {
    pub handle: Handle,
    pub desc: MatmulDesc,
    pub a: MatrixLayout,
    pub b: MatrixLayout,
    pub c: MatrixLayout,
    pub d: MatrixLayout,
    pub pref: MatmulPreference,
}

/// Standalone heuristic: one algo for problems skinnylt runs, none otherwise.
/// Interposed, heuristic results and algo bytes go back untouched: clients persist
/// and compare solution indices.
pub fn algo_get_heuristic(cx: Cx, q: &HeuristicArgs, requested: i32, results: Option<&mut [HeuristicResult]>, returned: Option<&mut i32>) -> Status {
    if let Some(lib) = cx.real() {
        let results = results.map_or(std::ptr::null_mut(), |r| r.as_mut_ptr());
        let HeuristicArgs { handle, desc, a, b, c, d, pref } = *q;
        return real_call!(lib, hipblasLtMatmulAlgoGetHeuristic(handle, desc, a, b, c, d, pref, requested, results, raw(returned)));
    }
    if q.handle.is_null() {
        return STATUS_NOT_INITIALIZED;
    }
    let (Some(results), Some(returned)) = (results.filter(|r| !r.is_empty()), returned) else { return STATUS_INVALID_VALUE };
    if q.desc.is_null() || q.pref.is_null() {
        return STATUS_INVALID_VALUE;
    }
    let problem = {
        let t = cx.p.shadow.read();
        if !t.prefs.contains_key(&(q.pref as usize)) {
            return STATUS_INVALID_VALUE;
        }
        let Some(desc) = t.descs.get(&(q.desc as usize)).map(|e| heuristic_desc(&e.1)) else { return STATUS_INVALID_VALUE };
        let lay = |p: MatrixLayout| t.layouts.get(&(p as usize)).map(|e| &e.1);
        // Pointers are not known yet: assume aligned ones.
        let call = Call {
            desc: Some(&desc),
            a: lay(q.a),
            b: lay(q.b),
            c: lay(q.c),
            d: lay(q.d),
            ptrs: Pointers { a: 0x1000, b: 0x2000, c: 0x3000, d: 0x3000 },
            alpha: Some(1.0),
            beta: Some(0.0),
        };
        route::route(&call, &cx.p.policy(cx.mode))
    };
    let plan = problem.and_then(|p| cx.p.engines.plan_for(q.handle as usize, &p, false).map_err(|e| reason_of(&e)));
    match plan {
        Ok(plan) => {
            let mut algo = MatmulAlgo::default();
            // Bytes 0..4: a negative "solution index" (not a Tensile one).
            algo.data[0..4].copy_from_slice(&(-1i32).to_le_bytes());
            algo.data[4..8].copy_from_slice(&OWN_ALGO_MAGIC);
            algo.data[8..12].copy_from_slice(&(plan.kernel as u32).to_le_bytes());
            // The handle's own buffer always holds the partials: no caller workspace needed.
            results[0] = HeuristicResult { algo, workspace_size: 0, state: STATUS_SUCCESS, waves_count: 1.0, reserved: [0; 4] };
            *returned = 1;
            STATUS_SUCCESS
        }
        Err(r) => {
            crate::log_debug!("heuristic: no skinnylt algo ({})", r.name());
            *returned = 0;
            // The status Matmul gives for the same problem.
            standalone_status(q.handle, r)
        }
    }
}

/// The descriptor as the heuristic searches it: as hipBLASLt does, with a stand-in
/// bias pointer if none is set yet.
fn heuristic_desc(d: &DescState) -> DescState {
    let mut d = d.clone();
    if d.epilogue() == EPILOGUE_BIAS && d.bias_pointer() == 0 {
        d.attrs.insert(crate::abi::desc_attr::BIAS_POINTER, 0x100);
    }
    d
}
