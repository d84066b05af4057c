//! What a test can say about a PNG without looking at it: its size, how many colours it uses
//! and how much of it is not white (a report figure that drew nothing is all white).

/// (width, height, distinct colours, share of non-white pixels) of a PNG file's bytes.
pub fn png_facts(bytes: &[u8]) -> (u32, u32, usize, f64) {
    let mut reader = png::Decoder::new(bytes).read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("a PNG frame");
    let px: Vec<&[u8]> = buf[..info.buffer_size()]
        .chunks(info.color_type.samples())
        .map(|p| &p[..3.min(p.len())])
        .collect();
    let colours: std::collections::HashSet<&[u8]> = px.iter().copied().collect();
    let ink = px.iter().filter(|p| **p != [255u8, 255, 255]).count();
    (
        info.width,
        info.height,
        colours.len(),
        ink as f64 / px.len() as f64,
    )
}
