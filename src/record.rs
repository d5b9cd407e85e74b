//! `SKINNYLT_RECORD=path`: each distinct GEMM an application calls, written once as
//! a JSON line — its shape and layout as the descriptors give them, its types and
//! epilogue, and how it was routed (run by skinnylt, or the forward reason). The
//! file is what `skinnylt tune --from` measures and `skinnylt bench --shapes`
//! reads, so a user can tune exactly their model's GEMMs.
//!
//! A profiling mode, off by default: when it is on, every `hipblasLtMatmul` looks
//! its call up in a set under a lock, and the first call of a new kind allocates and
//! writes a line. With it off the hot path pays one branch.

use std::collections::HashSet;
use std::io::Write;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::route::{Form, Problem, Reason};
use crate::shadow::{DescState, LayoutState};

/// One distinct call: what a recorded line holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Record {
    /// The problem in decode terms (tokens m, out features n, in features k), when
    /// the call is one of the forms skinnylt knows (`linear`, `gemv`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<String>,
    /// Tokens, out features, in features (decode terms; BLAS n, m, k for `linear`).
    pub m: u64,
    pub n: u64,
    pub k: u64,
    /// "bf16", "f16", the fp8 operand type ("e4m3", "e4m3fnuz") of a call routing
    /// accepted (its output 16-bit), or the hipDataType numbers of A, B, D when
    /// they differ or are another type.
    pub dtype: String,
    /// fp8 calls routing accepted: "tensor" (per-tensor scales) or "row" (a scale
    /// vector on either side), what `tune --from ... --scales` selects by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scales: Option<crate::tuning::schema::ScaleKind>,
    pub bias: bool,
    /// Leading dimensions of W, X and Y (elements).
    pub ldw: i64,
    pub ldx: i64,
    pub ldy: i64,
    /// BLAS view: opA, opB (111 = N, 112 = T), epilogue, compute and scale types,
    /// batch count of D.
    pub op_a: i32,
    pub op_b: i32,
    pub epilogue: u32,
    pub compute_type: i32,
    pub scale_type: i32,
    pub batch: i32,
    /// "skinnylt", or "forwarded: <reason>".
    pub routed: String,
}

impl Record {
    /// The record of a call whose descriptors are `desc`, `a`, `b`, `d`, routed to
    /// `outcome`. `problem` is the routed problem when routing accepted the call.
    pub fn new(desc: &DescState, a: &LayoutState, b: &LayoutState, d: &LayoutState, problem: Option<&Problem>, outcome: Result<(), Reason>) -> Record {
        // The decode view: W is op(A) for `F.linear` (opA = T), else the caller's B.
        let linear = desc.trans_a() == crate::abi::OP_T;
        let (w, x) = if linear { (a, b) } else { (b, a) };
        let (m, n, k) = match problem {
            Some(p) => (p.m as u64, p.n as u64, p.k as u64),
            None if linear => (d.cols, d.rows, a.rows),
            None => (d.rows, d.cols, a.cols),
        };
        let types = [a.dtype, b.dtype, d.dtype];
        let fp8 = problem.filter(|p| p.dtype.is_fp8());
        let dtype = match (fp8, crate::route::dtype_from_hip(a.dtype)) {
            (Some(p), _) => p.dtype.name().to_owned(),
            (None, Some(t)) if types.iter().all(|&x| x == a.dtype) => t.name().to_owned(),
            _ => format!("{types:?}"),
        };
        Record {
            form: problem.map(|p| match p.form {
                Form::Linear => "linear".to_owned(),
                Form::Gemv => "gemv".to_owned(),
            }),
            m,
            n,
            k,
            dtype,
            scales: fp8.map(|p| p.scale_kind()),
            bias: desc.epilogue() == crate::abi::EPILOGUE_BIAS,
            ldw: w.ld,
            ldx: x.ld,
            ldy: d.ld,
            op_a: desc.trans_a(),
            op_b: desc.trans_b(),
            epilogue: desc.epilogue(),
            compute_type: desc.compute_type,
            scale_type: desc.scale_type,
            batch: d.batch_count(),
            routed: match outcome {
                Ok(()) => "skinnylt".to_owned(),
                Err(r) => format!("forwarded: {}", r.name()),
            },
        }
    }
}

/// The record file and the calls already written to it.
pub struct Recorder {
    state: Mutex<(HashSet<Record>, std::fs::File)>,
}

impl Recorder {
    /// Opens (appends to) `path`; `%i` in it becomes the process id. A FIFO nobody
    /// reads is refused at once rather than blocking the first call.
    pub fn open(path: &str) -> Result<Recorder, String> {
        let path = path.replace("%i", &std::process::id().to_string());
        let file = crate::log::open_nonblocking(&path, true).map_err(|e| format!("{path}: {e}"))?;
        Ok(Recorder { state: Mutex::new((HashSet::new(), file)) })
    }

    /// Writes `r` unless an equal record was written before.
    pub fn note(&self, r: Record) {
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (seen, file) = &mut *guard;
        if seen.contains(&r) {
            return;
        }
        if let Ok(line) = serde_json::to_string(&r) {
            // A failed write loses one line of a profile, never the call.
            let _ = writeln!(file, "{line}");
            let _ = file.flush();
        }
        seen.insert(r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi;
    use crate::route::DType;

    fn linear(m: u64, n: u64, k: u64) -> (DescState, LayoutState, LayoutState, LayoutState) {
        let mut desc = DescState::new(abi::COMPUTE_32F, abi::R_32F);
        desc.attrs.insert(abi::desc_attr::TRANSA, abi::OP_T as u64);
        desc.attrs.insert(abi::desc_attr::TRANSB, abi::OP_N as u64);
        (desc, LayoutState::new(abi::R_16BF, k, n, k as i64), LayoutState::new(abi::R_16BF, k, m, k as i64 + 8), LayoutState::new(abi::R_16BF, n, m, n as i64))
    }

    #[test]
    fn a_record_reads_the_decode_view_of_the_descriptors() {
        let (desc, a, b, d) = linear(12, 2880, 4096);
        let p = Problem::packed(DType::Bf16, 12, 2880, 4096, false);
        let r = Record::new(&desc, &a, &b, &d, Some(&p), Ok(()));
        assert_eq!((r.m, r.n, r.k, r.ldw, r.ldx, r.ldy), (12, 2880, 4096, 4096, 4104, 2880));
        assert_eq!((r.form.as_deref(), r.dtype.as_str(), r.bias, r.routed.as_str()), (Some("linear"), "bf16", false, "skinnylt"));
        // A call routing refused keeps its shape, from the descriptors alone.
        let mut f32_a = a.clone();
        f32_a.dtype = abi::R_32F;
        let r = Record::new(&desc, &f32_a, &b, &d, None, Err(Reason::DataType));
        assert_eq!((r.m, r.n, r.k, r.form), (12, 2880, 4096, None));
        assert_eq!((r.dtype.as_str(), r.routed.as_str()), ("[0, 14, 14]", "forwarded: data-type"));
    }

    /// An fp8 call is recorded by its operand type and scale kind (what `tune --from`
    /// selects by); 16-bit calls carry no scale kind.
    #[test]
    fn an_fp8_record_names_its_operand_type_and_scale_kind() {
        use crate::kernels::params::{SCALE_A_VEC, SCALE_B_VEC};
        use crate::tuning::schema::ScaleKind;
        let (desc, mut a, mut b, d) = linear(5, 2880, 4096);
        (a.dtype, b.dtype) = (abi::R_8F_E4M3, abi::R_8F_E4M3);
        let tensor = Problem::packed(DType::E4m3, 5, 2880, 4096, false);
        let row = Problem { epilogue: SCALE_A_VEC | SCALE_B_VEC, ..tensor };
        let r = Record::new(&desc, &a, &b, &d, Some(&row), Err(Reason::PlannerForward));
        assert_eq!((r.dtype.as_str(), r.scales), ("e4m3", Some(ScaleKind::Row)));
        let line = serde_json::to_string(&r).unwrap();
        assert!(line.contains(r#""scales":"row""#), "{line}");
        assert_eq!(serde_json::from_str::<Record>(&line).unwrap(), r);
        let r = Record::new(&desc, &a, &b, &d, Some(&tensor), Ok(()));
        assert_eq!((r.dtype.as_str(), r.scales), ("e4m3", Some(ScaleKind::Tensor)));
        // Refused by routing: the types as they are, no scale kind.
        let r = Record::new(&desc, &a, &b, &d, None, Err(Reason::ScaleOrAux));
        assert_eq!((r.dtype.as_str(), r.scales), ("[28, 28, 14]", None));
        // 16-bit: no "scales" in the line.
        let (desc, a, b, d) = linear(5, 2880, 4096);
        let r = Record::new(&desc, &a, &b, &d, Some(&Problem::packed(DType::Bf16, 5, 2880, 4096, false)), Ok(()));
        assert!(r.scales.is_none() && !serde_json::to_string(&r).unwrap().contains("scales"));
    }

    #[test]
    fn each_distinct_call_is_written_once() {
        let path = std::env::temp_dir().join(format!("skinnylt-record-test-{}.jsonl", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let rec = Recorder::open(path.to_str().unwrap()).unwrap();
        let (desc, a, b, d) = linear(4, 1024, 7168);
        let p = Problem::packed(DType::Bf16, 4, 1024, 7168, false);
        for _ in 0..3 {
            rec.note(Record::new(&desc, &a, &b, &d, Some(&p), Ok(())));
        }
        rec.note(Record::new(&desc, &a, &b, &d, Some(&p), Err(Reason::TunedForward)));
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<Record> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1].routed, "forwarded: tuned-forward");
        let _ = std::fs::remove_file(&path);
    }
}
