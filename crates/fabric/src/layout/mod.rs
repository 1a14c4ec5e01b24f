//! The machine room: where racks stand, how long each cable run is, and which cable or optics carry it.
//!
//! Model (every distance in metres, every parameter in [`LayoutSpec`](railyard_spec::LayoutSpec)):
//! - Server racks stand in rows of `racks_per_row`, `rack_pitch_m` apart; rows are `row_pitch_m` apart.
//!   Servers fill racks in order, `servers_per_rack` each; a scalable unit starts a new rack.
//! - Leaves sit in network racks at the end or in the middle of the row of the first server they serve,
//!   or in that server's own rack (`leaf_placement`), `switches_per_rack` to a rack.
//! - Spines and cores sit in a network row in the middle of the hall.
//! - A run between racks goes up to the overhead tray, along it (Manhattan distance), and down:
//!   `(|dx| + |dy| + 2 x tray_drop_m) x (1 + slack)`; a run inside one rack is `in_rack_m`.
//! - The run is rounded up to a stocked length. Each run gets the cheapest catalog medium that reaches
//!   it: passive copper, active copper, active optical cable, or transceivers and fibre. Ports that share
//!   a cage (twin-port OSFP) share one transceiver, so all links through a cage use one kind of medium.
//!
//! Rooms: `hall` (where things stand, runs), `places` (locations and rack units), `cages` (links
//! that share cages), `media` (parts from the catalog), `floor` (the search's lower bound),
//! `cables` (cabling a built fabric), `server` (what one server draws and asks of a rack), `power`
//! (what a design's racks hold, draw and need).

mod cables;
mod cages;
mod floor;
mod hall;
mod media;
mod places;
mod power;
mod server;

pub use cables::{cable, place_and_cable};
pub use cages::{shared_cage_cables, shared_cage_groups, CageCables, GroupForm};
pub use floor::MediaFloor;
pub use hall::{place, rack_counts, run_length, Hall, Placement, Position, RackFill};
pub use media::CableCtx;
pub use places::{locations, rack_places, rack_places_of, Location, RackPlace};
pub(crate) use power::check as check_racks;
pub use power::{NvlinkDomain, Racks};
pub use server::{
    rack_system, server_height_u, server_model, server_power, ServerPower, ServerSlot,
};
