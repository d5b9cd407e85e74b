//! From a plan to a launch: the stream's lane and buffers, the kernel arguments,
//! the tensor maps; then one runtime call that decides nothing.

use std::ffi::c_void;

use super::{Call, Device, Engine, Error, Plan};
use crate::gpu::{Function, LaunchConfig, Tile2d};
use crate::kernels::params::{GemmParams, INVARIANT_K_UNIT, SPLIT_IN_ORDER, TmaMaps};
use crate::kernels;
use crate::route::Problem;
use crate::tuning::schema::KernelConfig;

/// Everything one runtime launch needs.
#[derive(Clone, Copy, Debug)]
pub struct Launch {
    pub function: Function,
    pub cfg: LaunchConfig,
    pub params: GemmParams,
    pub maps: Option<TmaMaps>,
}

/// The tensor views a TMA-fed kernel with `c`'s tiles reads for `p`: W as N rows
/// of K, X as M rows of K, in boxes of 64 k (one 128-B swizzle row) by the tile's
/// rows. Rows and k past the matrix are zero-filled by the hardware.
pub fn tma_tiles(c: &KernelConfig, p: &Problem) -> [Tile2d; 2] {
    let (k, m, n) = (p.k as u64, p.m as u64, p.n as u64);
    // One token row: its stride is never used, and ldx need not be 16-B aligned then.
    let x_row_bytes = if p.m == 1 { k * 2 } else { p.ldx * 2 };
    [
        Tile2d { base: p.w, cols: k, rows: n, row_bytes: p.ldw * 2, box_cols: 64, box_rows: c.tile_n },
        Tile2d { base: p.x, cols: k, rows: m, row_bytes: x_row_bytes, box_cols: 64, box_rows: c.tile_m },
    ]
}

/// The caller's workspace for `plan`'s partials, if it is usable: aligned, and
/// large enough (it is stream-ordered by the caller's contract).
fn caller_workspace(call: &Call, plan: &Plan) -> Option<u64> {
    (call.workspace != 0 && call.workspace.is_multiple_of(16) && call.workspace_size >= plan.partial_bytes).then_some(call.workspace)
}

impl Engine {
    /// Completes `plan` for one call on `call.stream`: a split-K plan takes the stream's
    /// lane (counters, and partials from the caller's workspace or the lane's own
    /// buffer); a stream without a lane (all taken, or a special handle) runs
    /// without split-K — still correct, just less parallel. Cluster plans need no
    /// lane. With `pdl`, the launch may overlap its predecessor.
    pub fn prepare(&self, dev: &Device, plan: &Plan, p: &Problem, pdl: bool, call: &Call) -> Result<Launch, Error> {
        let mut plan = *plan;
        let global_split = plan.split_k > 1 && !plan.cluster;
        let lane = if global_split { self.lane(call.stream) } else { None };
        if global_split && lane.is_none() {
            crate::process::get().stats.count_lane_fallback();
            plan.split_k = 1;
            plan.grid[1] = 1;
            plan.partial_bytes = 0;
        }
        let (partials, counters) = match lane {
            Some(lane) => (
                caller_workspace(call, &plan).unwrap_or_else(|| self.own_partials(lane)),
                self.counters(lane),
            ),
            None => (0, 0),
        };
        let (prefetch_row_bytes, pdl_flags) = if pdl { (dev.pdl_prefetch_row_bytes, dev.pdl_flags) } else { (0, 0) };
        let config = kernels::for_arch(dev.arch).kernels[plan.kernel].config;
        let params = GemmParams {
            w: p.w,
            x: p.x,
            y: p.y,
            bias: p.bias,
            c: p.c,
            alpha_ptr: p.alpha_ptr,
            beta_ptr: p.beta_ptr,
            a_scale: p.a_scale,
            b_scale: p.b_scale,
            partials,
            counters,
            zeros: self.zeros(),
            ldw: p.ldw as i64,
            ldx: p.ldx as i64,
            ldy: p.ldy as i64,
            ldc: p.ldc as i64,
            m: p.m as i32,
            n: p.n as i32,
            k: p.k as i32,
            alpha: p.alpha,
            beta: p.beta,
            split_k: plan.split_k as i32,
            prefetch_row_bytes,
            pdl_flags,
            flags: p.epilogue | if p.batch_invariant { SPLIT_IN_ORDER } else { 0 },
            // Batch-invariant: K split at the same k whatever the kernel's K block.
            split_unit: if p.batch_invariant { (INVARIANT_K_UNIT / config.tile_k) as i32 } else { 1 },
        };
        let maps = if config.tma {
            let encode = |t: &Tile2d| dev.rt.tensor_map_2d(t).map_err(|e| Error::Launch(format!("tensor map for {t:?}: {e}")));
            let [w, x] = tma_tiles(&config, p);
            Some(TmaMaps { w: encode(&w)?, x: encode(&x)? })
        } else {
            None
        };
        let cfg = LaunchConfig {
            grid: plan.grid,
            block: plan.block,
            shared: plan.shared,
            stream: call.stream,
            cluster: plan.cluster.then_some([1, plan.split_k, 1]),
            pdl,
        };
        Ok(Launch { function: dev.functions[plan.kernel], cfg, params, maps })
    }
}

impl Device {
    /// Launches `l` on its stream.
    pub fn launch(&self, l: &mut Launch) -> Result<(), Error> {
        let mut args: [*mut c_void; 2] = [(&mut l.params as *mut GemmParams).cast(), std::ptr::null_mut()];
        let count = match l.maps.as_mut() {
            Some(m) => {
                args[1] = (m as *mut TmaMaps).cast();
                2
            }
            None => 1,
        };
        // SAFETY: every kernel of the catalog takes `GemmParams` by value, and the
        // TMA-fed ones `TmaMaps` after it (the build checks both layouts against
        // kernels/gemm_params.h on every arch); both live in `l` for the call.
        unsafe { self.rt.launch(self.ctx, l.function, &l.cfg, &mut args[..count]) }.map_err(Error::Launch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tensor views of a TMA-fed kernel: W by its rows of K with the tile's
    /// weight rows per box, X by its token rows; a single token row gets a packed
    /// stride (its ldx is never used, so it need not be 16-B aligned).
    #[test]
    fn tma_tiles_describe_both_operands() {
        use crate::tuning::schema::Family;
        let c = KernelConfig { family: Family::Wgmma, tile_m: 32, tile_n: 64, tile_k: 128, stages: 6, warps: [1, 4, 1], b_to_lds: true, cluster: true, tma: true };
        let mut p = Problem::packed(crate::route::DType::Bf16, 48, 2880, 4096, false);
        p.ldw = 4104;
        p.ldx = 4112;
        let [w, x] = tma_tiles(&c, &p);
        assert_eq!(w, Tile2d { base: p.w, cols: 4096, rows: 2880, row_bytes: 8208, box_cols: 64, box_rows: 64 });
        assert_eq!(x, Tile2d { base: p.x, cols: 4096, rows: 48, row_bytes: 8224, box_cols: 64, box_rows: 32 });
        p.m = 1;
        p.ldx = 4097;
        assert_eq!(tma_tiles(&c, &p)[1].row_bytes, 8192);
    }
}
