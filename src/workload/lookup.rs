//! What templates read from the run: an existing `_id` of the group's collection (`^Key`, by
//! the group's key distribution) and fresh values of its document template (`^Field`).
//! (`template::NoLookup` is the one with nothing to give.)

use mongodb::bson::Bson;
use rand::RngCore;

use super::distribution::Chooser;
use super::document::DocGen;
use super::keys::KeySpace;
use super::template::Lookup;

/// A virtual user's lookups on its group's collection.
pub(crate) struct GroupLookup<'a> {
    pub(crate) keys: &'a KeySpace,
    pub(crate) pick: &'a mut Chooser,
    pub(crate) document: &'a DocGen,
}

impl Lookup for GroupLookup<'_> {
    fn key(&mut self, mut rng: &mut dyn RngCore) -> Option<Bson> {
        self.keys.existing(self.pick, &mut rng).map(Bson::Int64)
    }
    fn field(&mut self, path: &str, mut rng: &mut dyn RngCore) -> Option<Bson> {
        self.document.generate_path(path, &mut rng)
    }
    fn chooser(&mut self) -> Option<&mut Chooser> {
        Some(self.pick)
    }
    fn has_key(&self) -> bool {
        !self.keys.is_empty()
    }
}

/// A step's lookups on a collection other than its group's: that collection's `_id`s (by the
/// group's key distribution) and document template, the operation's bound values.
pub(crate) struct OtherCollection<'a, 'b> {
    pub(crate) keys: &'a KeySpace,
    pub(crate) document: &'a DocGen,
    pub(crate) inner: &'b mut dyn Lookup,
}

impl Lookup for OtherCollection<'_, '_> {
    fn key(&mut self, mut rng: &mut dyn RngCore) -> Option<Bson> {
        let pick = self.inner.chooser()?;
        self.keys.existing(pick, &mut rng).map(Bson::Int64)
    }
    fn field(&mut self, path: &str, mut rng: &mut dyn RngCore) -> Option<Bson> {
        self.document.generate_path(path, &mut rng)
    }
    fn bind(&mut self, name: &str) -> Option<Bson> {
        self.inner.bind(name)
    }
}

pub(crate) use super::template::now_ms;
