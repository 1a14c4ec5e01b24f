//! railyard's reports: what a design looks like, for people who will never run the CLI.
//!
//! - [`drawing`]: the topology drawing (tiers as rows, rails in colours, large fabrics in groups).
//! - [`chart`]: the cost breakdown and bus-bandwidth plots.
//! - [`html`]: the self-contained `report.html` (inline SVG, CSS and one small script).
//! - [`compare`]: the decision report: designs side by side in one self-contained page.
//! - [`reproduce`]: the decision report's command line and run keys, to run it again.
//! - [`png`]: any of those SVGs as PNG, rendered with resvg and a bundled DejaVu Sans, no browser.
//!
//! Architecture invariant: this crate does no I/O and reads no clock: it returns strings and bytes, and
//! the same fabric, plan and curves give byte-identical output.

pub mod chart;
pub mod compare;
pub mod drawing;
pub mod html;
pub mod png;
pub mod reproduce;
pub mod svg;

pub use chart::Curve;
use railyard_fabric::Fabric;
use railyard_plan::Plan;

/// What the report of one design shows: its fabric, plan, description and predicted busbw.
pub struct DesignReport<'a> {
    pub fabric: &'a Fabric,
    pub plan: &'a Plan,
    /// The spec's description, shown under the title.
    pub description: String,
    /// Predicted busbw per collective from the simulator (`railyard_study::busbw::simulate`); with
    /// no curves and no notes the plot section is left out.
    pub busbw: railyard_study::busbw::Busbw,
}

/// A drawing or chart: file stem (`topology` -> topology.png), title, caption and SVG text.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub name: &'static str,
    pub title: String,
    pub caption: String,
    pub svg: String,
}

/// Every figure of the report, in page order.
pub fn figures(r: &DesignReport) -> Vec<Figure> {
    let mut out = vec![Figure {
        name: "topology",
        title: "Topology".to_string(),
        caption: "Tiers as rows, servers at the bottom; server-leaf cables in their rail's colour; link counts and speeds per tier on the left and per line where few. Large fabrics are drawn in groups.".to_string(),
        svg: drawing::topology_svg(
            r.fabric,
            r.plan
                .summary
                .racks
                .as_ref()
                .and_then(|x| x.nvlink_domain.as_ref()),
        ),
    }];
    out.push(Figure {
        name: "cost",
        title: "Cost breakdown".to_string(),
        caption: "Network hardware only: switches, NICs, cables, transceivers and fibre."
            .to_string(),
        svg: chart::cost_svg(r.plan),
    });
    if !r.busbw.curves.is_empty() {
        let mut caption = "Simulated on this fabric (railyard sim collective: NCCL ring / double binary tree / all-to-all straight through the spines, or relayed over NVLink with store-and-forward on a rail-only fabric; algorithm and protocol per size as NCCL's tuner picks, D-mod-K routing), as nccl-tests reports busbw.".to_string();
        for note in &r.busbw.notes {
            caption.push(' ');
            caption.push_str(note);
            caption.push('.');
        }
        out.push(Figure {
            name: "busbw",
            title: "Predicted bus bandwidth".to_string(),
            caption,
            svg: chart::busbw_svg("Predicted busbw against message size", &r.busbw.curves),
        });
    }
    out
}

/// The self-contained report.html.
pub fn report_html(r: &DesignReport) -> String {
    html::page(r, &figures(r))
}

#[cfg(test)]
mod tests;
