//! The public decode shape grid (docs/performance.md): 108 shapes in three groups.
//! Notation: Y[M,N] = X[M,K] · W[N,K]ᵀ (+ bias), M = tokens.

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
    #[test]
    fn the_public_grid_has_108_shapes() {
        let g = super::public();
        assert_eq!(g.len(), 108);
        assert_eq!(g.iter().filter(|s| s.group == "G1").count(), 32);
        assert_eq!(g.iter().filter(|s| s.group == "G2").count(), 48);
        assert_eq!(g.iter().filter(|s| s.group == "G3").count(), 28);
    }
}
