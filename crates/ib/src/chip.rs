//! What a node's `vendid` / `devid` (NodeInfo VendorID and DeviceID, which ibnetdiscover prints
//! above each record) say about it: the chip and the fastest lane speed that chip runs.
//!
//! A health check needs this to tell a bad cable from a slow part. A link at 4xDDR among 4xQDR
//! peers is a fault to reseat when both ends could run QDR, and no fault of the cable when one end
//! is a DDR-only ConnectX: the real 2020 Voltaire fabric kept in the tests has 23 such hosts
//! (device 0x6732), and the real 2021 HDR cluster four ConnectX-4 (0x1013) management hosts at
//! EDR, the fastest a ConnectX-4 runs.
//!
//! A device id names the chip, not the card: NVIDIA sells ConnectX-4 cards rated FDR and others
//! rated EDR on the same device id 0x1013 (4115; "NVIDIA ConnectX-4 InfiniBand/Ethernet Adapter
//! Cards User Manual", Introduction), and ConnectX-6 cards rated HDR100 and HDR on 0x101b. So the
//! table gives the chip's top speed only: a link at that speed runs as fast as the chip can, while
//! a link below it may still be a lower-rated card, which a discovery cannot tell.
//!
//! Sources. Chips by device id: rdma-core `providers/mlx4/mlx4.c` and `providers/mlx5/mlx5.c`
//! (the verbs drivers' PCI tables, with each id's chip in a comment), `infiniband-diags/vendstat.c`
//! (`ext_fw_info_device`: the Switch-X, Switch-IB, Switch-IB 2 and Quantum ids) and
//! `libibnetdisc/chassis.h` (`MLX_DEVID_IS4`, InfiniScale IV). Top speeds: the data rates in
//! NVIDIA's adapter and switch user manuals (ConnectX-3 and Connect-IB: FDR; ConnectX-4 and
//! ConnectX-5: "SDR/DDR/QDR/FDR/EDR"; ConnectX-6: up to HDR; ConnectX-7: NDR; ConnectX-8: XDR;
//! InfiniScale IV: QDR; SwitchX-2: FDR; Switch-IB and Switch-IB 2: EDR; Quantum: HDR), and for
//! the first ConnectX ("Hermon", MT25408) the speed each device id carries in rdma-core's own
//! comment (`Hermon SDR`, `Hermon DDR`, `Hermon QDR`). Only Mellanox (NVIDIA) ids are listed:
//! other vendors' ids are not decoded, and their links are judged by their peers alone.

use crate::rate::Speed;

/// Mellanox's IEEE OUI, the NodeInfo VendorID of its HCAs and switches (ibnetdiscover prints
/// `vendid=0x2c9`).
pub const MELLANOX_VENDOR_ID: u32 = 0x0002c9;

/// A chip a device id names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chip {
    /// The chip family, as NVIDIA names it.
    pub name: &'static str,
    /// The fastest lane speed the chip runs.
    pub top_speed: Speed,
}

/// Device ids (Mellanox vendor id) with their chip, in id order. Virtual functions are left out: a
/// discovery shows the physical port.
const MELLANOX_CHIPS: &[(u32, Chip)] = &[
    (0x1003, chip("ConnectX-3", Speed::Fdr)),
    (0x1007, chip("ConnectX-3 Pro", Speed::Fdr)),
    (0x1011, chip("Connect-IB", Speed::Fdr)),
    (0x1013, chip("ConnectX-4", Speed::Edr)),
    (0x1017, chip("ConnectX-5", Speed::Edr)),
    (0x1019, chip("ConnectX-5 Ex", Speed::Edr)),
    (0x101b, chip("ConnectX-6", Speed::Hdr)),
    (0x1021, chip("ConnectX-7", Speed::Ndr)),
    (0x1023, chip("ConnectX-8", Speed::Xdr)),
    (0x6340, chip("ConnectX (MT25408 Hermon SDR)", Speed::Sdr)),
    (0x634a, chip("ConnectX (MT25408 Hermon DDR)", Speed::Ddr)),
    (0x6354, chip("ConnectX (MT25408 Hermon QDR)", Speed::Qdr)),
    (
        0x6732,
        chip("ConnectX (MT25408 Hermon DDR, PCIe gen2)", Speed::Ddr),
    ),
    (
        0x673c,
        chip("ConnectX (MT25408 Hermon QDR, PCIe gen2)", Speed::Qdr),
    ),
    (0xbd36, chip("InfiniScale IV", Speed::Qdr)),
    (0xc738, chip("SwitchX", Speed::Fdr)),
    (0xc739, chip("SwitchX", Speed::Fdr)),
    (0xc73a, chip("SwitchX", Speed::Fdr)),
    (0xc73b, chip("SwitchX", Speed::Fdr)),
    (0xcb20, chip("Switch-IB", Speed::Edr)),
    (0xcf08, chip("Switch-IB 2", Speed::Edr)),
    (0xd2f0, chip("Quantum", Speed::Hdr)),
];

const fn chip(name: &'static str, top_speed: Speed) -> Chip {
    Chip { name, top_speed }
}

/// The chip a vendor and device id name, when the table knows it.
pub fn chip_of(vendor_id: u32, device_id: u32) -> Option<Chip> {
    if vendor_id != MELLANOX_VENDOR_ID {
        return None;
    }
    MELLANOX_CHIPS
        .binary_search_by_key(&device_id, |&(id, _)| id)
        .ok()
        .map(|i| MELLANOX_CHIPS[i].1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_id_order_so_the_search_finds_every_entry() {
        for w in MELLANOX_CHIPS.windows(2) {
            assert!(w[0].0 < w[1].0, "{:#x} before {:#x}", w[0].0, w[1].0);
        }
        for &(id, c) in MELLANOX_CHIPS {
            assert_eq!(chip_of(MELLANOX_VENDOR_ID, id), Some(c));
        }
    }

    #[test]
    fn ids_of_other_vendors_and_unknown_ids_name_no_chip() {
        // QLogic (0x1175) HCAs in the real 2016 TrueScale dumps; a Voltaire 4036 (0x8f1).
        assert_eq!(chip_of(0x001175, 0x1013), None);
        assert_eq!(chip_of(0x0008f1, 0x5a5a), None);
        assert_eq!(chip_of(MELLANOX_VENDOR_ID, 0x5a5a), None);
        assert_eq!(
            chip_of(MELLANOX_VENDOR_ID, 0x6732).map(|c| c.top_speed),
            Some(Speed::Ddr)
        );
    }
}
