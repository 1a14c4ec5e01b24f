//! SVG to PNG without a browser: resvg with DejaVu Sans compiled in, so text never goes missing and
//! the picture does not depend on the fonts of the machine (license: fonts/LICENSE-DejaVu.txt).

use std::fmt;
use std::sync::Arc;

/// DejaVu Sans 2.37 (Bitstream Vera license, see fonts/LICENSE-DejaVu.txt).
const FONT: &[u8] = include_bytes!("../fonts/DejaVuSans.ttf");

/// Why an SVG could not be rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PngError(pub String);

impl fmt::Display for PngError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rendering PNG: {}", self.0)
    }
}

impl std::error::Error for PngError {}

/// Renders an SVG document to PNG at `scale` (2 for slides), on a white background.
pub fn render(svg: &str, scale: f32) -> Result<Vec<u8>, PngError> {
    let mut db = resvg::usvg::fontdb::Database::new();
    db.load_font_data(FONT.to_vec());
    db.set_sans_serif_family("DejaVu Sans");
    let opt = resvg::usvg::Options {
        font_family: "DejaVu Sans".to_string(),
        fontdb: Arc::new(db),
        ..resvg::usvg::Options::default()
    };
    let tree = resvg::usvg::Tree::from_str(svg, &opt).map_err(|e| PngError(e.to_string()))?;
    let size = tree
        .size()
        .to_int_size()
        .scale_by(scale)
        .ok_or_else(|| PngError("the drawing has no size".to_string()))?;
    // Bound the bitmap (a 100,000-GPU drawing stays a few thousand pixels wide).
    if u64::from(size.width()) * u64::from(size.height()) > 200_000_000 {
        return Err(PngError(format!(
            "{} x {} pixels is too large",
            size.width(),
            size.height()
        )));
    }
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| PngError("cannot allocate the bitmap".to_string()))?;
    pixmap.fill(resvg::tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::from_scale(scale, scale),
        &mut pixmap.as_mut(),
    );
    pixmap.encode_png().map_err(|e| PngError(e.to_string()))
}
