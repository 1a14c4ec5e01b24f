//! A design's name: the preset or spec file it starts from and the design keys that change it,
//! one rule for every front end.

use crate::design::ClusterSpec;
use crate::keys;
use crate::overrides::Overrides;
use crate::raw::RawSpec;

impl ClusterSpec {
    /// Records the overrides that changed this design from its preset or spec file (`servers=16`),
    /// and describes it by them (`dgx-h100-superpod with --servers 16 --tech roce-400g`): the
    /// preset's prose (its server count, switches and networks) no longer holds.
    pub fn describe_overrides(&mut self, overrides: &[String]) {
        if overrides.is_empty() {
            return;
        }
        let flags: Vec<String> = overrides
            .iter()
            .map(|o| match o.split_once('=') {
                Some((k, v)) => format!("--{} {v}", k.replace('.', "-")),
                None => o.clone(),
            })
            .collect();
        self.description = format!("{} with {}", self.name, flags.join(" "));
        self.overrides = overrides.to_vec();
    }

    /// Describes the design by the `given` settings (`name=value` of [`keys::DESIGN_KEYS`], as the
    /// CLI's flags and the web app's keys give them) that change it from `base` (the preset or
    /// spec file before them), in the keys' order: a setting is kept when the design without it
    /// differs, so a value the preset already has is no change, alone or beside others
    /// (`--servers 127 --storage none` was titled `servers=127,storage=none`). Settings that each
    /// say what another says (`--nic-ratio 1:2 --nics-per-server 4`) are no change alone but one
    /// together: named all. One rule for every front end, so a design has one name.
    pub fn describe_changes(&mut self, base: &RawSpec, origin: &str, given: &[String]) {
        if given.is_empty() {
            return;
        }
        let order = |g: &String| {
            let name = g.split_once('=').map_or(g.as_str(), |(n, _)| n);
            keys::DESIGN_KEYS
                .iter()
                .position(|k| k.name == name)
                .unwrap_or(usize::MAX)
        };
        let mut given = given.to_vec();
        given.sort_by_key(order);
        let without = |left_out: &str| -> Option<ClusterSpec> {
            let mut o = Overrides::default();
            for g in given.iter().filter(|g| g.as_str() != left_out) {
                let (name, v) = g.split_once('=')?;
                let k = keys::DESIGN_KEYS.iter().find(|k| k.name == name)?;
                (k.set)(&mut o, k.parse(v).ok()?);
            }
            let mut raw = base.clone();
            o.apply(&mut raw).ok()?;
            ClusterSpec::from_raw(&raw, origin).ok()
        };
        let mut changing: Vec<String> = given
            .iter()
            .filter(|g| without(g).as_ref() != Some(&*self))
            .cloned()
            .collect();
        let unchanged = ClusterSpec::from_raw(base, origin).is_ok_and(|b| b == *self);
        if changing.is_empty() && !unchanged {
            changing = given;
        }
        self.describe_overrides(&changing);
    }
}
