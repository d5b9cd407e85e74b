//! The public decode shape grid (docs/performance.md): 108 shapes in three groups.
//! Notation: Y[M,N] = X[M,K] · W[N,K]ᵀ (+ bias), M = tokens.

/// A shape set's name as a `&'static str` (`Shape::group`): the grid's groups, and
/// names read from files, each kept once for the life of the process.
pub fn group_name(name: &str) -> &'static str {
    static NAMES: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = names.iter().find(|n| **n == name) {
        return n;
    }
    let n: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.push(n);
    n
}

/// Shapes from a file: a record of an application's calls (`SKINNYLT_RECORD`, JSON
/// lines), or one shape per line as "M,N,K[,bias]" (`#` starts a comment). Calls of
/// another dtype or fp8 scale kind, or of a form skinnylt does not run, are left out
/// and counted.
pub fn from_file(path: &str, dtype: skinnylt::route::DType, scales: skinnylt::tuning::schema::ScaleKind, group: &str) -> Result<(Vec<Shape>, usize), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let group = group_name(group);
    let (mut shapes, mut skipped) = (Vec::new(), 0);
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let shape = if line.starts_with('{') {
            let r: skinnylt::record::Record = serde_json::from_str(line).map_err(|e| format!("{path}:{}: {e}", i + 1))?;
            if r.form.is_none() || r.dtype != dtype.name() || r.scales.unwrap_or_default() != scales || r.m > u32::MAX as u64 || r.n > u32::MAX as u64 || r.k > u32::MAX as u64 {
                skipped += 1;
                continue;
            }
            Shape { group, m: r.m as u32, n: r.n as u32, k: r.k as u32, bias: r.bias }
        } else {
            Shape { group, ..parse(line).map_err(|e| format!("{path}:{}: {e}", i + 1))? }
        };
        if !shapes.contains(&shape) {
            shapes.push(shape);
        }
    }
    Ok((shapes, skipped))
}

/// "M,N,K[,bias]" (bias: 1, true or bias).
pub fn parse(s: &str) -> Result<Shape, String> {
    let v: Vec<&str> = s.split(',').collect();
    let num = |i: usize| v.get(i).and_then(|x| x.trim().parse::<u32>().ok()).ok_or(format!("bad shape {s:?} (want M,N,K[,bias])"));
    Ok(Shape { group: "extra", m: num(0)?, n: num(1)?, k: num(2)?, bias: v.get(3).is_some_and(|b| matches!(b.trim(), "1" | "bias" | "true")) })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub group: &'static str,
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub bias: bool,
}

impl Shape {
    /// The packed `F.linear` problem of this shape (placeholder pointers, never
    /// read: for routing and planning questions).
    pub fn problem(&self, dtype: skinnylt::route::DType) -> skinnylt::route::Problem {
        skinnylt::route::Problem::packed(dtype, self.m, self.n, self.k, self.bias)
    }
}

const M8: [u32; 8] = [1, 2, 4, 8, 16, 32, 64, 128];

/// G1 (K=7168 decode grid), G2 (model shapes), G3 (large decode shapes).
pub fn public() -> Vec<Shape> {
    let mut v = Vec::new();
    for n in [64, 384, 512, 1024] {
        for m in M8 {
            v.push(Shape { group: "G1", m, n, k: 7168, bias: false });
        }
    }
    for (n, k, bias) in [(128, 7168, true), (640, 2880, true), (2112, 7168, false), (2880, 2880, true), (5120, 2880, true), (2880, 4096, false)] {
        for m in M8 {
            v.push(Shape { group: "G2", m, n, k, bias });
        }
    }
    for (n, k) in [(2304, 16384), (13312, 16384), (16384, 6656), (13312, 8192), (2304, 8192), (6656, 16384), (6656, 8192)] {
        for m in [1, 8, 16, 32] {
            v.push(Shape { group: "G3", m, n, k, bias: false });
        }
    }
    v
}

#[cfg(test)]
mod tests {
    /// A record file gives the calls of the dtype and fp8 scale kind asked for (a
    /// record without a scale kind is per tensor); shape lines hold for any.
    #[test]
    fn a_record_file_gives_the_calls_of_one_dtype_and_scale_kind() {
        use skinnylt::route::DType;
        use skinnylt::tuning::schema::ScaleKind;
        let rec = |m: u32, dtype: &str, scales: &str| {
            format!(
                r#"{{"form":"linear","m":{m},"n":2880,"k":4096,"dtype":"{dtype}"{scales},"bias":false,"ldw":4096,"ldx":4096,"ldy":2880,"op_a":112,"op_b":111,"epilogue":1,"compute_type":2,"scale_type":0,"batch":1,"routed":"skinnylt"}}"#
            )
        };
        let text = [rec(1, "e4m3", r#","scales":"row""#), rec(2, "e4m3", r#","scales":"tensor""#), rec(3, "e4m3", ""), rec(4, "bf16", ""), "16,5120,2880,bias".into()].join("\n");
        let path = std::env::temp_dir().join(format!("skinnylt-grid-test-{}.jsonl", std::process::id()));
        std::fs::write(&path, text).unwrap();
        let ms = |dtype, scales| {
            let (shapes, skipped) = super::from_file(path.to_str().unwrap(), dtype, scales, "t").unwrap();
            (shapes.iter().map(|s| s.m).collect::<Vec<_>>(), skipped)
        };
        assert_eq!(ms(DType::E4m3, ScaleKind::Row), (vec![1, 16], 3));
        assert_eq!(ms(DType::E4m3, ScaleKind::Tensor), (vec![2, 3, 16], 2));
        assert_eq!(ms(DType::Bf16, ScaleKind::Tensor), (vec![4, 16], 3));
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn the_public_grid_has_108_shapes() {
        let g = super::public();
        assert_eq!(g.len(), 108);
        assert_eq!(g.iter().filter(|s| s.group == "G1").count(), 32);
        assert_eq!(g.iter().filter(|s| s.group == "G2").count(), 48);
        assert_eq!(g.iter().filter(|s| s.group == "G3").count(), 28);
    }
}
