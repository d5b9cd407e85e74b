//! `hipblasLtMatmulAlgoGetHeuristic` and `hipblasLtMatmul`: the interception point.

use std::ffi::c_void;

use super::{Cx, raw, real_call};
use crate::abi::*;
use crate::engine;
use crate::gpu::Stream;
use crate::memo;
use crate::route::{self, Call, Pointers, Policy, Problem, Reason, Scalars};
use crate::shadow::{DescState, Tables};

/// `alpha` or `beta` as the caller passed it: a host float in host pointer mode, a
/// device pointer in pointer mode DEVICE (the descriptor decides which; only the
/// host one is ever read here).
#[derive(Clone, Copy, Debug)]
pub struct Scalar(pub *const c_void);

impl Scalar {
    /// The host float behind the pointer; `None` when it is null.
    ///
    /// # Safety
    /// The pointer must be null or point to a readable f32 (the hipBLASLt contract
    /// in host pointer mode with an fp32 scale type).
    unsafe fn host_f32(self) -> Option<f32> {
        // SAFETY: the caller's contract above.
        (!self.0.is_null()).then(|| unsafe { std::ptr::read_unaligned(self.0 as *const f32) })
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
    /// The call, unchanged, to the real library; skinnylt's own algo, which it
    /// cannot read, becomes NULL (its own heuristic's choice).
    fn forward(&self, lib: &crate::real::RealLib) -> Status {
        let algo = self.algo.filter(|a| !a.is_own()).map_or(std::ptr::null(), |a| a as *const MatmulAlgo);
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
        engine::Error::TransferForward => Reason::TransferForward,
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
    // A real library's algo (TunableOp, an override file, an explicit index): the
    // caller chose that library's kernel, so the call goes there untouched.
    if m.algo.is_some_and(|a| !a.is_own()) && !p.config.any_algo && p.enabled() && cx.real().is_some() {
        return forward(Reason::CallerAlgo);
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
    if let (Some(log), Ok(problem), Ok(())) = (&p.bench_log, &routed, outcome) {
        bench_line(cx, log, m, problem);
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

/// Writes hipBLASLt's bench line for a call skinnylt ran (`HIPBLASLT_LOG_MASK`).
#[cold]
fn bench_line(cx: Cx, log: &crate::benchlog::BenchLog, m: &MatmulArgs<'_>, problem: &Problem) {
    let line = {
        let t = cx.p.shadow.read();
        let lay = |p: MatrixLayout| t.layouts.get(&(p as usize)).map(|e| &e.1);
        let (Some((_, desc)), Some(a), Some(b), Some(c), Some(d)) = (t.descs.get(&(m.desc as usize)), lay(m.a_desc), lay(m.b_desc), lay(m.c_desc), lay(m.d_desc)) else { return };
        // Device scalars are never read on the host: the line shows 1 and 0 for them.
        crate::benchlog::line(&crate::benchlog::Call { desc, a, b, c, d, alpha: problem.alpha, beta: problem.beta, algo: crate::benchlog::Algo::Heuristic })
    };
    log.write(&line, cx.real().is_none());
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
    let scalars = if m.host_f32 {
        // SAFETY: `m.host_f32` says the descriptor is in host pointer mode with an
        // fp32 scale type, where hipBLASLt's contract makes alpha and beta host floats.
        unsafe { Scalars::Host(alpha.host_f32(), beta.host_f32()) }
    } else {
        // Device scalars (or a mode routing forwards): passed on, never read here.
        Scalars::Device(alpha.0 as u64, beta.0 as u64)
    };
    route::finish(&m.template, ptrs, scalars)
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

/// The heuristic as hipBLASLt's clients see it: skinnylt's own algo first when
/// skinnylt would run the problem, then (interposed) the real library's results,
/// untouched, filling the rest of the `requested`; otherwise the real library's
/// answer alone. Standalone, one algo for problems skinnylt runs, none otherwise.
pub fn algo_get_heuristic(cx: Cx, q: &HeuristicArgs, requested: i32, results: Option<&mut [HeuristicResult]>, returned: Option<&mut i32>) -> Status {
    let own = own_result(cx, q);
    if let Some(lib) = cx.real() {
        let HeuristicArgs { handle, desc, a, b, c, d, pref } = *q;
        return match (own, results, returned) {
            (Ok(own), Some(results), Some(returned)) if !results.is_empty() => own_first(own, results, returned, |rest, n| {
                real_call!(lib, hipblasLtMatmulAlgoGetHeuristic(handle, desc, a, b, c, d, pref, rest.len() as i32, rest.as_mut_ptr(), raw(n)))
            }),
            // Nothing of skinnylt's to add: the caller's call exactly.
            (_, results, returned) => {
                let results = results.map_or(std::ptr::null_mut(), |r| r.as_mut_ptr());
                real_call!(lib, hipblasLtMatmulAlgoGetHeuristic(handle, desc, a, b, c, d, pref, requested, results, raw(returned)))
            }
        };
    }
    if q.handle.is_null() {
        return STATUS_NOT_INITIALIZED;
    }
    let (Some(results), Some(returned)) = (results.filter(|r| !r.is_empty()), returned) else { return STATUS_INVALID_VALUE };
    match own {
        Ok(own) => {
            results[0] = own;
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

/// skinnylt's own result for a heuristic query, when a matmul of this problem
/// would run on skinnylt (with aligned pointers; a matmul checks its own).
fn own_result(cx: Cx, q: &HeuristicArgs) -> Result<HeuristicResult, Reason> {
    if q.handle.is_null() || q.desc.is_null() || q.pref.is_null() {
        return Err(Reason::NullArgument);
    }
    let problem = {
        let t = cx.p.shadow.read();
        if !t.prefs.contains_key(&(q.pref as usize)) {
            return Err(Reason::UnknownDescriptor);
        }
        let desc = t.descs.get(&(q.desc as usize)).map(|e| heuristic_desc(&e.1)).ok_or(Reason::UnknownDescriptor)?;
        let lay = |p: MatrixLayout| t.layouts.get(&(p as usize)).map(|e| &e.1);
        // Pointers are not known yet: assume aligned ones, and C apart from D when
        // it has a layout of its own (else D itself).
        let c = if q.c == q.d { 0x3000 } else { 1 << 48 };
        let call = Call {
            desc: Some(&desc),
            a: lay(q.a),
            b: lay(q.b),
            c: lay(q.c),
            d: lay(q.d),
            ptrs: Pointers { a: 0x1000, b: 0x2000, c, d: 0x3000 },
            scalars: if desc.pointer_mode() == POINTER_MODE_HOST { Scalars::Host(Some(1.0), Some(0.0)) } else { Scalars::Device(0x4000, 0x4004) },
        };
        route::route(&call, &cx.p.policy(cx.mode))?
    };
    // With a real library the plan is the one a matmul makes, forward included.
    let plan = cx.p.engines.plan_for(q.handle as usize, &problem, cx.real().is_some()).map_err(|e| reason_of(&e))?;
    // The handle's own buffer always holds the partials: no caller workspace needed.
    Ok(HeuristicResult { algo: MatmulAlgo::own(plan.kernel as u32), workspace_size: 0, state: STATUS_SUCCESS, waves_count: 1.0, reserved: [0; 4] })
}

/// `own` in `results[0]`, then what `real` writes into the rest (the real
/// library asked for one result fewer). The real library's failure leaves
/// skinnylt's algo as the one result: the problem is still served.
fn own_first(
    own: HeuristicResult,
    results: &mut [HeuristicResult],
    returned: &mut i32,
    real: impl FnOnce(&mut [HeuristicResult], Option<&mut i32>) -> Status,
) -> Status {
    results[0] = own;
    let mut theirs = 0;
    if results.len() > 1 {
        let status = real(&mut results[1..], Some(&mut theirs));
        if status != STATUS_SUCCESS {
            crate::log_debug!("heuristic: the real library answered {}; skinnylt's algo alone", status_name(status));
            theirs = 0;
        }
    }
    *returned = 1 + theirs.clamp(0, results.len() as i32 - 1);
    STATUS_SUCCESS
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

#[cfg(test)]
mod tests {
    use super::*;

    fn result(tag: u8) -> HeuristicResult {
        let mut r = HeuristicResult::default();
        r.algo.data = [tag; 16];
        r
    }

    /// skinnylt's algo comes first; the real library fills the rest of what was
    /// requested, untouched, and its failure leaves skinnylt's alone.
    #[test]
    fn own_algo_first_then_the_real_librarys() {
        let own = HeuristicResult { algo: MatmulAlgo::own(3), ..result(0) };
        for (requested, real_gives, real_status, want) in [(1, 0, STATUS_SUCCESS, 1), (4, 3, STATUS_SUCCESS, 4), (4, 2, STATUS_SUCCESS, 3), (3, 0, STATUS_NOT_SUPPORTED, 1), (2, 9, STATUS_SUCCESS, 2)] {
            let mut results = vec![result(0xEE); requested];
            let mut returned = -7;
            let mut asked = None;
            let status = own_first(own, &mut results, &mut returned, |rest, n| {
                asked = Some(rest.len());
                for (i, r) in rest.iter_mut().enumerate().take(real_gives) {
                    *r = result(0xA0 + i as u8);
                }
                *n.unwrap() = real_gives as i32;
                real_status
            });
            assert_eq!((status, returned), (STATUS_SUCCESS, want), "requested {requested}");
            assert!(results[0].algo.is_own());
            assert_eq!(asked, (requested > 1).then_some(requested - 1), "the real library is asked for the rest");
            for (i, r) in results.iter().enumerate().skip(1).take(want as usize - 1) {
                assert_eq!(r.algo.data[0], 0xA0 + i as u8 - 1, "result {i} is the real library's, untouched");
            }
        }
    }

    /// The real library's algos are never taken for skinnylt's: their first four
    /// bytes are a non-negative solution index.
    #[test]
    fn own_algos_are_recognised_and_real_ones_are_not() {
        assert!(MatmulAlgo::own(0).is_own() && MatmulAlgo::own(u32::MAX).is_own());
        for index in [0i32, 1, 77, i32::MAX] {
            let mut a = MatmulAlgo::own(5);
            a.data[0..4].copy_from_slice(&index.to_le_bytes());
            assert!(!a.is_own(), "index {index}");
        }
        let mut a = MatmulAlgo::own(5);
        a.data[5] ^= 1;
        assert!(!a.is_own());
        assert!(!MatmulAlgo::default().is_own());
    }
}
