//! InfiniBand link rates: a width (lanes) times a lane speed, each with an explicit unknown value.
//!
//! The strings come from infiniband-diags (rdma-core), which prints a port's LinkWidthActive and
//! LinkSpeedActive/LinkSpeedExtActive (and Mellanox's FDR10 bit) three ways:
//!
//! - `ibnetdiscover` (infiniband-diags/ibnetdiscover.c, `dump_linkwidth_compat` and
//!   `dump_linkspeed[ext]_compat`): width `1x 2x 4x 8x 12x` or `??`, glued to a speed
//!   `SDR DDR QDR FDR10 FDR EDR HDR NDR XDR` or `???`: `4xHDR`, `4x???`, `??HDR`, `?????`.
//! - `ibnetdiscover -p`: the same two words apart, `4x HDR`.
//! - `iblinkinfo` (libibmad/dump.c `mad_dump_linkwidth`, `mad_dump_linkspeed`,
//!   libibnetdisc `ibnd_dump_agg_linkspeedext`): width `1X 2X 4X 8X 12X` or `undefined (N)`, and the
//!   lane signalling rate: `2.5 Gbps` (SDR), `5.0 Gbps` (DDR), `10.0 Gbps` (QDR),
//!   `10.0 Gbps (FDR10)`, `14.0625 Gbps` (FDR), `25.78125 Gbps` (EDR), `53.125 Gbps` (HDR),
//!   `106.25 Gbps` (NDR), `212.5 Gbps` (XDR), or `undefined (N)`.
//!
//! Every parser here reads case-insensitively and keeps what it cannot name as [`Width::Unknown`] or
//! [`Speed::Unknown`]: an unknown rate is never silently read as no rate, and never as a known one.

use railyard_catalog::Tech;
use std::fmt;

/// Active link width: how many lanes the link runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Width {
    X1,
    X2,
    X4,
    X8,
    X12,
    /// The tool printed `??` or `undefined (N)`.
    Unknown,
}

/// Active lane speed (an InfiniBand generation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Speed {
    Sdr,
    Ddr,
    Qdr,
    /// Mellanox's pre-standard 10.3125 Gb/s 64b/66b lane (ConnectX-3 / SwitchX era).
    Fdr10,
    Fdr,
    Edr,
    Hdr,
    Ndr,
    Xdr,
    /// The tool printed `???` or `undefined (N)`, or a name no infiniband-diags prints.
    Unknown,
}

/// A link rate as the tools print it: width and speed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate {
    pub width: Width,
    pub speed: Speed,
}

impl Width {
    /// Lanes, when known.
    pub fn lanes(self) -> Option<u32> {
        match self {
            Width::X1 => Some(1),
            Width::X2 => Some(2),
            Width::X4 => Some(4),
            Width::X8 => Some(8),
            Width::X12 => Some(12),
            Width::Unknown => None,
        }
    }

    /// The width with this many lanes; other lane counts are not an InfiniBand width.
    pub fn from_lanes(lanes: u32) -> Width {
        match lanes {
            1 => Width::X1,
            2 => Width::X2,
            4 => Width::X4,
            8 => Width::X8,
            12 => Width::X12,
            _ => Width::Unknown,
        }
    }

    /// `4x` as ibnetdiscover writes it, or `N x` with a number: `1`, `2`, `4`, `8`, `12` (any case).
    fn from_count(s: &str) -> Width {
        match s {
            "1" => Width::X1,
            "2" => Width::X2,
            "4" => Width::X4,
            "8" => Width::X8,
            "12" => Width::X12,
            _ => Width::Unknown,
        }
    }
}

impl Speed {
    /// Every known speed, slowest first.
    pub const ALL: [Speed; 9] = [
        Speed::Sdr,
        Speed::Ddr,
        Speed::Qdr,
        Speed::Fdr10,
        Speed::Fdr,
        Speed::Edr,
        Speed::Hdr,
        Speed::Ndr,
        Speed::Xdr,
    ];

    /// The name ibnetdiscover prints (`???` when unknown).
    pub fn name(self) -> &'static str {
        match self {
            Speed::Sdr => "SDR",
            Speed::Ddr => "DDR",
            Speed::Qdr => "QDR",
            Speed::Fdr10 => "FDR10",
            Speed::Fdr => "FDR",
            Speed::Edr => "EDR",
            Speed::Hdr => "HDR",
            Speed::Ndr => "NDR",
            Speed::Xdr => "XDR",
            Speed::Unknown => "???",
        }
    }

    /// A speed name in any case (`hdr`, `Fdr10`); `???` and names no tool prints are unknown.
    pub fn from_name(s: &str) -> Speed {
        Speed::ALL
            .into_iter()
            .find(|sp| sp.name().eq_ignore_ascii_case(s))
            .unwrap_or(Speed::Unknown)
    }

    /// Lane signalling rate in Gb/s, as iblinkinfo prints it, and the line code's efficiency.
    ///
    /// Signalling: IBTA InfiniBand Architecture Specification vol. 2 (SDR 2.5, DDR 5, QDR 10 Gbaud
    /// 8b/10b; FDR 14.0625, EDR 25.78125 Gbaud 64b/66b; HDR 53.125, NDR 106.25, XDR 212.5 Gb/s PAM4 with
    /// RS-FEC), FDR10 10.3125 Gbaud 64b/66b (Mellanox); the same numbers libibmad's `dump.c` prints.
    fn signalling(self) -> Option<(f64, f64)> {
        match self {
            Speed::Sdr => Some((2.5, 0.8)),
            Speed::Ddr => Some((5.0, 0.8)),
            Speed::Qdr => Some((10.0, 0.8)),
            Speed::Fdr10 => Some((10.3125, 64.0 / 66.0)),
            Speed::Fdr => Some((14.0625, 64.0 / 66.0)),
            Speed::Edr => Some((25.781_25, 64.0 / 66.0)),
            // PAM4 lanes carry the nominal rate after 256b/257b coding and RS(544,514) FEC
            // (technologies.toml: HDR 200, NDR 400, XDR 800 Gb/s per 4x port).
            Speed::Hdr => Some((53.125, 50.0 / 53.125)),
            Speed::Ndr => Some((106.25, 100.0 / 106.25)),
            Speed::Xdr => Some((212.5, 200.0 / 212.5)),
            Speed::Unknown => None,
        }
    }

    /// Data rate of one lane after line coding, Gb/s: SDR 2, DDR 4, QDR 8, FDR10 10, FDR 13.64,
    /// EDR 25, HDR 50, NDR 100, XDR 200 (the fabric's `gbps` counts data, as technologies.toml does).
    pub fn lane_gbps(self) -> Option<f64> {
        self.signalling().map(|(baud, eff)| {
            let g = baud * eff;
            // 25.78125 x 64/66 is 25 exactly on paper; keep the round numbers round.
            if (g - g.round()).abs() < 1e-9 {
                g.round()
            } else {
                g
            }
        })
    }

    /// A split mode's name, a speed and its port's data rate in Gb/s (`HDR100`, `NDR200`,
    /// `XDR400`, any case: the switch catalogs' mode names, technologies.toml), as the speed and
    /// the lanes that carry that rate (HDR100: HDR lanes carry 50 Gb/s of data, so 2); `None` for
    /// a plain speed name or a rate no width of the speed's lanes makes.
    pub fn of_mode_name(s: &str) -> Option<(Speed, u32)> {
        let digits = s.find(|c: char| c.is_ascii_digit())?;
        let (name, gbps) = s.split_at(digits);
        let speed = Speed::from_name(name);
        let lane = speed.lane_gbps()?;
        let gbps: u32 = gbps.parse().ok()?;
        let lanes = f64::from(gbps) / lane;
        let whole = lanes.round();
        let width = Width::from_lanes(whole as u32);
        ((lanes - whole).abs() < 1e-9 && width != Width::Unknown).then_some((speed, whole as u32))
    }

    /// The speed whose lane data rate is `lane_gbps` (within 1%), if any.
    pub fn from_lane_gbps(lane_gbps: f64) -> Speed {
        Speed::ALL
            .into_iter()
            .find(|s| {
                s.lane_gbps()
                    .is_some_and(|g| (g - lane_gbps).abs() <= 0.01 * g)
            })
            .unwrap_or(Speed::Unknown)
    }

    /// The technology (fabric.json `tech`) of a link running at this speed.
    pub fn tech(self) -> Option<Tech> {
        Some(match self {
            Speed::Sdr => Tech::IbSdr,
            Speed::Ddr => Tech::IbDdr,
            Speed::Qdr => Tech::IbQdr,
            Speed::Fdr10 => Tech::IbFdr10,
            Speed::Fdr => Tech::IbFdr,
            Speed::Edr => Tech::IbEdr,
            Speed::Hdr => Tech::IbHdr,
            Speed::Ndr => Tech::IbNdr,
            Speed::Xdr => Tech::IbXdr,
            Speed::Unknown => return None,
        })
    }

    /// iblinkinfo's speed field: `10.0 Gbps`, `10.0 Gbps (FDR10)`, `53.125 Gbps`, `undefined (7)`.
    fn from_iblinkinfo(field: &str) -> Speed {
        let mut words = field.split_whitespace();
        let (Some(number), Some(unit)) = (words.next(), words.next()) else {
            return Speed::Unknown;
        };
        if !unit.eq_ignore_ascii_case("gbps") {
            return Speed::Unknown;
        }
        let rest: Vec<&str> = words.collect();
        if !rest.is_empty() {
            // Only QDR's 10.0 carries a suffix, and only `(FDR10)`.
            return if number == "10.0" && rest.join(" ").eq_ignore_ascii_case("(FDR10)") {
                Speed::Fdr10
            } else {
                Speed::Unknown
            };
        }
        match number {
            "2.5" => Speed::Sdr,
            "5.0" => Speed::Ddr,
            "10.0" => Speed::Qdr,
            "14.0625" => Speed::Fdr,
            "25.78125" => Speed::Edr,
            "53.125" => Speed::Hdr,
            "106.25" => Speed::Ndr,
            "212.5" => Speed::Xdr,
            _ => Speed::Unknown,
        }
    }
}

impl Rate {
    /// True when both width and speed are known.
    pub fn is_known(self) -> bool {
        self.width != Width::Unknown && self.speed != Speed::Unknown
    }

    /// Lanes and data rate in Gb/s (`4xHDR` -> 4 lanes, 200 Gb/s), when known.
    pub fn lanes_gbps(self) -> Option<(u32, f64)> {
        let lanes = self.width.lanes()?;
        Some((lanes, self.speed.lane_gbps()? * f64::from(lanes)))
    }

    /// The rate of a fabric link of `gbps` over `lanes`.
    pub fn of_link(gbps: f64, lanes: u32) -> Rate {
        Rate {
            width: Width::from_lanes(lanes),
            speed: Speed::from_lane_gbps(gbps / f64::from(lanes.max(1))),
        }
    }

    /// The rate ibsim 0.10 brings a link up at when railyard's export writes this one: it knows
    /// 1x and 4x (other widths are written as 4x) and speeds SDR to HDR (NDR and XDR are written as
    /// HDR, FDR10 as QDR). infiniband-tools.md; `export::ibsim_topology`.
    pub fn as_ibsim(self) -> Rate {
        Rate {
            width: match self.width {
                Width::X1 => Width::X1,
                _ => Width::X4,
            },
            speed: match self.speed {
                Speed::Ndr | Speed::Xdr => Speed::Hdr,
                Speed::Fdr10 => Speed::Qdr,
                s => s,
            },
        }
    }

    /// An ibnetdiscover rate token (`4xHDR`, `4x???`, `??HDR`, `?????`, `12xfdr10`, any case), or
    /// `None` when `s` does not have that shape. A width or speed of the right shape that no tool
    /// prints (`3xHDR`, `4xZDR`) reads as unknown. A speed written with its port's data rate, as
    /// vendors name split modes (`HDR100`, `NDR200`, [`Speed::of_mode_name`]), is that many lanes
    /// of the speed: `4xHDR100` and `2xHDR100` read as `2xHDR`, which ibnetdiscover prints for an
    /// HDR100 link (a 4x port running two lanes).
    pub fn parse_compact(s: &str) -> Option<Rate> {
        let (width, speed) = if let Some(speed) = s.strip_prefix("??") {
            (Width::Unknown, speed)
        } else {
            let digits = s.find(|c: char| !c.is_ascii_digit())?;
            let rest = &s[digits..];
            let speed = rest.strip_prefix(['x', 'X'])?;
            if digits == 0 {
                return None;
            }
            (Width::from_count(&s[..digits]), speed)
        };
        if speed.is_empty() || !speed.chars().all(|c| c.is_ascii_alphanumeric() || c == '?') {
            return None;
        }
        Some(Rate::of_words(width, speed))
    }

    /// A width as read and a speed word: a mode name's lanes ([`Speed::of_mode_name`]) replace a
    /// width of at least as many (the port's cage) or an unknown one; fewer lanes than the mode
    /// runs on contradict it, and the width reads as unknown.
    fn of_words(width: Width, speed: &str) -> Rate {
        match Speed::of_mode_name(speed) {
            Some((speed, lanes)) => Rate {
                width: match width.lanes() {
                    Some(w) if w < lanes => Width::Unknown,
                    _ => Width::from_lanes(lanes),
                },
                speed,
            },
            None => Rate {
                width,
                speed: Speed::from_name(speed),
            },
        }
    }

    /// `ibnetdiscover -p`'s two words: `4x HDR`, `?? ???` (a mode name as in
    /// [`Rate::parse_compact`]: `4x HDR100` is `2xHDR`).
    pub fn parse_words(width: &str, speed: &str) -> Rate {
        let width = if width == "??" {
            Width::Unknown
        } else {
            width
                .strip_suffix(['x', 'X'])
                .map_or(Width::Unknown, Width::from_count)
        };
        Rate::of_words(width, speed)
    }

    /// iblinkinfo's width and speed fields: `4X`, `53.125 Gbps`; `undefined (N)` is unknown.
    pub fn parse_iblinkinfo(width: &str, speed: &str) -> Rate {
        let width = width
            .trim()
            .strip_suffix(['x', 'X'])
            .map_or(Width::Unknown, Width::from_count);
        Rate {
            width,
            speed: Speed::from_iblinkinfo(speed),
        }
    }

    /// The lower of two rates the two ends of one link report
    /// ([`crate::discovery::RateDisagreement`]): each unknown part first takes the other end's,
    /// then the one of fewer Gb/s of data wins (the first on a tie); where either still has no
    /// data rate, part by part: the fewer lanes and the slower lane (`4x???` against `1x???` is
    /// `1x???`).
    pub fn lower(a: Rate, b: Rate) -> Rate {
        let fill = |x: Rate, y: Rate| Rate {
            width: if x.width == Width::Unknown {
                y.width
            } else {
                x.width
            },
            speed: if x.speed == Speed::Unknown {
                y.speed
            } else {
                x.speed
            },
        };
        let (a, b) = (fill(a, b), fill(b, a));
        match (a.lanes_gbps(), b.lanes_gbps()) {
            (Some((_, x)), Some((_, y))) => {
                if y < x {
                    b
                } else {
                    a
                }
            }
            _ => Rate {
                width: match (a.width.lanes(), b.width.lanes()) {
                    (Some(x), Some(y)) if y < x => b.width,
                    _ => a.width,
                },
                speed: match (a.speed.lane_gbps(), b.speed.lane_gbps()) {
                    (Some(x), Some(y)) if y < x => b.speed,
                    _ => a.speed,
                },
            },
        }
    }

    /// The rate both ends of a link report, or `None` when they name different known values. An
    /// unknown part on one end (ibnetdiscover prints `???` for a switch whose port 0 it could not
    /// read) takes the other end's value.
    pub fn merge(a: Rate, b: Rate) -> Option<Rate> {
        let width = match (a.width, b.width) {
            (Width::Unknown, w) | (w, Width::Unknown) => w,
            (x, y) if x == y => x,
            _ => return None,
        };
        let speed = match (a.speed, b.speed) {
            (Speed::Unknown, s) | (s, Speed::Unknown) => s,
            (x, y) if x == y => x,
            _ => return None,
        };
        Some(Rate { width, speed })
    }
}

impl fmt::Display for Width {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.lanes() {
            Some(n) => write!(f, "{n}x"),
            None => f.write_str("??"),
        }
    }
}

impl fmt::Display for Speed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// As ibnetdiscover prints it: `4xHDR`, `4x???`, `??HDR`.
impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.width, self.speed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(width: Width, speed: Speed) -> Rate {
        Rate { width, speed }
    }

    #[test]
    fn every_ibnetdiscover_rate_reads_in_any_case() {
        for speed in Speed::ALL {
            for (w, width) in [
                ("1x", Width::X1),
                ("2x", Width::X2),
                ("4x", Width::X4),
                ("8x", Width::X8),
                ("12x", Width::X12),
                ("??", Width::Unknown),
            ] {
                let text = format!("{w}{}", speed.name());
                assert_eq!(Rate::parse_compact(&text), Some(r(width, speed)), "{text}");
                let lower = text.to_lowercase();
                assert_eq!(
                    Rate::parse_compact(&lower),
                    Some(r(width, speed)),
                    "{lower}"
                );
                assert_eq!(Rate::parse_compact(&text).unwrap().to_string(), text);
            }
        }
        assert_eq!(
            Rate::parse_compact("4x???"),
            Some(r(Width::X4, Speed::Unknown))
        );
        assert_eq!(
            Rate::parse_compact("?????"),
            Some(r(Width::Unknown, Speed::Unknown))
        );
        assert_eq!(
            Rate::parse_compact("3xHDR"),
            Some(r(Width::Unknown, Speed::Hdr))
        );
        assert_eq!(
            Rate::parse_compact("4xZDR"),
            Some(r(Width::X4, Speed::Unknown))
        );
        // Regression (issue 33): `4xHDR100` read as `4x???`. A split mode's name is its lanes of
        // the speed, printed back as ibnetdiscover prints the link (`2xHDR`), and read again.
        for (text, rate) in [
            ("4xHDR100", r(Width::X2, Speed::Hdr)),
            ("2xHDR100", r(Width::X2, Speed::Hdr)),
            ("??hdr100", r(Width::X2, Speed::Hdr)),
            ("4xNDR200", r(Width::X2, Speed::Ndr)),
            ("4xNDR400", r(Width::X4, Speed::Ndr)),
            ("1xHDR100", r(Width::Unknown, Speed::Hdr)),
            ("4xHDR300", r(Width::X4, Speed::Unknown)),
        ] {
            let read = Rate::parse_compact(text).unwrap();
            assert_eq!(read, rate, "{text}");
            assert_eq!(Rate::parse_compact(&read.to_string()), Some(read), "{text}");
        }
        assert_eq!(
            Rate::parse_compact("4xHDR100").unwrap().to_string(),
            "2xHDR"
        );
        assert_eq!(Rate::parse_words("4x", "HDR100"), r(Width::X2, Speed::Hdr));
        assert_eq!(
            Rate::parse_compact("4xHDR100").unwrap().lanes_gbps(),
            Some((2, 100.0))
        );
        for not_a_rate in ["lid", "x4", "4x", "4", "\"leaf\"", "s=2", "4x-HDR", ""] {
            assert_eq!(Rate::parse_compact(not_a_rate), None, "{not_a_rate}");
        }
    }

    #[test]
    fn the_lower_of_two_disagreeing_ends() {
        let x4 = |s| r(Width::X4, s);
        assert_eq!(
            Rate::lower(x4(Speed::Sdr), r(Width::X1, Speed::Sdr)),
            r(Width::X1, Speed::Sdr)
        );
        assert_eq!(
            Rate::lower(r(Width::X1, Speed::Sdr), x4(Speed::Sdr)),
            r(Width::X1, Speed::Sdr)
        );
        assert_eq!(Rate::lower(x4(Speed::Hdr), x4(Speed::Edr)), x4(Speed::Edr));
        // FDR10 carries 10 Gb/s a lane of data, QDR 8, though both signal at about 10.
        assert_eq!(
            Rate::lower(x4(Speed::Fdr10), x4(Speed::Qdr)),
            x4(Speed::Qdr)
        );
        // An unknown part takes the other end's before the two are compared.
        assert_eq!(
            Rate::lower(x4(Speed::Unknown), r(Width::X1, Speed::Hdr)),
            r(Width::X1, Speed::Hdr)
        );
        assert_eq!(
            Rate::lower(r(Width::X2, Speed::Unknown), x4(Speed::Ndr)),
            r(Width::X2, Speed::Ndr)
        );
        // Unknown on both ends: part by part.
        assert_eq!(
            Rate::lower(x4(Speed::Unknown), r(Width::X1, Speed::Unknown)),
            r(Width::X1, Speed::Unknown)
        );
        assert_eq!(
            Rate::lower(r(Width::Unknown, Speed::Qdr), r(Width::Unknown, Speed::Sdr)),
            r(Width::Unknown, Speed::Sdr)
        );
    }

    #[test]
    fn per_port_words_and_iblinkinfo_fields() {
        assert_eq!(Rate::parse_words("4x", "HDR"), r(Width::X4, Speed::Hdr));
        assert_eq!(
            Rate::parse_words("??", "???"),
            r(Width::Unknown, Speed::Unknown)
        );
        assert_eq!(Rate::parse_words("2x", "ndr"), r(Width::X2, Speed::Ndr));
        let ib = |w, s| Rate::parse_iblinkinfo(w, s);
        assert_eq!(ib("4X", "2.5 Gbps"), r(Width::X4, Speed::Sdr));
        assert_eq!(ib("4X", "5.0 Gbps"), r(Width::X4, Speed::Ddr));
        assert_eq!(ib("4X", "10.0 Gbps"), r(Width::X4, Speed::Qdr));
        assert_eq!(ib("4X", "10.0 Gbps (FDR10)"), r(Width::X4, Speed::Fdr10));
        assert_eq!(ib("1X", "14.0625 Gbps"), r(Width::X1, Speed::Fdr));
        assert_eq!(ib("4X", "25.78125 Gbps"), r(Width::X4, Speed::Edr));
        assert_eq!(ib("4X", "53.125 Gbps"), r(Width::X4, Speed::Hdr));
        assert_eq!(ib("2X", "106.25 Gbps"), r(Width::X2, Speed::Ndr));
        assert_eq!(ib("12X", "212.5 Gbps"), r(Width::X12, Speed::Xdr));
        assert_eq!(
            ib("undefined (3)", "undefined (9)"),
            r(Width::Unknown, Speed::Unknown)
        );
        // A rounded or invented lane rate is not guessed at.
        assert_eq!(ib("4X", "25.78 Gbps"), r(Width::X4, Speed::Unknown));
        assert_eq!(ib("4X", "Extended speed"), r(Width::X4, Speed::Unknown));
    }

    #[test]
    fn lane_data_rates_and_their_inverse() {
        let lanes: Vec<f64> = Speed::ALL.iter().map(|s| s.lane_gbps().unwrap()).collect();
        assert_eq!(&lanes[..4], &[2.0, 4.0, 8.0, 10.0]);
        assert!((lanes[4] - 13.636_363).abs() < 1e-5, "{}", lanes[4]);
        assert_eq!(&lanes[5..], &[25.0, 50.0, 100.0, 200.0]);
        for s in Speed::ALL {
            assert_eq!(Speed::from_lane_gbps(s.lane_gbps().unwrap()), s);
            let rate = r(Width::X4, s);
            let (l, g) = rate.lanes_gbps().unwrap();
            assert_eq!(Rate::of_link(g, l), rate);
        }
        assert_eq!(Speed::from_lane_gbps(30.0), Speed::Unknown);
        assert_eq!(r(Width::X2, Speed::Ndr).lanes_gbps(), Some((2, 200.0)));
        assert_eq!(r(Width::X4, Speed::Unknown).lanes_gbps(), None);
    }

    #[test]
    fn ends_merge_unless_they_contradict() {
        let hdr = r(Width::X4, Speed::Hdr);
        assert_eq!(Rate::merge(hdr, r(Width::X4, Speed::Unknown)), Some(hdr));
        assert_eq!(Rate::merge(r(Width::Unknown, Speed::Hdr), hdr), Some(hdr));
        assert_eq!(Rate::merge(hdr, r(Width::X1, Speed::Hdr)), None);
        assert_eq!(Rate::merge(hdr, r(Width::X4, Speed::Fdr10)), None);
    }
}
