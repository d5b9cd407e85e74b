//! The environment parser, `Config::from_lookup`, with arbitrary values for every
//! `SKINNYLT_*` variable `src/config.rs` names (the list is read from it at build
//! time), hipBLASLt's log variables (the bench log, `src/benchlog.rs`) and a few
//! it does not read. It must never panic, must give the same answer for the same
//! environment, must ask only for those variables, and must keep the documented
//! bounds of the PDL knobs.
#![no_main]

use std::cell::RefCell;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use skinnylt::config::Config;
use skinnylt::kernels::params::PDL_LEAD_SHIFT;

include!(concat!(env!("OUT_DIR"), "/env_names.rs"));

/// hipBLASLt's own variables the configuration reads: its bench log's.
const HIPBLASLT_NAMES: [&str; 3] = ["HIPBLASLT_LOG_LEVEL", "HIPBLASLT_LOG_MASK", "HIPBLASLT_LOG_FILE"];

#[derive(Arbitrary, Debug)]
enum Name {
    Known(u8),
    Other(String),
}

#[derive(Arbitrary, Debug)]
enum Value {
    Text(String),
    Number { v: i128, pad_left: bool, pad_right: bool },
    Word(u8),
    Log { level: u8, file: Option<String> },
}

const WORDS: [&str; 24] = [
    "", "0", "1", "true", "false", "yes", "no", "on", "off", " 1 ", "early", "late", "trace", "debug", "info", "warn", "error", "5",
    "18446744073709551615", "18446744073709551616", "-1", "17592186044416", "9223372036854775807", "\u{0}",
];

impl Value {
    fn text(&self) -> String {
        match self {
            Value::Text(s) => s.clone(),
            Value::Number { v, pad_left, pad_right } => format!("{}{v}{}", if *pad_left { " \t" } else { "" }, if *pad_right { "\n" } else { "" }),
            Value::Word(i) => WORDS[*i as usize % WORDS.len()].to_owned(),
            Value::Log { level, file } => {
                let l = ["trace", "off", "3", "WARN", "nonsense", ""][*level as usize % 6];
                match file {
                    Some(f) => format!("{l}:{f}"),
                    None => l.to_owned(),
                }
            }
        }
    }
}

fn parse(vars: &[(String, String)]) -> (Config, Vec<String>) {
    let asked = RefCell::new(Vec::new());
    let c = Config::from_lookup(|name: &str| {
        asked.borrow_mut().push(name.to_owned());
        // The last setting of a name wins, as in a shell.
        vars.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v.clone())
    });
    (c, asked.into_inner())
}

fuzz_target!(
    init: {
        skinnylt_fuzz::init_env(&[]);
    },
    |input: Vec<(Name, Value)>| {
        let vars: Vec<(String, String)> = input
            .iter()
            .map(|(n, v)| {
                let name = match n {
                    Name::Known(i) => {
                        let i = *i as usize % (ENV_NAMES.len() + HIPBLASLT_NAMES.len());
                        ENV_NAMES.get(i).copied().unwrap_or_else(|| HIPBLASLT_NAMES[i - ENV_NAMES.len()]).to_owned()
                    }
                    Name::Other(s) => s.clone(),
                };
                (name, v.text())
            })
            .collect();
        let (c, asked) = parse(&vars);
        for name in &asked {
            assert!(name.starts_with("SKINNYLT_") || HIPBLASLT_NAMES.contains(&name.as_str()), "the configuration read {name:?}");
        }
        // Pure: the same environment, the same configuration.
        let (again, _) = parse(&vars);
        assert_eq!(format!("{c:?}"), format!("{again:?}"), "two parses of one environment differ");
        assert!((0..=1 << 20).contains(&c.pdl_prefetch_row_bytes), "SKINNYLT_PDL_PREFETCH not clamped: {}", c.pdl_prefetch_row_bytes);
        let lead = c.pdl_flags >> PDL_LEAD_SHIFT;
        assert!((0..=255).contains(&lead), "SKINNYLT_PDL_LEAD not clamped: {lead}");
        // What the engine derives from it.
        let _ = skinnylt::engine::lane_bytes(&c);
    }
);
