//! The epilogue variants `skinnylt check` runs — beta · C (C apart from D, or D
//! itself), ReLU and GELU with and without a bias, an fp32 bias, alpha and beta as
//! device scalars — with their hipBLASLt descriptor settings, their host data and
//! their float64 reference.

use skinnylt::abi;
use skinnylt::kernels::params::{EPI_BIAS_F32, EPI_GELU, EPI_RELU};
use skinnylt::route::DType;

use crate::reference::{self, Rng};

/// Where C comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum COperand {
    /// C = D, beta = 0: C is not read.
    Unused,
    /// A C of its own, with a padded leading dimension. With beta = 0 it holds NaN:
    /// reading it would show.
    Apart,
    /// C = D with D's layout (PyTorch's `addmm` into its own output): D holds C
    /// before the call.
    InPlace,
}

/// The bias.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BiasKind {
    None,
    /// In the output type (`BIAS_DATA_TYPE` unset, as PyTorch leaves it).
    Output,
    /// fp32 (`BIAS_DATA_TYPE` = R_32F).
    F32,
}

/// One way of calling the epilogue.
#[derive(Clone, Copy, Debug)]
pub struct Variant {
    pub alpha: f32,
    pub beta: f32,
    pub c: COperand,
    /// `EPI_RELU`, `EPI_GELU` or 0.
    pub act: i32,
    pub bias: BiasKind,
    pub device_scalars: bool,
}

const fn v(alpha: f32, beta: f32, c: COperand, act: i32, bias: BiasKind, device_scalars: bool) -> Variant {
    Variant { alpha, beta, c, act, bias, device_scalars }
}

/// Every variant `check` cycles through: each feature alone, and mixed.
pub const VARIANTS: [Variant; 9] = [
    v(1.0, 1.0, COperand::InPlace, 0, BiasKind::None, false), // addmm: beta = 1 into D
    v(0.5, -0.75, COperand::Apart, 0, BiasKind::None, false),
    v(1.0, 0.0, COperand::Unused, EPI_RELU, BiasKind::Output, false), // gemm_and_bias RELU_BIAS
    v(1.0, 0.0, COperand::Unused, EPI_GELU, BiasKind::Output, false), // gemm_and_bias GELU_BIAS
    v(1.5, 0.0, COperand::Unused, EPI_RELU, BiasKind::None, false),
    v(1.0, 0.0, COperand::Unused, EPI_GELU, BiasKind::None, false),
    v(1.0, 0.5, COperand::InPlace, EPI_GELU, BiasKind::F32, false),
    v(0.75, -0.5, COperand::Apart, EPI_RELU, BiasKind::F32, true),
    v(1.25, 0.0, COperand::Apart, 0, BiasKind::Output, true), // device beta = 0: C (NaN) unread
];

/// A variant's host data: C (m rows of `ldc`) and the fp32 bias.
pub struct HostData {
    pub c: Vec<u16>,
    pub ldc: usize,
    pub bias_f32: Vec<f32>,
}

impl Variant {
    pub fn name(&self) -> String {
        let c = match self.c {
            COperand::Unused => "",
            COperand::Apart => " C apart",
            COperand::InPlace => " C=D",
        };
        let act = match self.act {
            EPI_RELU => " relu",
            EPI_GELU => " gelu",
            _ => "",
        };
        let bias = match self.bias {
            BiasKind::None => "",
            BiasKind::Output => " bias",
            BiasKind::F32 => " bias f32",
        };
        let mode = if self.device_scalars { " device scalars" } else { "" };
        format!("alpha={} beta={}{c}{act}{bias}{mode}", self.alpha, self.beta)
    }

    /// The `hipblasLtEpilogue_t` value.
    pub fn hip_epilogue(&self) -> u32 {
        let bias = self.bias != BiasKind::None;
        match (self.act, bias) {
            (EPI_RELU, false) => abi::EPILOGUE_RELU,
            (EPI_RELU, true) => abi::EPILOGUE_RELU_BIAS,
            (EPI_GELU, false) => abi::EPILOGUE_GELU,
            (EPI_GELU, true) => abi::EPILOGUE_GELU_BIAS,
            (_, true) => abi::EPILOGUE_BIAS,
            _ => abi::EPILOGUE_DEFAULT,
        }
    }

    /// The kernels' `EPI_*` bits.
    pub fn kernel_bits(&self) -> i32 {
        self.act | if self.bias == BiasKind::F32 { EPI_BIAS_F32 } else { 0 }
    }

    /// C's leading dimension for an output of leading dimension `ldy`.
    pub fn ldc(&self, ldy: usize) -> usize {
        if self.c == COperand::Apart { ldy + 8 } else { ldy }
    }

    /// Fresh C and fp32 bias (C all NaN where it must not be read, and in the
    /// padding columns).
    pub fn host(&self, rng: &mut Rng, dtype: DType, m: usize, n: usize, ldy: usize) -> HostData {
        let ldc = self.ldc(ldy);
        let mut c = if self.c == COperand::Apart && self.beta == 0.0 {
            vec![0xffff; m * ldc]
        } else {
            reference::random_matrix(rng, dtype, m, n, ldc)
        };
        // NaN in the padding, so that an in-place C doubles as D's poison there.
        for row in c.chunks_mut(ldc) {
            row[n..].fill(0xffff);
        }
        let bias_f32 = (0..n).map(|_| rng.unit() * 2.0).collect();
        HostData { c, ldc, bias_f32 }
    }

    /// The float64 result from `product` = alpha · X · Wᵀ (+ the output-type bias,
    /// which `reference::reference` adds): + beta · C, + the fp32 bias, activation.
    pub fn reference(&self, dtype: DType, m: usize, n: usize, product: &[f64], h: &HostData) -> Vec<f64> {
        let pre = self.pre_activation(dtype, m, n, product, h);
        match self.act {
            EPI_RELU => pre.iter().map(|y| y.max(0.0)).collect(),
            EPI_GELU => pre.iter().map(|&y| gelu(y)).collect(),
            _ => pre,
        }
    }

    /// The values the activation takes: the scale errors are judged at
    /// (`reference::rel_error_scaled`).
    pub fn pre_activation(&self, dtype: DType, m: usize, n: usize, product: &[f64], h: &HostData) -> Vec<f64> {
        let mut out = product.to_vec();
        for t in 0..m {
            for j in 0..n {
                let y = &mut out[t * n + j];
                if self.c != COperand::Unused && self.beta != 0.0 {
                    *y += self.beta as f64 * reference::from_bits(dtype, h.c[t * h.ldc + j]) as f64;
                }
                if self.bias == BiasKind::F32 {
                    *y += h.bias_f32[j] as f64;
                }
            }
        }
        out
    }
}

/// hipBLASLt's GELU (the tanh form of its client reference), in float64.
pub fn gelu(x: f64) -> f64 {
    0.5 * x * (1.0 + (0.7978845608028654 * x * (1.0 + 0.044715 * x * x)).tanh())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gelu_is_the_tanh_form() {
        // GELU(-1) in the tanh form is -0.158808; the erf form gives -0.158655.
        assert!((gelu(-1.0) + 0.158808).abs() < 1e-6);
        assert!((gelu(1.0) - 0.841192).abs() < 1e-6);
        assert_eq!(gelu(0.0), 0.0);
    }

    #[test]
    fn the_reference_applies_beta_bias_and_activation_in_hipblaslt_order() {
        let d = DType::Bf16;
        let c = [reference::to_bits(d, 2.0), reference::to_bits(d, -4.0)];
        let h = HostData { c: c.to_vec(), ldc: 2, bias_f32: vec![0.5, 0.25] };
        let relu = v(1.0, 0.5, COperand::Apart, EPI_RELU, BiasKind::F32, false);
        // act(product + beta C + bias): relu(1 + 1 + 0.5), relu(1 - 2 + 0.25)
        assert_eq!(relu.reference(d, 1, 2, &[1.0, 1.0], &h), vec![2.5, 0.0]);
        let gelu_v = v(1.0, 0.0, COperand::Unused, EPI_GELU, BiasKind::None, false);
        assert_eq!(gelu_v.reference(d, 1, 2, &[-1.0, 0.0], &h), vec![gelu(-1.0), 0.0]);
    }

    #[test]
    fn every_feature_is_covered() {
        let has = |f: &dyn Fn(&Variant) -> bool| VARIANTS.iter().any(f);
        assert!(has(&|v| v.c == COperand::InPlace && v.beta == 1.0));
        assert!(has(&|v| v.c == COperand::Apart && v.beta != 0.0));
        assert!(has(&|v| v.c == COperand::Apart && v.beta == 0.0 && v.device_scalars));
        for e in [abi::EPILOGUE_RELU, abi::EPILOGUE_RELU_BIAS, abi::EPILOGUE_GELU, abi::EPILOGUE_GELU_BIAS, abi::EPILOGUE_BIAS] {
            assert!(has(&|v| v.hip_epilogue() == e), "epilogue {e}");
        }
        assert!(has(&|v| v.bias == BiasKind::F32) && has(&|v| v.device_scalars && v.beta != 0.0));
    }
}
