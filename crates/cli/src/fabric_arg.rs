//! The fabric a command evaluates: a preset or `--spec` built with the design flags, or `--fabric
//! FILE` read (fabric.json, or discovery output) and furnished with servers as a design
//! (`study::discovered`). Every command loads its fabric here, so no command's module depends on
//! another's for it.

use crate::design::{self, DesignArgs};
use crate::error::CliError;
use crate::io::{read_input, Input};
use railyard_study::{Catalog, Fabric};
use std::path::Path;

/// The fabric named by a preset, a spec, or `--fabric fabric.json`.
pub fn load_fabric(
    preset: Option<&str>,
    design: &DesignArgs,
    fabric: Option<&Path>,
) -> Result<Fabric, CliError> {
    match fabric {
        Some(path) => {
            if preset.is_some() || design.spec.is_some() {
                return Err(CliError::input(
                    "give either --fabric or a preset / --spec, not both",
                ));
            }
            read_fabric(path)
        }
        None => {
            let (spec, catalog) = design.load(preset)?;
            design::build(&spec, &catalog)
        }
    }
}

/// The design a command evaluates: `--fabric FILE` (a fabric.json, or ibnetdiscover / iblinkinfo
/// output imported at its rates) with its servers furnished from the preset or `--spec` given, or
/// from `--gpu`, `--gpus-per-server` and `--nics-per-server` (`study::discovered`); without
/// `--fabric`, the preset or spec built with the design flags.
pub fn design_fabric(
    preset: Option<&str>,
    design: &DesignArgs,
    fabric: Option<&Path>,
) -> Result<(Fabric, Catalog), CliError> {
    let Some(path) = fabric else {
        let (spec, catalog) = design.load(preset)?;
        let f = design::build(&spec, &catalog)?;
        return Ok((f, catalog));
    };
    let catalog = design.catalog()?;
    let f = read_fabric(path)?;
    if railyard_study::discovered::has_gpus(&f) {
        return Ok((f, catalog));
    }
    let base = if preset.is_some() || design.spec.is_some() {
        Some(design.raw(preset)?)
    } else {
        None
    };
    let f = railyard_study::discovered::as_design(f, base, &design.overrides(), &catalog)
        .map_err(|e| CliError::input(format!("{}: {e}", path.display())))?;
    Ok((f, catalog))
}

/// A `--fabric FILE` as it is: fabric.json, or discovery output imported at its rates.
pub fn read_fabric(path: &Path) -> Result<Fabric, CliError> {
    let text = read_input(path, Input::FABRIC)?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("discovered");
    let (fabric, notes) = railyard_study::discovered::load(&text, name)
        .map_err(|e| CliError::input(format!("{}: {e}", path.display())))?;
    for note in notes {
        crate::io::say!("railyard: note: {}: {note}", path.display());
    }
    Ok(fabric)
}
