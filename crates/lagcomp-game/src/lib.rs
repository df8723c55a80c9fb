//! The game that lagcomp's simulator (`lagcomp simulate`) and network programs (`lagcomp
//! serve`, `lagcomp bots`) play, with no clock and no transport of its own: every function
//! that needs the time takes it, and the caller moves the values between client and server.
//!
//! - [`body`]: the humanoid rig, how bodies move, the arena.
//! - [`weapon`]: the arsenal (rifle, shotgun, rocket launcher, knife, sniper rifle) and
//!   the rules their claims are judged by.
//! - [`traffic`]: what a bot and the server exchange (inputs, snapshot updates, shots).
//! - [`brain`]: [`brain::BotBrain`], a bot's client logic.
//! - [`server`]: [`server::ServerCore`], the server's game state and per-tick logic.
//! - [`interest`]: which entities each player is sent (near it, with hysteresis).
//! - [`scenery`]: doors, a tram, a breakable wall and a mesh level.
//! - [`cheat`]: the cheat classes.
//! - [`scorecard`]: what a match's honest and cheating shots came to.
//!
//! The simulated match, its scenarios and the HTML report are in `lagcomp-sim`; the real
//! sockets in `lagcomp-udp`.
//!
//! # Example
//!
//! A server and four bots with nothing between them: each tick the server moves and
//! records every body and validates the shots that arrived; each bot is handed the
//! snapshot, draws it, maybe fires, and its input goes straight back to the server. A
//! real transport (or the simulator's emulated links) goes where the values are handed
//! over here.
//!
//! ```
//! use lagcomp::Tick;
//! use lagcomp_game::body::Arena;
//! use lagcomp_game::brain::{BotBrain, BrainConfig, WARM_UP};
//! use lagcomp_game::server::{CoreConfig, ServerCore};
//! use lagcomp_game::traffic::EntityUpdate;
//! use lagcomp_validate::VerdictOutcome;
//! use rand::SeedableRng;
//! use rand_pcg::Pcg64Mcg;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let config = CoreConfig {
//!     respawn_rate: 0.0,
//!     ..CoreConfig::default()
//! };
//! let mut core = ServerCore::new(config, Arena::standard())?;
//! let mut rng = Pcg64Mcg::seed_from_u64(7);
//! let players: Vec<_> = (0..4).map(|_| core.join(&mut rng)).collect();
//! let mut bots: Vec<BotBrain> = (0..4u64)
//!     .map(|i| {
//!         let me = players[i as usize];
//!         let brain = BrainConfig::new(config.tick_rate, None); // honest
//!         BotBrain::new(brain, me, &players, Pcg64Mcg::seed_from_u64(i))
//!     })
//!     .collect();
//! let (arena, rig) = (core.arena().clone(), core.rig().clone());
//! let (mut verdicts, mut confirmed) = (0, 0);
//! let dt = 1.0 / config.tick_rate;
//! // Bots hold fire for the warm-up (clock sync, snapshot buffers), then play 4 s.
//! for tick in 0..((WARM_UP + 4.0) / dt) as u32 {
//!     let time = f64::from(tick) * dt;
//!     for queued in core.tick(Tick(tick), time, dt, &mut rng)? {
//!         let verdict = core.validate_any(&queued.claim, queued.received);
//!         verdicts += 1;
//!         confirmed += u32::from(
//!             verdict.verdicts().any(|v| matches!(v.outcome, VerdictOutcome::Confirmed(_))),
//!         );
//!     }
//!     let snapshot = core.snapshot(time);
//!     // A round-trip probe four times a second: the server's latency estimate.
//!     let probe = tick.is_multiple_of(16).then(|| core.probe(time));
//!     for bot in &mut bots {
//!         if let Some(probe) = probe {
//!             bot.on_probe(probe);
//!         }
//!         let updates = snapshot.iter().map(|e| EntityUpdate {
//!             id: e.id,
//!             bones: e.bones.clone(),
//!             velocity: e.velocity,
//!             last_teleport: e.last_teleport,
//!             protected: e.protected,
//!             in_view_since: None,
//!         });
//!         // Server time of the snapshot, its tick, and when it arrived on the bot's clock.
//!         bot.on_snapshot(time, Tick(tick), time, updates);
//!         if let Some(ack) = core.shot_ack(bot.me()) {
//!             bot.on_shot_ack(ack);
//!         }
//!         let frame = bot.frame(time, time, &arena, &rig);
//!         if let Some(pong) = core.receive(bot.me(), frame.input, time) {
//!             bot.on_pong(pong, time);
//!         }
//!     }
//! }
//! assert!(verdicts > 0 && confirmed > 0, "{confirmed} of {verdicts} shots confirmed");
//! # Ok(())
//! # }
//! ```

pub mod body;
pub mod brain;
pub mod cheat;
pub mod interest;
pub mod scenery;
pub mod scorecard;
pub mod server;
pub mod traffic;
pub mod weapon;
