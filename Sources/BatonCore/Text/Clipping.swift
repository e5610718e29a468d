// Cutting text that came from elsewhere (a peer, a file another program may have written) before it goes into a log
// line or onto a terminal (issue 25 item 6): a 400 KB path in one log line, or a 40 MB title printed whole, is of no
// use to anyone and costs memory. What is left out is counted, so the cut is never silent.

/// How cut text is marked.
package enum Clipping {
    /// The most UTF-8 bytes of a peer's or a file's text a log line carries (a path, a title, a URL, an error message).
    package static let logBytes = 256

    /// "… (1,234 more bytes)": what ends cut text.
    package static func note(_ count: Int, more unit: String) -> String {
        "… (\(grouped(count)) more \(unit))"
    }

    /// `count` with a comma between each group of three digits: 39,999,000.
    package static func grouped(_ count: Int) -> String {
        let digits = String(count.magnitude)
        var grouped = ""
        for (offset, digit) in digits.enumerated() {
            if offset > 0 && (digits.count - offset) % 3 == 0 { grouped.append(",") }
            grouped.append(digit)
        }
        return count < 0 ? "-" + grouped : grouped
    }
}

extension StringProtocol {
    /// The text when it is at most `limit` UTF-8 bytes; otherwise its first whole characters within `limit` bytes and
    /// "… (N more bytes)". Costs O(`limit`) beyond counting the bytes, however long the text.
    package func clipped(toBytes limit: Int = Clipping.logBytes) -> String {
        let total = utf8.count
        guard total > limit else { return String(self) }
        let kept = prefix(utf8Bytes: limit)
        return kept + Clipping.note(total - kept.utf8.count, more: "bytes")
    }

    /// Its first whole characters within `limit` UTF-8 bytes (all of it when it fits): a cut that never splits a
    /// character. Costs O(`limit`), however long the text.
    package func prefix(utf8Bytes limit: Int) -> String {
        var end = startIndex
        var used = 0
        while end < endIndex {
            let next = index(after: end)
            let size = utf8.distance(from: end, to: next)
            if used + size > limit { break }
            used += size
            end = next
        }
        return String(self[..<end])
    }
}
