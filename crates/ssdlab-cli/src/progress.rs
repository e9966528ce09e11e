//! Progress bar on stderr (only when stderr is a terminal and not `--quiet`).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use ssdlab_core::Progress;
use std::io::IsTerminal;

pub struct Bar {
    bar: Option<ProgressBar>,
}

impl Bar {
    pub fn new(quiet: bool) -> Bar {
        let show = !quiet && std::io::stderr().is_terminal();
        Bar {
            bar: show.then(|| ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())),
        }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// A run that ends in an error (or Ctrl-C) clears its bar too, before the message.
impl Drop for Bar {
    fn drop(&mut self) {
        self.finish();
    }
}

impl Progress for Bar {
    fn phase(&mut self, name: &str, total: Option<u64>) {
        if let Some(b) = &self.bar {
            b.reset();
            b.set_length(total.unwrap_or(0));
            let template = if total.is_some() {
                "{msg:32} [{bar:30}] {pos}/{len} ({per_sec}, eta {eta})"
            } else {
                "{msg:32} {pos} requests ({per_sec})"
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
                b.set_style(style);
            }
            b.set_message(name.to_string());
        }
    }

    fn update(&mut self, done: u64, _sim_time_ns: u64) {
        if let Some(b) = &self.bar {
            b.set_position(done);
        }
    }
}
