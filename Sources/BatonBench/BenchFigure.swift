import Foundation

/// One figure a benchmark reports: what was measured, the baseline measured in the same run, their ratio and the
/// target. Every `baton bench` subcommand prints these, as a table or (`--json`) as `{"figures": [...]}`.
struct BenchFigure {
    /// What was measured.
    var name: String
    /// The measurement, in `unit`.
    var value: Double
    /// "µs", or whatever `value` is in.
    var unit: String
    /// What the baseline is.
    var baseline: String
    /// The baseline's measurement, in `unit`.
    var baselineValue: Double
    /// The target, as a person reads it ("≤ 5x", "< 2 µs"); "report only" when there is none.
    var target: String
    /// Whether the target is met (true when there is none).
    var met: Bool

    /// `value / baselineValue`.
    var ratio: Double { baselineValue > 0 ? value / baselineValue : 0 }

    /// The target of a figure that is reported for reading, not judged.
    static let reportOnly = "report only"

    /// This figure judged by its ``ratio`` where more is better (throughput): met at `minimum` times the baseline or
    /// more.
    func judged(atLeast minimum: Double) -> BenchFigure {
        var judged = self
        judged.target = "≥ \(minimum)x"
        judged.met = ratio >= minimum
        return judged
    }

    /// This figure judged by its ``ratio`` where less is better (seconds, CPU per byte, memory): met at `maximum`
    /// times the baseline or less.
    func judged(atMost maximum: Double) -> BenchFigure {
        var judged = self
        judged.target = "≤ \(maximum)x"
        judged.met = ratio <= maximum
        return judged
    }

    /// A figure in microseconds from `seconds` and `baselineSeconds`.
    static func microseconds(
        _ name: String,
        _ seconds: Double,
        baseline: String,
        _ baselineSeconds: Double,
        target: String = reportOnly,
        met: Bool = true
    ) -> BenchFigure {
        BenchFigure(name: name, value: seconds * 1e6, unit: "µs", baseline: baseline, baselineValue: baselineSeconds * 1e6, target: target, met: met)
    }

    /// A throughput figure in MB/s (10^6 bytes a second) from `bytes` moved in `seconds`, against `baselineSeconds`
    /// for as many bytes; the ratio is then how fast Baton is as a share of the baseline.
    static func throughput(
        _ name: String,
        bytes: Int,
        seconds: Double,
        baseline: String,
        baselineSeconds: Double,
        target: String = reportOnly,
        met: Bool = true
    ) -> BenchFigure {
        func megabytesPerSecond(_ seconds: Double) -> Double { seconds > 0 ? Double(bytes) / seconds / 1e6 : 0 }
        return BenchFigure(
            name: name, value: megabytesPerSecond(seconds), unit: "MB/s", baseline: baseline,
            baselineValue: megabytesPerSecond(baselineSeconds), target: target, met: met
        )
    }

    /// A figure in KiB from byte counts.
    static func kibibytes(
        _ name: String,
        _ bytes: Int,
        baseline: String,
        _ baselineBytes: Int,
        target: String = reportOnly,
        met: Bool = true
    ) -> BenchFigure {
        BenchFigure(
            name: name, value: Double(bytes) / 1024, unit: "KiB", baseline: baseline, baselineValue: Double(baselineBytes) / 1024,
            target: target, met: met
        )
    }

    /// `{"figures": [...]}`, one object per figure, keys in a fixed order.
    static func json(_ figures: [BenchFigure]) -> String {
        let objects = figures.map { figure in
            "    {\"name\": \(quoted(figure.name)), \"value\": \(number(figure.value)), \"unit\": \(quoted(figure.unit)), "
                + "\"baseline\": \(quoted(figure.baseline)), \"baselineValue\": \(number(figure.baselineValue)), "
                + "\"ratio\": \(number(figure.ratio)), \"target\": \(quoted(figure.target)), \"met\": \(figure.met)}"
        }
        return "{\"figures\": [\n" + objects.joined(separator: ",\n") + "\n]}"
    }

    /// The figures as a table: value, baseline, ratio, target.
    static func table(_ figures: [BenchFigure]) -> String {
        let width = min(max(figures.map(\.name.count).max() ?? 0, 20), 64) + 2
        var lines = ["measure".padding(width) + "value".padding(12) + "baseline".padding(12) + "ratio".padding(9) + "target"]
        for figure in figures {
            let verdict = figure.target == reportOnly ? "" : figure.met ? " met" : " MISSED"
            lines.append(
                figure.name.padding(width) + formatted(figure.value, figure.unit).padding(12)
                    + formatted(figure.baselineValue, figure.unit).padding(12) + ratioText(figure.ratio).padding(9) + figure.target + verdict
            )
        }
        var seen: Set<String> = []
        let baselines = figures.map(\.baseline).filter { seen.insert($0).inserted }
        lines.append("\nbaselines (same run): " + baselines.joined(separator: "; "))
        return lines.joined(separator: "\n")
    }

    static func formatted(_ value: Double, _ unit: String) -> String {
        unit == "µs" && value >= 10_000 ? String(format: "%.1f ms", value / 1000) : String(format: "%.1f %@", value, unit)
    }

    static func ratioText(_ ratio: Double) -> String {
        ratio < 0.1 ? String(format: "%.3fx", ratio) : String(format: "%.2fx", ratio)
    }

    /// A JSON number (finite; three decimals are enough for microseconds and ratios alike, six below 1).
    static func number(_ value: Double) -> String {
        guard value.isFinite else { return "0" }
        let scale = abs(value) < 1 ? 1e6 : 1e3
        return "\((value * scale).rounded() / scale)"
    }

    /// A JSON string.
    static func quoted(_ text: String) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        return (try? encoder.encode(text)).map { String(decoding: $0, as: UTF8.self) } ?? "\"\""
    }
}

/// What a bench that runs agents found: the figures, and notes on what it could not measure.
struct BenchReport {
    var figures: [BenchFigure] = []
    var notes: [String] = []

    /// Prints the notes (to standard error under `--json`, so standard output stays JSON) and the figures.
    func print(json: Bool) {
        for note in notes {
            if json {
                FileHandle.standardError.write(Data("note: \(note)\n".utf8))
            } else {
                Swift.print("note: \(note)")
            }
        }
        Swift.print(json ? BenchFigure.json(figures) : BenchFigure.table(figures))
    }
}
