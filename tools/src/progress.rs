//! Progress over the shapes of the long measuring commands (`bench`, `tune`).
//!
//! When stderr is a terminal: one bar on stderr (position/total, elapsed, ETA, the
//! shape being measured), redrawn every 250 ms; result lines go to stdout above it,
//! so the table stays intact. When stderr is not a terminal (CI, `tee`, logs on the
//! GPU machine) the bar is hidden and draws nothing: the result lines, one per shape,
//! are printed exactly as they would be without a bar.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressFinish, ProgressStyle};
use crate::grid::Shape;

pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar over `shapes` shapes, drawn only when stderr is a terminal.
    pub fn new(shapes: usize) -> Progress {
        Progress::with_terminal(shapes, std::io::stderr().is_terminal())
    }

    fn with_terminal(shapes: usize, terminal: bool) -> Progress {
        let target = if terminal { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
        // Cleared when finished, and when dropped on an early error return, so an
        // error message that follows starts on a clean line.
        let bar = ProgressBar::with_draw_target(Some(shapes as u64), target).with_finish(ProgressFinish::AndClear);
        if terminal {
            let style = ProgressStyle::with_template("{spinner} [{elapsed_precise}] [{bar:20}] {pos}/{len} ETA {eta} {wide_msg}").expect("progress template");
            bar.set_style(style.progress_chars("=> "));
            bar.enable_steady_tick(Duration::from_millis(250));
        }
        Progress { bar }
    }

    /// Shows the shape now being measured.
    pub fn start(&self, sh: &Shape) {
        self.bar.set_message(label(sh));
    }

    /// One shape measured.
    pub fn inc(&self) {
        self.bar.inc(1);
    }

    /// A shape that needs no work (already in tune's output file): taken out of the
    /// total rather than counted as done, so it does not shorten the ETA.
    pub fn skip(&self) {
        self.bar.dec_length(1);
    }

    /// A line on stdout, above the bar while it is drawn (plainly when it is hidden).
    pub fn println(&self, line: impl AsRef<str>) {
        self.bar.suspend(|| println!("{}", line.as_ref()));
    }

    /// Removes the bar; the printed lines stay.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

fn label(sh: &Shape) -> String {
    format!("{} M={} N={} K={}{}", sh.group, sh.m, sh.n, sh.k, if sh.bias { " bias" } else { "" })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(m: u32, bias: bool) -> Shape {
        Shape { group: "G1", m, n: 4096, k: 14336, bias }
    }

    #[test]
    fn hidden_when_not_a_terminal() {
        let p = Progress::with_terminal(3, false);
        assert!(p.bar.is_hidden());
        p.start(&shape(8, true));
        assert_eq!(p.bar.message(), "G1 M=8 N=4096 K=14336 bias");
        // Lines are still printed (suspend runs them) although nothing is drawn.
        let mut ran = 0;
        p.bar.suspend(|| ran += 1);
        assert_eq!(ran, 1);
        p.println("result line");
        p.skip();
        p.inc();
        p.inc();
        assert_eq!((p.bar.position(), p.bar.length()), (2, Some(2)));
        p.finish();
        assert!(p.bar.is_finished());
    }

    #[test]
    fn dropped_unfinished_without_panic() {
        // An early error return in bench/tune drops the bar mid-way.
        let p = Progress::with_terminal(5, false);
        p.start(&shape(1, false));
        assert_eq!(p.bar.message(), "G1 M=1 N=4096 K=14336");
        p.inc();
        drop(p);
    }
}
