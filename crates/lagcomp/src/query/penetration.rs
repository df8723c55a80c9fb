//! Shots that pass through walls and bodies: a sniper round through a wooden wall into the
//! player behind it, or through one player into the next.
//!
//! What lives here: a weapon's [`PenetrationRules`] (its power, what each material costs
//! it per metre, what each body zone is made of, how damage falls per layer), the walk
//! [`Query::penetrate`] and what it returns ([`PenetrationChain`], [`PenetrationTrace`]).
//! Materials of the level's pieces are in [`crate::world`] ([`MaterialId`]); the traces the
//! walk is made of are the ordinary ones ([`Query::ray_all`]).
//!
//! # The model
//!
//! A shot starts with the weapon's *power*. Every layer it crosses, a wall or a hitbox,
//! costs `cost per metre of its material x metres crossed` (entry to exit along the ray).
//! A layer the shot cannot pay for in full stops it: inside a body, the body is still hit
//! (the round lodged in it); at a wall, the shot ends at the wall's face. A blocker entity
//! (a door, a lift) stops it as it stops every trace, and so does the end of its reach.
//!
//! Damage falls per layer: a body hit after `n` layers (each wall crossed counts one, each
//! body crossed counts one, however many of its hitboxes the shot went through) takes the
//! weapon's damage times `layer_damage^n`. A game that wants damage to follow the power
//! left instead has it in each crossing's [`PenetratedLayer::power_before`].

use super::{EntityBlock, Hit, Query, QueryError, Ray, Rewind};
use crate::history::EntityId;
use crate::math::ray_recip;
use crate::query::observer::QueryObserver;
use crate::rig::{HitboxId, Zone};
use crate::world::{MaterialId, StaticId, StaticWorld};

/// How far past a wall's exit the walk resumes, in metres: enough that the next trace
/// does not meet the same face again at distance 0 (rounding places a point 1 km out to
/// about 0.06 mm), far less than any wall or body.
const RESUME_NUDGE: f32 = 1e-4;

/// What a weapon's shot can pass through, and what that costs it.
///
/// Power is in the weapon's own units; a material's cost is in those units per metre.
/// With costs 1.0 for concrete, 0.25 for wood and 0.5 for flesh, a rifle of power 1.0
/// crosses 1 m of concrete, or 20 cm of wood and then a 30 cm body with 0.8 to spare.
///
/// # Example
/// ```
/// use lagcomp::query::penetration::PenetrationRules;
/// use lagcomp::{MaterialId, Zone};
/// // Materials: 0 concrete, 1 wood, 2 flesh, 3 body armour.
/// let rifle = PenetrationRules::new(1.0, 0.75, vec![1.0, 0.25, 0.5, 4.0])?
///     .with_body_material(MaterialId(2))
///     .with_zone_material(Zone::Torso, MaterialId(3));
/// assert_eq!(rifle.zone_material(Zone::Head), MaterialId(2));
/// assert_eq!(rifle.cost_per_metre(MaterialId(3)), 4.0);
/// // A material past the table is never crossed.
/// assert_eq!(rifle.cost_per_metre(MaterialId(9)), f32::INFINITY);
/// // Bad numbers are refused, naming the field.
/// assert!(PenetrationRules::new(1.0, 0.75, vec![-1.0]).is_err());
/// # Ok::<(), lagcomp::query::penetration::PenetrationRulesError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct PenetrationRules {
    power: f32,
    layer_damage: f32,
    /// Cost per metre, by material id.
    costs: Vec<f32>,
    /// What a body is made of where no zone says otherwise.
    body_material: MaterialId,
    zone_materials: Vec<(Zone, MaterialId)>,
    max_layers: u16,
}

/// Why penetration rules were refused.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum PenetrationRulesError {
    /// The power is negative, NaN or infinite.
    #[error("penetration power {0} must be finite and at least 0")]
    Power(f32),
    /// The damage factor per layer is outside `[0, 1]` or NaN.
    #[error("layer_damage {0} must be in [0, 1]")]
    LayerDamage(f32),
    /// A material's cost is negative or NaN (infinity is allowed: never crossed).
    #[error("cost per metre {cost} of material {material} must be at least 0")]
    Cost {
        /// The material's id.
        material: u16,
        /// The cost given.
        cost: f32,
    },
    /// More costs than material ids can name (65,536).
    #[error("{0} material costs is more than material ids can name")]
    TooManyMaterials(usize),
    /// A walk must be allowed at least one layer.
    #[error("max_layers must be at least 1")]
    MaxLayers,
}

impl PenetrationRules {
    /// The most layers a walk records unless told otherwise
    /// ([`PenetrationRules::with_max_layers`]).
    pub const DEFAULT_MAX_LAYERS: u16 = 16;

    /// Rules with `power`, the damage factor `layer_damage` applied per layer crossed, and
    /// the cost per metre of each material (`costs[m]` for [`MaterialId`]`(m)`; a material
    /// past the table costs infinity: never crossed). Bodies are
    /// [`MaterialId::DEFAULT`] until [`PenetrationRules::with_body_material`] says otherwise.
    ///
    /// # Errors
    /// [`PenetrationRulesError`] naming the bad number.
    pub fn new(
        power: f32,
        layer_damage: f32,
        costs: Vec<f32>,
    ) -> Result<Self, PenetrationRulesError> {
        if !(power.is_finite() && power >= 0.0) {
            return Err(PenetrationRulesError::Power(power));
        }
        if !(0.0..=1.0).contains(&layer_damage) {
            return Err(PenetrationRulesError::LayerDamage(layer_damage));
        }
        if costs.len() > usize::from(u16::MAX) + 1 {
            return Err(PenetrationRulesError::TooManyMaterials(costs.len()));
        }
        if let Some((material, &cost)) = costs
            .iter()
            .enumerate()
            .find(|(_, c)| c.is_nan() || **c < 0.0)
        {
            return Err(PenetrationRulesError::Cost {
                material: material as u16,
                cost,
            });
        }
        Ok(Self {
            power,
            layer_damage,
            costs,
            body_material: MaterialId::DEFAULT,
            zone_materials: Vec::new(),
            max_layers: Self::DEFAULT_MAX_LAYERS,
        })
    }

    /// Bodies are made of `material` wherever no zone says otherwise.
    #[must_use]
    pub fn with_body_material(mut self, material: MaterialId) -> Self {
        self.body_material = material;
        self
    }

    /// Hitboxes of `zone` are made of `material` (a helmet, body armour, a vehicle's
    /// plating as a custom zone).
    #[must_use]
    pub fn with_zone_material(mut self, zone: Zone, material: MaterialId) -> Self {
        match self.zone_materials.iter_mut().find(|(z, _)| *z == zone) {
            Some(entry) => entry.1 = material,
            None => self.zone_materials.push((zone, material)),
        }
        self
    }

    /// At most `max_layers` layers are recorded; a shot that would cross more stops
    /// ([`PenetrationStop::LayerLimit`]). It bounds the walk through a level of many thin
    /// pieces that cost nothing.
    ///
    /// # Errors
    /// [`PenetrationRulesError::MaxLayers`] for 0.
    pub fn with_max_layers(mut self, max_layers: u16) -> Result<Self, PenetrationRulesError> {
        if max_layers == 0 {
            return Err(PenetrationRulesError::MaxLayers);
        }
        self.max_layers = max_layers;
        Ok(self)
    }

    /// The power a shot starts with.
    #[must_use]
    pub fn power(&self) -> f32 {
        self.power
    }

    /// The damage factor per layer crossed.
    #[must_use]
    pub fn layer_damage(&self) -> f32 {
        self.layer_damage
    }

    /// What crossing a metre of `material` costs; infinity for a material past the table.
    #[must_use]
    pub fn cost_per_metre(&self, material: MaterialId) -> f32 {
        self.costs
            .get(usize::from(material.0))
            .copied()
            .unwrap_or(f32::INFINITY)
    }

    /// What hitboxes of `zone` are made of.
    #[must_use]
    pub fn zone_material(&self, zone: Zone) -> MaterialId {
        self.zone_materials
            .iter()
            .find(|(z, _)| *z == zone)
            .map_or(self.body_material, |&(_, material)| material)
    }
}

/// What one layer of a penetrating shot was.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Penetrated {
    /// A static piece: of the history's level, or of the server's [`StaticWorld`].
    Wall(StaticId),
    /// A hitbox, with its hit (distances along the whole shot's ray).
    Body(Hit),
}

/// One layer a penetrating shot met, in the order it met them.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct PenetratedLayer {
    /// The wall or hitbox.
    pub layer: Penetrated,
    /// What it is made of (a hitbox: its zone's material under the weapon's rules).
    pub material: MaterialId,
    /// Where the shot entered it, metres along the ray.
    pub entry: f32,
    /// Where the shot left it, metres along the ray; for the layer the shot stopped in,
    /// where its power ran out (a wall: its face).
    pub exit: f32,
    /// The power the shot had as it entered.
    pub power_before: f32,
    /// The power crossing it cost (all that was left for the layer the shot stopped in).
    pub cost: f32,
    /// The factor on the weapon's damage for a hit here: `layer_damage^n` after `n`
    /// layers crossed before this one (the hitboxes of one body are one layer).
    pub damage_factor: f32,
    /// Whether the shot came out the far side.
    pub crossed: bool,
}

impl PenetratedLayer {
    /// The hit, for a hitbox.
    #[must_use]
    pub fn hit(&self) -> Option<&Hit> {
        match &self.layer {
            Penetrated::Body(hit) => Some(hit),
            Penetrated::Wall(_) => None,
        }
    }
}

/// Where [`Query::penetrate`] writes a shot's layers. Keep one and reuse it across shots:
/// it then allocates nothing.
#[derive(Debug, Clone, Default)]
pub struct PenetrationChain {
    layers: Vec<PenetratedLayer>,
    /// The hitboxes of one stretch between walls ([`Query::ray_all`]'s answer).
    scratch: Vec<Hit>,
}

impl PenetrationChain {
    /// An empty chain.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The layers of the last shot, nearest first.
    #[must_use]
    pub fn layers(&self) -> &[PenetratedLayer] {
        &self.layers
    }

    /// The hitboxes the last shot hit, nearest first, with their damage factors.
    pub fn hits(&self) -> impl Iterator<Item = (&Hit, f32)> {
        self.layers
            .iter()
            .filter_map(|layer| Some((layer.hit()?, layer.damage_factor)))
    }

    fn holds(&self, entity: EntityId, hitbox: HitboxId) -> bool {
        self.hits()
            .any(|(hit, _)| hit.entity == entity && hit.hitbox == hitbox)
    }

    /// The damage factor of an earlier hitbox of `entity`, if the shot already met it.
    fn entity_factor(&self, entity: EntityId) -> Option<f32> {
        self.hits()
            .find(|(hit, _)| hit.entity == entity)
            .map(|(_, factor)| factor)
    }
}

/// Why a penetrating shot ended.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum PenetrationStop {
    /// It reached the end of its ray with power left.
    Reach,
    /// A wall it could not cross (too thick for the power left, or terrain), at
    /// `distance` metres along the ray.
    Wall {
        /// The piece.
        id: StaticId,
        /// Where the shot met it.
        distance: f32,
    },
    /// Its power ran out inside the chain's layer `layer` (a body: still hit).
    Body {
        /// The index in [`PenetrationChain::layers`].
        layer: usize,
    },
    /// A blocker entity (a door, a lift, or a vehicle that was hit as the chain's last
    /// layer), as the ordinary traces stop at one.
    Blocker(EntityBlock),
    /// It would have crossed more layers than the rules allow.
    LayerLimit,
}

/// How a penetrating shot ended; its layers are in the [`PenetrationChain`].
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct PenetrationTrace {
    /// Why it ended.
    pub stop: PenetrationStop,
    /// The power left when it ended (at a wall it could not cross: the power it met the
    /// wall with).
    pub power_left: f32,
    /// The moment looked at.
    pub rewind: Rewind,
}

/// How one stretch of the walk ended.
enum Stretch {
    /// The walk goes on from this distance along the ray.
    Resume(f32),
    /// The shot ended.
    End(PenetrationStop),
}

impl<O: QueryObserver> Query<'_, '_, O> {
    /// A shot that passes through walls and bodies while its power lasts (see the
    /// [module docs](crate::query::penetration) for the model): every layer it met, in
    /// order, written to `chain` (cleared first; reuse it to allocate nothing), and why it
    /// ended. Walls are the history's level and the query's [`Query::world`]; their
    /// materials come from [`StaticWorld::material`] and where the shot leaves them from
    /// [`StaticWorld::exit_distance`].
    ///
    /// # Errors
    /// As [`Query::ray_all`].
    ///
    /// # Example
    /// ```
    /// # use std::sync::Arc;
    /// # use lagcomp::{BoneTransform, EntityState, History, HistoryConfig, Hitbox, MaterialId, Pose, Ray, RewindTarget, Rig, Shape, Tick, Vec3, Zone};
    /// use lagcomp::query::penetration::{PenetrationChain, PenetrationRules, PenetrationStop};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut history = History::new(HistoryConfig { tick_rate: 64.0, max_rewind: 0.5 })?;
    /// // A 20 cm wooden wall 5 m out, and a 30 cm-wide body 2 m behind it.
    /// let wall = history.add_static(Shape::cuboid(Vec3::new(2.0, 2.0, 0.1)), Pose::from_translation(Vec3::new(0.0, 0.0, 5.1)), 1)?;
    /// history.set_static_material(wall, MaterialId(1))?;
    /// let body = history.spawn(Arc::new(Rig::rigid(vec![Hitbox::new(0, "chest", Zone::Torso, 0, Shape::sphere(0.15))])?));
    /// let mut frame = history.begin_frame(Tick(1), 1.0 / 64.0)?;
    /// frame.record_rigid(body, BoneTransform::from_translation(Vec3::new(0.0, 0.0, 7.35)), EntityState::default())?;
    /// drop(frame);
    /// // Concrete 1.0, wood 0.25, flesh 0.5 per metre; damage x 0.75 per layer crossed.
    /// let rifle = PenetrationRules::new(1.0, 0.75, vec![1.0, 0.25, 0.5])?.with_body_material(MaterialId(2));
    /// let ray = Ray::new(Vec3::ZERO, Vec3::Z, 100.0)?;
    /// let mut chain = PenetrationChain::new(); // reuse across shots
    /// let trace = history.query(RewindTarget::at(1.0 / 64.0)).penetrate(&ray, &rifle, &mut chain)?;
    /// let (hit, damage_factor) = chain.hits().next().expect("through the wall");
    /// assert_eq!((hit.entity, damage_factor), (body, 0.75));
    /// assert_eq!(trace.stop, PenetrationStop::Reach);
    /// assert!((trace.power_left - (1.0 - 0.2 * 0.25 - 0.3 * 0.5)).abs() < 1e-4);
    /// # Ok(())
    /// # }
    /// ```
    pub fn penetrate(
        &mut self,
        ray: &Ray,
        rules: &PenetrationRules,
        chain: &mut PenetrationChain,
    ) -> Result<PenetrationTrace, QueryError> {
        chain.layers.clear();
        let mut power = rules.power;
        let mut layers_crossed = 0_i32;
        let mut start = 0.0_f32;
        let (stop, rewind) = loop {
            // The stretch from `start` to the next wall: the ordinary trace.
            let stretch = stretch(ray, start);
            let mut hits = std::mem::take(&mut chain.scratch);
            let trace = self.ray_all(&stretch, &mut hits);
            let outcome = trace.map(|trace| {
                let next = self.penetrate_stretch(
                    ray,
                    rules,
                    chain,
                    &hits,
                    &trace,
                    start,
                    &mut power,
                    &mut layers_crossed,
                );
                (next, trace.rewind)
            });
            // Given back before any error returns, so the chain keeps its capacity.
            chain.scratch = hits;
            match outcome? {
                (Stretch::Resume(next), _) => start = next,
                (Stretch::End(stop), rewind) => break (stop, rewind),
            }
        };
        Ok(PenetrationTrace {
            stop,
            power_left: power,
            rewind,
        })
    }

    /// The hitboxes of one stretch (`hits`, from `start` along the shot's ray) and the
    /// wall that ends it, added to the chain; where the walk goes on, or why it ended.
    #[expect(
        clippy::too_many_arguments,
        reason = "the shot, its rules and chain, one stretch's trace, and the walk's running power and layer count"
    )]
    fn penetrate_stretch(
        &self,
        ray: &Ray,
        rules: &PenetrationRules,
        chain: &mut PenetrationChain,
        hits: &[Hit],
        trace: &super::Trace,
        start: f32,
        power: &mut f32,
        layers_crossed: &mut i32,
    ) -> Stretch {
        for hit in hits {
            if chain.holds(hit.entity, hit.hitbox) {
                // Met in an earlier stretch (it reaches through the wall behind it).
                continue;
            }
            if chain.layers.len() >= usize::from(rules.max_layers) {
                return Stretch::End(PenetrationStop::LayerLimit);
            }
            let mut hit = *hit;
            hit.distance += start;
            hit.exit_distance += start;
            let entry = hit.distance;
            let exit = hit.exit_distance.min(ray.max_distance());
            let material = rules.zone_material(hit.zone);
            let rate = rules.cost_per_metre(material);
            let damage_factor = chain.entity_factor(hit.entity).unwrap_or_else(|| {
                let factor = rules.layer_damage.powi(*layers_crossed);
                *layers_crossed += 1;
                factor
            });
            let need = cost(rate, exit - entry);
            let crossed = need <= *power;
            let (exit, spent) = if crossed {
                (exit, need)
            } else {
                (entry + *power / rate, *power)
            };
            chain.layers.push(PenetratedLayer {
                layer: Penetrated::Body(hit),
                material,
                entry,
                exit,
                power_before: *power,
                cost: spent,
                damage_factor,
                crossed,
            });
            *power -= spent;
            if !crossed {
                let layer = chain.layers.len() - 1;
                return Stretch::End(PenetrationStop::Body { layer });
            }
            if self.blocks(&hit) {
                return Stretch::End(PenetrationStop::Blocker(EntityBlock::from(&hit)));
            }
        }
        if let Some(mut block) = trace.blocking_entity {
            block.distance += start;
            return Stretch::End(PenetrationStop::Blocker(block));
        }
        let Some(wall) = trace.blocker else {
            return Stretch::End(PenetrationStop::Reach);
        };
        if chain.layers.len() >= usize::from(rules.max_layers) {
            return Stretch::End(PenetrationStop::LayerLimit);
        }
        let entry = start + wall.distance;
        let time = trace.rewind.time;
        let (material, exit) = {
            let world = self.wall_world(ray, start, &wall, time);
            let material = world.material(wall.id.0);
            let rate = rules.cost_per_metre(material);
            let reach = ray.max_distance() - entry;
            let max_thickness = if rate > 0.0 {
                (*power / rate).min(reach)
            } else {
                reach
            };
            let exit = world
                .exit_distance(wall.id.0, ray, entry, max_thickness, self.blocking, time)
                .filter(|exit| (entry..=entry + max_thickness).contains(exit));
            (material, exit)
        };
        let (exit, spent, crossed) = match exit {
            // Within the power by the exit's bound; `min` keeps rounding from going below 0.
            Some(exit) => (
                exit,
                cost(rules.cost_per_metre(material), exit - entry).min(*power),
                true,
            ),
            None => (entry, 0.0, false),
        };
        chain.layers.push(PenetratedLayer {
            layer: Penetrated::Wall(wall.id),
            material,
            entry,
            exit,
            power_before: *power,
            cost: spent,
            damage_factor: rules.layer_damage.powi(*layers_crossed),
            crossed,
        });
        if !crossed {
            return Stretch::End(PenetrationStop::Wall {
                id: wall.id,
                distance: entry,
            });
        }
        *power -= spent;
        *layers_crossed += 1;
        let next = exit + RESUME_NUDGE;
        if next < ray.max_distance() {
            Stretch::Resume(next)
        } else {
            Stretch::End(PenetrationStop::Reach)
        }
    }

    /// Whether a hit entity stops the shot as well (a vehicle: a target and a blocker),
    /// as [`Query::ray_all`] decides it.
    fn blocks(&self, hit: &Hit) -> bool {
        let role = self.history.slot_role(hit.entity.index() as usize);
        role.blocks() && hit.state.layers & self.blocking != 0
    }

    /// The world that holds `wall`, the wall a stretch from `start` met: the history's
    /// level unless the query's world answered it (the level wins a tie, as in every
    /// trace).
    fn wall_world(
        &self,
        ray: &Ray,
        start: f32,
        wall: &super::StaticHit,
        time: f64,
    ) -> &dyn StaticWorld {
        let level = self.history.level();
        let Some(world) = self.world else {
            return level;
        };
        let stretch = stretch(ray, start);
        let own = (!level.is_empty())
            .then(|| level.first_hit(&stretch, ray_recip(ray.dir()), 0.0, self.blocking, time))
            .flatten();
        match own {
            Some(own) if own.id == wall.id && own.distance == wall.distance => level,
            _ => world,
        }
    }
}

/// The part of `ray` from `start` on, on the same line to the bit (`Ray::new` would
/// normalize the direction again).
fn stretch(ray: &Ray, start: f32) -> Ray {
    Ray {
        origin: ray.at(start),
        dir: ray.dir(),
        max_distance: ray.max_distance() - start,
    }
}

/// What crossing `metres` of a material at `rate` per metre costs: nothing for nothing
/// crossed, even of a material never crossed (infinity x 0).
fn cost(rate: f32, metres: f32) -> f32 {
    if metres <= 0.0 { 0.0 } else { rate * metres }
}
