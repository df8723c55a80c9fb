//! Headless `App` tests of the plugin (no window, no GPU): the fixed schedules are run by
//! hand, one `FixedMain` per server tick, as `bevy_time` would run them.

mod support;

mod hierarchy;
mod lifecycle;
mod parity;
mod queries;
mod skeleton;
