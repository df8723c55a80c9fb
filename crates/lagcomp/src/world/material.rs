//! What a piece of the level is made of, for weapons that pass through walls.
//!
//! A material is a small number the game chooses (0 concrete, 1 wood, 2 sheet metal, ...);
//! what it costs a bullet to cross is the weapon's business
//! ([`crate::query::penetration::PenetrationRules`]), so one level serves every weapon.
//! Every piece starts as [`MaterialId::DEFAULT`]; [`crate::History::set_static_material`]
//! changes one, and a server's own [`super::StaticWorld`] answers
//! [`super::StaticWorld::material`] for its pieces.

use super::StaticError;
use super::level::Level;
use crate::history::History;
use crate::world::StaticId;

/// What a static piece (or, through a weapon's zone table, a hitbox) is made of: an index
/// into a weapon's cost table, chosen by the game.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct MaterialId(pub u16);

impl MaterialId {
    /// The material of every piece nobody gave one: the level's common wall.
    pub const DEFAULT: Self = Self(0);
}

impl History {
    /// Says what static piece `id` is made of (it starts as [`MaterialId::DEFAULT`]). A
    /// level loader calls it after [`History::load_level`], for the pieces that are not
    /// the common wall.
    ///
    /// # Errors
    /// [`StaticError::UnknownPiece`] for an id the level never gave.
    pub fn set_static_material(
        &mut self,
        id: StaticId,
        material: MaterialId,
    ) -> Result<(), StaticError> {
        self.level.set_material(id, material)
    }
}

impl Level {
    /// What piece `id` is made of; `None` for an unknown id.
    #[must_use]
    pub fn material(&self, id: StaticId) -> Option<MaterialId> {
        let index = usize::try_from(id.0).ok()?;
        (index < self.len()).then(|| self.materials.get(index).copied().unwrap_or_default())
    }

    fn set_material(&mut self, id: StaticId, material: MaterialId) -> Result<(), StaticError> {
        let index = usize::try_from(id.0)
            .ok()
            .filter(|&i| i < self.len())
            .ok_or(StaticError::UnknownPiece(id))?;
        // Only a level with materials other than the default holds the table; it grows to
        // the highest piece given one.
        if self.materials.len() <= index {
            self.materials.resize(index + 1, MaterialId::DEFAULT);
        }
        self.materials[index] = material;
        Ok(())
    }
}
