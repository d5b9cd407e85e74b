//! Host side of correctness checks: random inputs, 16-bit conversions, the float64
//! reference GEMM (threaded), and the relative Frobenius error.

use skinnylt::route::DType;

/// xorshift64*: fast, seedable, good enough for test data.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }
    /// Uniform in [-1, 1).
    pub fn unit(&mut self) -> f32 {
        ((self.next_u64() >> 40) as f32 / (1u64 << 23) as f32) - 1.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// The 16-bit pattern of `v` in a 16-bit type.
pub fn to_bits(d: DType, v: f32) -> u16 {
    match d {
        DType::Bf16 => {
            let u = v.to_bits();
            let r = u.wrapping_add(0x7fff + ((u >> 16) & 1));
            (r >> 16) as u16
        }
        DType::F16 => f32_to_f16(v),
        DType::E4m3 | DType::E4m3Fnuz => unreachable!("not a 16-bit type"),
    }
}

pub fn from_bits(d: DType, b: u16) -> f32 {
    match d {
        DType::Bf16 => f32::from_bits((b as u32) << 16),
        DType::F16 => f16_to_f32(b),
        DType::E4m3 | DType::E4m3Fnuz => unreachable!("not a 16-bit type"),
    }
}

fn f32_to_f16(v: f32) -> u16 {
    // Round to nearest even; inputs here are finite and |v| < 65504.
    let x = v.to_bits();
    let sign = ((x >> 16) & 0x8000) as u16;
    let exp = ((x >> 23) & 0xff) as i32 - 127 + 15;
    let mant = x & 0x7fffff;
    if exp <= 0 {
        if exp < -10 {
            return sign;
        }
        let m = mant | 0x800000;
        let shift = (14 - exp) as u32;
        let half = 1u32 << (shift - 1);
        let r = m >> shift;
        let rem = m & ((1 << shift) - 1);
        let r = if rem > half || (rem == half && r & 1 == 1) { r + 1 } else { r };
        return sign | r as u16;
    }
    let r = mant >> 13;
    let rem = mant & 0x1fff;
    let mut h = ((exp as u32) << 10) | r;
    if rem > 0x1000 || (rem == 0x1000 && r & 1 == 1) {
        h += 1;
    }
    sign | h as u16
}

fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h & 0x8000) as u32) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let mant = (h & 0x3ff) as u32;
    let bits = match exp {
        0 if mant == 0 => sign,
        0 => {
            let mut e = 1i32;
            let mut m = mant;
            while m & 0x400 == 0 {
                m <<= 1;
                e -= 1;
            }
            sign | (((e + 127 - 15) as u32) << 23) | ((m & 0x3ff) << 13)
        }
        0x1f => sign | 0x7f800000 | (mant << 13),
        _ => sign | ((exp + 127 - 15) << 23) | (mant << 13),
    };
    f32::from_bits(bits)
}

/// Random 16-bit matrix of `rows × ld` (only `cols` per row are meaningful).
pub fn random_matrix(rng: &mut Rng, d: DType, rows: usize, cols: usize, ld: usize) -> Vec<u16> {
    let mut v = vec![0u16; rows * ld];
    for r in 0..rows {
        for c in 0..cols {
            v[r * ld + c] = to_bits(d, rng.unit());
        }
    }
    v
}

/// Y[t][n] = alpha · Σ_k X[t][k]·W[n][k] + bias[n], in float64, threaded over N.
#[allow(clippy::too_many_arguments)]
pub fn reference(d: DType, m: usize, n: usize, k: usize, w: &[u16], ldw: usize, x: &[u16], ldx: usize, bias: Option<&[u16]>, alpha: f64) -> Vec<f64> {
    let product = reference_by(m, n, k, |j, kk| from_bits(d, w[j * ldw + kk]) as f64, |t, kk| from_bits(d, x[t * ldx + kk]) as f64);
    let b = |j: usize| bias.map_or(0.0, |b| from_bits(d, b[j]) as f64);
    product.iter().enumerate().map(|(i, p)| alpha * p + b(i % n)).collect()
}

/// Σ_k X(t, k)·W(n, k) as an m×n row-major float64 matrix, threaded over N; the
/// operands are read through `w(n, k)` and `x(t, k)` (decoding any element type,
/// without a float64 copy of the weights).
pub fn reference_by(m: usize, n: usize, k: usize, w: impl Fn(usize, usize) -> f64 + Sync, x: impl Fn(usize, usize) -> f64 + Sync) -> Vec<f64> {
    let xf: Vec<f64> = (0..m * k).map(|i| x(i / k, i % k)).collect();
    let mut out = vec![0f64; m * n];
    let threads = std::thread::available_parallelism().map_or(4, |p| p.get()).min(32);
    let chunk = n.div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let mut parts: Vec<(usize, Vec<f64>)> = Vec::new();
        let handles: Vec<_> = (0..n)
            .step_by(chunk)
            .map(|n0| {
                let (xf, w) = (&xf, &w);
                s.spawn(move || {
                    let n1 = (n0 + chunk).min(n);
                    let mut part = vec![0f64; m * (n1 - n0)];
                    let mut wrow = vec![0f64; k];
                    for j in n0..n1 {
                        for (kk, v) in wrow.iter_mut().enumerate() {
                            *v = w(j, kk);
                        }
                        for t in 0..m {
                            let xs = &xf[t * k..(t + 1) * k];
                            part[t * (n1 - n0) + (j - n0)] = xs.iter().zip(&wrow).map(|(a, b)| a * b).sum();
                        }
                    }
                    (n0, part)
                })
            })
            .collect();
        for h in handles {
            parts.push(h.join().unwrap());
        }
        for (n0, part) in parts {
            let w = part.len() / m;
            for t in 0..m {
                out[t * n + n0..t * n + n0 + w].copy_from_slice(&part[t * w..(t + 1) * w]);
            }
        }
    });
    out
}

/// The value of an fp8 byte, decoded bit for bit: OCP E4M3 (`E4m3`: bias 7,
/// subnormals below 2^-6, S.1111.111 NaN, no infinity, max 448) or E4M3 FNUZ
/// (`E4m3Fnuz`: bias 8, subnormals below 2^-7, 0x80 the only NaN, no negative
/// zero, max 240). Sources: the OCP 8-bit floating point specification (2023) and
/// LLVM's `Float8E4M3FNUZ` semantics.
pub fn fp8_value(d: DType, b: u8) -> f64 {
    let fnuz = d == DType::E4m3Fnuz;
    let (sign, exp, mant) = ((b >> 7) as i32, ((b >> 3) & 15) as i32, (b & 7) as f64);
    if (fnuz && b == 0x80) || (!fnuz && b & 0x7f == 0x7f) {
        return f64::NAN;
    }
    let bias = if fnuz { 8 } else { 7 };
    let v = if exp == 0 { mant / 8.0 * 2f64.powi(1 - bias) } else { (1.0 + mant / 8.0) * 2f64.powi(exp - bias) };
    if sign == 1 { -v } else { v }
}

/// Every byte's value in one fp8 type (`fp8_value`), for fast decoding.
pub fn fp8_table(d: DType) -> [f64; 256] {
    std::array::from_fn(|b| fp8_value(d, b as u8))
}

/// A random fp8 matrix of `rows × ld` bytes (only `cols` per row meaningful):
/// every byte pattern of magnitude at most 2, subnormals and zeros included, no NaN.
pub fn random_fp8(rng: &mut Rng, d: DType, rows: usize, cols: usize, ld: usize) -> Vec<u8> {
    let allowed: Vec<u8> = (0..=255u8).filter(|&b| fp8_value(d, b).abs() <= 2.0).collect();
    let mut v = vec![0u8; rows * ld];
    for r in 0..rows {
        for c in 0..cols {
            v[r * ld + c] = allowed[rng.below(allowed.len() as u64) as usize];
        }
    }
    v
}

/// ‖got − ref‖_F / ‖ref‖_F over the m×n result (`got` has leading dimension ldy);
/// `None` when any element is NaN/Inf (e.g. still poisoned).
pub fn rel_error(d: DType, m: usize, n: usize, got: &[u16], ldy: usize, reference: &[f64]) -> Option<f64> {
    rel_error_scaled(d, m, n, got, ldy, reference, reference)
}

/// ‖got − ref‖_F / ‖scale‖_F: the error relative to the magnitude the computation
/// works at. For an activation that flattens values (ReLU, GELU's tail) `scale` is
/// the values before it: GELU(-8.5) is about 1e-24 in float64 and 0 in any fp32
/// implementation (hipBLASLt's reference too), an error of nothing at that scale.
pub fn rel_error_scaled(d: DType, m: usize, n: usize, got: &[u16], ldy: usize, reference: &[f64], scale: &[f64]) -> Option<f64> {
    let (mut num, mut den) = (0f64, 0f64);
    for t in 0..m {
        for j in 0..n {
            let g = from_bits(d, got[t * ldy + j]) as f64;
            if !g.is_finite() {
                return None;
            }
            let (r, s) = (reference[t * n + j], scale[t * n + j]);
            num += (g - r) * (g - r);
            den += s * s;
        }
    }
    Some((num / den.max(1e-30)).sqrt())
}

/// The tolerance of an output type (fp8 operands are checked at their output's).
pub fn tolerance(d: DType) -> f64 {
    match d {
        DType::Bf16 => 1e-2,
        DType::F16 => 2e-3,
        DType::E4m3 | DType::E4m3Fnuz => unreachable!("fp8 is an operand type; outputs are 16-bit"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two fp8 formats at their landmarks (OCP spec table; LLVM's FNUZ semantics).
    #[test]
    fn fp8_decodes_both_formats() {
        let (o, z) = (DType::E4m3, DType::E4m3Fnuz);
        assert_eq!(fp8_value(o, 0x38), 1.0);
        assert_eq!(fp8_value(z, 0x40), 1.0);
        assert_eq!(fp8_value(o, 0x7e), 448.0);
        assert_eq!(fp8_value(z, 0x7f), 240.0);
        assert_eq!(fp8_value(o, 0x01), 2f64.powi(-9));
        assert_eq!(fp8_value(z, 0x01), 2f64.powi(-10));
        assert_eq!(fp8_value(o, 0xb8), -1.0);
        assert!(fp8_value(o, 0x7f).is_nan() && fp8_value(o, 0xff).is_nan() && fp8_value(z, 0x80).is_nan());
        assert_eq!(fp8_value(o, 0x80), 0.0);
        assert!(!fp8_value(z, 0xff).is_nan());
        let mut r = Rng(7);
        let v = random_fp8(&mut r, o, 4, 100, 128);
        assert!(v.iter().all(|&b| fp8_value(o, b).abs() <= 2.0));
        assert!(v.iter().any(|&b| b & 0x78 == 0 && b & 7 != 0), "subnormals drawn");
    }

    #[test]
    fn f16_roundtrip_and_rounding() {
        for v in [0.0f32, 1.0, -2.5, 0.1, 65504.0, 6.1e-5, 3.0e-7, -0.33325] {
            let h = to_bits(DType::F16, v);
            let back = from_bits(DType::F16, h);
            assert!((back - v).abs() <= v.abs() * 1e-3 + 6e-8, "{v} -> {back}");
        }
        assert_eq!(to_bits(DType::F16, 1.0), 0x3c00);
        assert_eq!(to_bits(DType::Bf16, 1.0), 0x3f80);
    }

    /// Judged at the scale before the activation, GELU's flushed tail passes and
    /// a wrong value still fails.
    #[test]
    fn scaled_error_judges_at_the_pre_activation_scale() {
        let d = DType::Bf16;
        let (zero, one) = ([to_bits(d, 0.0)], [to_bits(d, 1.0)]);
        let (want, pre) = ([-1e-10], [-8.5]); // a tail value fp32 flushes to 0
        assert!(rel_error(d, 1, 1, &zero, 1, &want).unwrap() > 0.99);
        assert!(rel_error_scaled(d, 1, 1, &zero, 1, &want, &pre).unwrap() < 1e-10);
        assert!(rel_error_scaled(d, 1, 1, &one, 1, &want, &pre).unwrap() > tolerance(d));
    }

    #[test]
    fn reference_matches_a_hand_computed_product() {
        let d = DType::Bf16;
        let enc = |v: &[f32]| v.iter().map(|x| to_bits(d, *x)).collect::<Vec<_>>();
        let w = enc(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]); // N=2, K=3
        let x = enc(&[1.0, 0.5, -1.0]); // M=1
        let b = enc(&[0.25, -0.25]);
        let y = reference(d, 1, 2, 3, &w, 3, &x, 3, Some(&b), 2.0);
        assert_eq!(y, vec![2.0 * (1.0 + 1.0 - 3.0) + 0.25, 2.0 * (4.0 + 2.5 - 6.0) - 0.25]);
    }
}
