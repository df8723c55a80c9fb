//! The game that lagcomp's simulator (`lagcomp simulate`) and network programs (`lagcomp
//! serve`, `lagcomp bots`) play, with no clock and no transport of its own: every function
//! that needs the time takes it, and the caller moves the values between client and server.
//!
//! - [`body`]: the humanoid rig, how bodies move, the arena.
//! - [`weapon`]: the rifle and the rules its shots are judged by.
//! - [`traffic`]: what a bot and the server exchange (inputs, snapshot updates, shots).
//! - [`brain`]: [`brain::BotBrain`], a bot's client logic.
//! - [`server`]: [`server::ServerCore`], the server's game state and per-tick logic.
//! - [`interest`]: which entities each player is sent (near it, with hysteresis).
//! - [`echo`]: the round trip measured from snapshot acknowledgements, which caps the one
//!   measured from probes (the fake-latency defence).
//! - [`cheat`]: the cheat classes.
//! - [`scorecard`]: what a match's honest and cheating shots came to.
//!
//! The simulated match, its scenarios and the HTML report are in `lagcomp-sim`; the real
//! sockets in `lagcomp-udp`.

pub mod body;
pub mod brain;
pub mod cheat;
pub mod echo;
pub mod interest;
pub mod scorecard;
pub mod server;
pub mod traffic;
pub mod weapon;
