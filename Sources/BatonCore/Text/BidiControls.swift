// Unicode's directional formatting characters (UAX #9): in a title from another device they can reorder what a
// person reads (U+202E makes "gnp.exe" of "exe.png"), so text from elsewhere has them removed before it is shown.

extension StringProtocol {
    /// Whether `scalar` is one of the bidirectional controls: the embeddings and overrides U+202A-U+202E, the
    /// isolates U+2066-U+2069, the marks U+200E, U+200F and U+061C (issue 25 item 7).
    package static func isBidiControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F, 0x061C: true
        default: false
        }
    }

    /// The text without bidirectional controls, so it reads in the order it is stored; the same text when it has
    /// none. Removed rather than replaced: marks are invisible, and a replacement glyph would only add noise.
    package func neutralizingBidiControls() -> String {
        guard unicodeScalars.contains(where: Self.isBidiControl) else { return String(self) }
        var scalars = String.UnicodeScalarView()
        for scalar in unicodeScalars where !Self.isBidiControl(scalar) { scalars.append(scalar) }
        return String(scalars)
    }
}
