#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The ISO 8601 dates GLib writes in bookmark files (`2026-11-26T14:04:26.551086Z`; older files without the
/// fraction, with an offset such as `+01:00`), read with integer arithmetic (days from civil): no `DateFormatter`,
/// which FoundationEssentials lacks, and no locale.
enum ISO8601Time {
    /// The date `text` names; nil for anything else (years 1 to 9999 only).
    static func date(_ text: String) -> Date? {
        var bytes = Array(text.utf8)[...]
        guard bytes.count <= 64 else { return nil }
        func number(_ digits: Int) -> Int? {
            guard bytes.count >= digits else { return nil }
            var value = 0
            for byte in bytes.prefix(digits) {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            bytes = bytes.dropFirst(digits)
            return value
        }
        func take(_ character: Character) -> Bool {
            guard let first = bytes.first, first == character.asciiValue else { return false }
            bytes = bytes.dropFirst()
            return true
        }
        guard let year = number(4), take("-"), let month = number(2), take("-"), let day = number(2), take("T") || take(" "),
            let hour = number(2), take(":"), let minute = number(2), take(":"), let second = number(2),
            (1...9999).contains(year), (1...12).contains(month), day >= 1, day <= daysInMonth(month, year: year),
            hour < 24, minute < 60, second < 61
        else { return nil }
        var fraction = 0.0
        if take(".") || take(",") {
            var scale = 0.1
            var digits = 0
            while let byte = bytes.first, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
                fraction += Double(byte - UInt8(ascii: "0")) * scale
                scale /= 10
                digits += 1
                bytes = bytes.dropFirst()
            }
            guard digits > 0 else { return nil }
        }
        var offsetSeconds = 0
        if take("Z") {
        } else if let sign = bytes.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
            bytes = bytes.dropFirst()
            guard let hours = number(2), hours < 24 else { return nil }
            _ = take(":")
            let minutes = bytes.isEmpty ? 0 : number(2)
            guard let minutes, minutes < 60 else { return nil }
            offsetSeconds = (hours * 3600 + minutes * 60) * (sign == UInt8(ascii: "-") ? -1 : 1)
        } else {
            // No zone: GLib reads it as UTC in bookmark files.
        }
        guard bytes.isEmpty else { return nil }
        // Days from civil (Howard Hinnant's method), exact for the proleptic Gregorian calendar.
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    private static func daysInMonth(_ month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
