#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A UTC date and time of the proleptic Gregorian calendar, to the second: what a property-list `<date>` holds.
///
/// Converted with plain integer arithmetic (the days-from-civil method) rather than `Calendar` or
/// `DateFormatter`: it is exact for every year from 1 to 9999, needs no locale, and is fast.
struct CivilTime: Equatable {
    var year: Int
    var month: Int
    var day: Int
    var hour: Int
    var minute: Int
    var second: Int

    /// Seconds from 1970-01-01 to 2001-01-01, the reference date of property lists.
    static let referenceDateOffset: Int64 = 978_307_200

    /// The time `date` falls in, rounded down to the second; `nil` outside years 1...9999.
    init?(_ date: Date) {
        let interval = date.timeIntervalSince1970
        guard interval.isFinite, abs(interval) < 1e12 else { return nil }
        let total = Int64(interval.rounded(.down))
        let days = Int(total.floorDiv(86_400))
        let secondsOfDay = Int(total - Int64(days) * 86_400)
        // Days from civil, inverted (eras of 400 years starting 0000-03-01).
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        hour = secondsOfDay / 3600
        minute = secondsOfDay / 60 % 60
        second = secondsOfDay % 60
        guard (1...9999).contains(year) else { return nil }
    }

    init(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) {
        self.year = year
        self.month = month
        self.day = day
        self.hour = hour
        self.minute = minute
        self.second = second
    }

    static func daysInMonth(_ month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Whether every field is in its range (the day checked against its month).
    var isValid: Bool {
        (1...9999).contains(year) && (1...12).contains(month) && (1...Self.daysInMonth(month, year: year)).contains(day)
            && (0...23).contains(hour) && (0...59).contains(minute) && (0...59).contains(second)
    }

    /// Seconds since 1970-01-01T00:00:00Z.
    var secondsSince1970: Int64 {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = Int64(era * 146_097 + dayOfEra - 719_468)
        return days * 86_400 + Int64(hour * 3600 + minute * 60 + second)
    }

    var date: Date {
        Date(timeIntervalSince1970: TimeInterval(secondsSince1970))
    }

    /// `YYYY-MM-DDTHH:MM:SSZ`, the form Apple's and Python's writers use.
    var iso8601: String {
        func pad(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(hour, 2)):\(pad(minute, 2)):\(pad(second, 2))Z"
    }

    /// Parses the ISO 8601 forms property lists use: `YYYY[-MM[-DD[THH[:MM[:SS[.fff]]]]]]Z`.
    /// The trailing `Z` is required (plist dates are UTC); fractional seconds are accepted and returned
    /// separately because they are not part of the civil time.
    static func parse(_ text: Substring) -> (time: CivilTime, fraction: Double)? {
        var rest = text.utf8[...]
        func number(_ digits: Int) -> Int? {
            guard rest.count >= digits else { return nil }
            var value = 0
            for byte in rest.prefix(digits) {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            rest = rest.dropFirst(digits)
            return value
        }
        func take(_ byte: UInt8) -> Bool {
            guard rest.first == byte else { return false }
            rest = rest.dropFirst()
            return true
        }
        guard let year = number(4) else { return nil }
        var time = CivilTime(year: year, month: 1, day: 1, hour: 0, minute: 0, second: 0)
        var fraction = 0.0
        if take(UInt8(ascii: "-")) {
            guard let month = number(2) else { return nil }
            time.month = month
            if take(UInt8(ascii: "-")) {
                guard let day = number(2) else { return nil }
                time.day = day
                if take(UInt8(ascii: "T")) {
                    guard let hour = number(2) else { return nil }
                    time.hour = hour
                    if take(UInt8(ascii: ":")) {
                        guard let minute = number(2) else { return nil }
                        time.minute = minute
                        if take(UInt8(ascii: ":")) {
                            guard let second = number(2) else { return nil }
                            time.second = second
                            if take(UInt8(ascii: ".")) {
                                let digits = rest.prefix(while: { (0x30...0x39).contains($0) })
                                guard !digits.isEmpty, digits.count <= 9,
                                    let value = Double("0." + String(decoding: digits, as: UTF8.self))
                                else { return nil }
                                fraction = value
                                rest = rest.dropFirst(digits.count)
                            }
                        }
                    }
                }
            }
        }
        guard take(UInt8(ascii: "Z")), rest.isEmpty, time.isValid else { return nil }
        return (time, fraction)
    }
}

extension Int64 {
    /// Division rounding toward negative infinity.
    fileprivate func floorDiv(_ divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
