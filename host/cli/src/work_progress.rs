//! Progress of long work on stderr (`podstatus fleet` registering a thousand nodes,
//! `podstatus simulate`'s churn): a bar on a terminal, and where stderr is a log (a
//! pod, a pipe) a line every few seconds, so the log shows the work moving without a
//! line per node or per tick.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use podstatus_agent::format_duration;

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

/// How often a run's line is written when stderr is not a terminal.
const RUN_LINE_EVERY: Duration = Duration::from_secs(5);

/// Progress of a run measured in time (`podstatus simulate`'s churn): a bar on a
/// terminal; where stderr is a log, a line every few seconds (`12s of 15s: ...`), so a
/// run in CI or under `nohup` shows it moves.
pub struct RunProgress {
    command: &'static str,
    bar: Option<ProgressBar>,
    last_line: Option<Instant>,
    quiet: bool,
}

impl RunProgress {
    /// The progress of `command`'s run, lasting `duration` if it ends by itself;
    /// nothing is shown when `quiet`.
    pub fn new(command: &'static str, duration: Option<Duration>, quiet: bool) -> Self {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let length = duration.map(|d| d.as_millis() as u64);
            let bar = ProgressBar::with_draw_target(length, ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {msg}") {
                bar.set_style(style);
            }
            bar
        });
        RunProgress { command, bar, last_line: None, quiet }
    }

    /// `elapsed` of `duration` (if it ends by itself) are done; `message` says what.
    pub fn set(&mut self, elapsed: Duration, duration: Option<Duration>, message: &str) {
        match &self.bar {
            Some(bar) => {
                bar.set_position(elapsed.as_millis() as u64);
                bar.set_message(message.to_owned());
            }
            None if self.quiet => {}
            None => {
                if self.last_line.is_some_and(|at| at.elapsed() < RUN_LINE_EVERY) {
                    return;
                }
                // The first call starts the clock: a line every few seconds after it.
                if self.last_line.is_some() {
                    let of = duration.map(|d| format!(" of {}", format_duration(d))).unwrap_or_default();
                    let at = format_duration(Duration::from_secs(elapsed.as_secs()));
                    eprintln!("podstatus {}: {at}{of}: {message}", self.command);
                }
                self.last_line = Some(Instant::now());
            }
        }
    }

    /// Writes `line` on stderr (above the bar, if there is one), unless quiet.
    pub fn say(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None if self.quiet => {}
            None => eprintln!("{line}"),
        }
    }

    /// The run is over: the bar goes.
    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}
