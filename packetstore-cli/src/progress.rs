//! Progress bars (indicatif), drawn only when stderr is a terminal: in a
//! pipe or a log file they would be noise, so callers print plain lines
//! instead when `bar` returns None.

use indicatif::{ProgressBar, ProgressStyle};

/// A bar of `total` steps labelled `label`, if stderr is a terminal.
pub fn bar(total: u64, label: &str) -> Option<ProgressBar> {
    if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        return None;
    }
    let bar = ProgressBar::new(total);
    let template = format!("{label} {{bar:40}} {{pos}}/{{len}} {{msg}} {{eta}}");
    bar.set_style(ProgressStyle::with_template(&template).expect("a valid template"));
    Some(bar)
}

/// Advances `bar` by one step showing `what`, or prints `what` as a line.
pub fn step(bar: &Option<ProgressBar>, what: String) {
    match bar {
        Some(bar) => {
            bar.set_message(what);
            bar.inc(1);
        }
        None => eprintln!("# {what}"),
    }
}
