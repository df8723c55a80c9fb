//! lagcomp-sim's integration tests in one binary (one link instead of one per file): the
//! simulator's floors, and the HTML report with and without a browser.

mod fixture;
mod floors;
mod report;
mod report_browser;
mod report_scenes;
mod scenery;
mod weapons;
