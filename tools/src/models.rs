//! The decode GEMMs of widely used open models (`tools/models.json`: each model's
//! architecture parameters with the config they come from), derived per tensor-
//! parallel degree the way vLLM and SGLang shard them: QKV and gate/up split their
//! outputs (N / TP), O and down their inputs (K / TP), the LM head its vocabulary.
//! Models marked `held_out` are never tuned; their shapes that no other model
//! shares are the held-out set, which measures how well choices generalise.

use serde::Deserialize;

use crate::grid::{Shape, group_name};

#[derive(Deserialize)]
struct File {
    models: Vec<Model>,
}

/// One model's parameters (config.json names).
#[derive(Clone, Debug, Deserialize)]
pub struct Model {
    pub name: String,
    pub hidden_size: u32,
    pub num_attention_heads: u32,
    pub num_key_value_heads: u32,
    pub head_dim: u32,
    pub intermediate_size: u32,
    pub vocab_size: u32,
    pub qkv_bias: bool,
    pub o_bias: bool,
    pub mlp_bias: bool,
    pub moe: Option<Moe>,
    pub mla: Option<Mla>,
    pub held_out: bool,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Moe {
    pub num_experts: u32,
    pub expert_intermediate_size: u32,
    pub shared_experts: u32,
    pub shared_intermediate_size: u32,
    pub router_bias: bool,
}

/// Multi-head latent attention (DeepSeek-V3): low-rank Q and KV projections.
#[derive(Clone, Debug, Deserialize)]
pub struct Mla {
    pub q_lora_rank: u32,
    pub kv_lora_rank: u32,
    pub qk_nope_head_dim: u32,
    pub qk_rope_head_dim: u32,
    pub v_head_dim: u32,
}

/// The models of the checked-in list.
pub fn all() -> Vec<Model> {
    let f: File = serde_json::from_str(include_str!("../models.json")).expect("tools/models.json is checked by a test");
    f.models
}

/// One weight of a model at one TP degree, as a decode GEMM: N out features, K in
/// features.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gemm {
    pub layer: &'static str,
    pub n: u32,
    pub k: u32,
    pub bias: bool,
}

/// The decode GEMMs of `m` on one of `tp` GPUs; empty when its heads do not split.
pub fn gemms(m: &Model, tp: u32) -> Vec<Gemm> {
    let (h, heads) = (m.hidden_size, m.num_attention_heads);
    if !heads.is_multiple_of(tp) {
        return Vec::new();
    }
    let g = |layer, n, k, bias| Gemm { layer, n, k, bias };
    let mut v = Vec::new();
    match &m.mla {
        Some(a) => {
            // The low-rank down-projections of Q and KV are one replicated GEMM.
            v.push(g("qkv_a", a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim, h, false));
            v.push(g("q_b", heads / tp * (a.qk_nope_head_dim + a.qk_rope_head_dim), a.q_lora_rank, false));
            v.push(g("kv_b", heads / tp * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank, false));
            v.push(g("o", h, heads / tp * a.v_head_dim, false));
        }
        None => {
            // KV heads are replicated when there are fewer than GPUs.
            let kv = (m.num_key_value_heads / tp).max(1);
            v.push(g("qkv", (heads / tp + 2 * kv) * m.head_dim, h, m.qkv_bias));
            v.push(g("o", h, heads / tp * m.head_dim, m.o_bias));
        }
    }
    // Dense MLP layers: every layer without experts, and DeepSeek's first layers.
    if m.moe.is_none() || m.mla.is_some() {
        let i = m.intermediate_size / tp;
        v.push(g("gate_up", 2 * i, h, m.mlp_bias));
        v.push(g("down", h, i, m.mlp_bias));
    }
    if let Some(e) = &m.moe {
        let i = e.expert_intermediate_size / tp;
        v.push(g("router", e.num_experts, h, e.router_bias));
        v.push(g("expert_gate_up", 2 * i, h, m.mlp_bias));
        v.push(g("expert_down", h, i, m.mlp_bias));
        if e.shared_experts > 0 {
            let s = e.shared_experts * e.shared_intermediate_size / tp;
            v.push(g("shared_gate_up", 2 * s, h, false));
            v.push(g("shared_down", h, s, false));
        }
    }
    v.push(g("lm_head", m.vocab_size.div_ceil(tp), h, false));
    v
}

/// The tensor-parallel degrees the sets cover.
pub const TP: [u32; 4] = [1, 2, 4, 8];

/// Token counts the sets are measured at: powers of two and the odd counts between.
pub const TOKENS: [u32; 12] = [1, 3, 5, 8, 12, 16, 24, 32, 48, 64, 100, 128];

/// The distinct (N, K, bias) of `models` over `tp`, in first-seen order.
fn distinct(models: &[&Model], tp: &[u32]) -> Vec<(u32, u32, bool)> {
    let mut v: Vec<(u32, u32, bool)> = Vec::new();
    for m in models {
        for &t in tp {
            for x in gemms(m, t) {
                if !v.contains(&(x.n, x.k, x.bias)) {
                    v.push((x.n, x.k, x.bias));
                }
            }
        }
    }
    v
}

/// A named set of shapes: "models" (every model that is not held out), "held-out"
/// (the held-out models' shapes that no other model has) or "all".
pub fn set(name: &str, tp: &[u32], tokens: &[u32]) -> Result<Vec<Shape>, String> {
    let models = all();
    let (tuned, held): (Vec<&Model>, Vec<&Model>) = models.iter().partition(|m| !m.held_out);
    let shapes = match name {
        "models" => distinct(&tuned, tp),
        "all" => distinct(&models.iter().collect::<Vec<_>>(), tp),
        "held-out" => {
            let seen = distinct(&tuned, &TP);
            distinct(&held, tp).into_iter().filter(|s| !seen.contains(s)).collect()
        }
        _ => return Err(format!("unknown shape set {name:?} (models, held-out, all)")),
    };
    let group = group_name(name);
    Ok(shapes.into_iter().flat_map(|(n, k, bias)| tokens.iter().map(move |&m| Shape { group, m, n, k, bias })).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(name: &str) -> Model {
        all().into_iter().find(|m| m.name == name).unwrap_or_else(|| panic!("{name} in models.json"))
    }

    /// The list parses, every model has its source, and each model gives its
    /// projections at every TP its heads allow.
    #[test]
    fn the_list_is_complete() {
        let text = include_str!("../models.json");
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        for m in v["models"].as_array().unwrap() {
            assert!(m["source"].as_str().is_some_and(|s| s.starts_with("https://")), "{}", m["name"]);
        }
        for m in all() {
            assert!(!gemms(&m, 1).is_empty(), "{}", m.name);
        }
        assert!(all().iter().filter(|m| m.held_out).count() >= 4);
    }

    /// Shapes as the serving engines shard them.
    #[test]
    fn llama_8b_and_deepseek_shapes() {
        let l = model("Llama-3.1-8B");
        let at = |m: &Model, tp, layer| gemms(m, tp).into_iter().find(|g| g.layer == layer).map(|g| (g.n, g.k, g.bias));
        assert_eq!(at(&l, 1, "qkv"), Some((6144, 4096, false)));
        assert_eq!(at(&l, 8, "qkv"), Some((768, 4096, false)));
        assert_eq!(at(&l, 4, "o"), Some((4096, 1024, false)));
        assert_eq!(at(&l, 2, "gate_up"), Some((14336, 4096, false)));
        assert_eq!(at(&l, 8, "down"), Some((4096, 1792, false)));
        assert_eq!(at(&l, 8, "lm_head"), Some((16032, 4096, false)));
        // Eight KV heads on 16 GPUs would be replicated; on 8, one each.
        let d = model("DeepSeek-V3");
        assert_eq!(at(&d, 8, "qkv_a"), Some((2112, 7168, false)));
        assert_eq!(at(&d, 8, "q_b"), Some((3072, 1536, false)));
        assert_eq!(at(&d, 8, "kv_b"), Some((4096, 512, false)));
        assert_eq!(at(&d, 8, "o"), Some((7168, 2048, false)));
        assert_eq!(at(&d, 1, "router"), Some((256, 7168, false)));
        let q = model("Qwen2.5-7B");
        assert_eq!(at(&q, 1, "qkv"), Some((4608, 3584, true)));
    }

    /// The held-out set shares no shape with the models that are tuned.
    #[test]
    fn held_out_shapes_are_never_tuned_shapes() {
        let tuned = set("models", &TP, &[1]).unwrap();
        let held = set("held-out", &TP, &[1]).unwrap();
        assert!(held.len() >= 40, "{}", held.len());
        for h in &held {
            assert!(!tuned.iter().any(|t| (t.n, t.k, t.bias) == (h.n, h.k, h.bias)), "{h:?}");
        }
    }
}
