//! Progress of long work on stderr (`podstatus fleet` registering a thousand nodes): a
//! bar on a terminal, and where stderr is a log (a pod, a pipe) a line every few
//! seconds and one at the end, so the log shows the work moving without a line per
//! node.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often a line is written when stderr is not a terminal.
const LINE_EVERY: Duration = Duration::from_secs(2);

/// One piece of long work with a known total.
pub struct WorkProgress {
    what: &'static str,
    total: u64,
    bar: Option<ProgressBar>,
    last_line: Option<Instant>,
    /// What the last line said was done.
    last_done: Option<u64>,
    quiet: bool,
}

impl WorkProgress {
    /// `total` steps of `what` (`nodes started`); nothing is shown when `quiet`.
    pub fn new(what: &'static str, total: u64, quiet: bool) -> Self {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            if let Ok(style) =
                ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}")
            {
                bar.set_style(style);
            }
            bar.set_message(what);
            bar
        });
        WorkProgress { what, total, bar, last_line: None, last_done: None, quiet }
    }

    /// `done` of the total are done.
    pub fn set(&mut self, done: u64) {
        match &self.bar {
            Some(bar) => bar.set_position(done),
            None if self.quiet => {}
            None => {
                let due = self.last_line.is_none_or(|at| at.elapsed() >= LINE_EVERY);
                let news = self.last_done != Some(done);
                if news && (due || done == self.total) {
                    eprintln!("podstatus fleet: {done} of {} {}", self.total, self.what);
                    self.last_line = Some(Instant::now());
                    self.last_done = Some(done);
                }
            }
        }
    }

    /// The work is over (done or not): the bar goes.
    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}
